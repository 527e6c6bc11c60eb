/* spamkit.speedups: the hot loops of spamkit.htmltext, the default word tokenizer and the online
 * logistic regression in C.
 *
 * 1. html_to_text
 *
 * html_to_text() here is a line-for-line translation of the pure-Python scanner
 * spamkit.htmltext._html_to_text_python (which stays, and is used when this extension was
 * not built): the same alternatives in the same order (a comment, a declaration or
 * processing instruction, "</>", a start or end tag whose attribute values may be quoted,
 * else "<" is text), the same 4,096-piece cap on a tag's attribute run, the same raw-text
 * handling of <script> and <style>, the same flushing and character-reference decoding of
 * visible text. What needs Python's own rules stays in Python and is called from here:
 * str.lower() of a non-ASCII tag name, the attribute parser (_tag_attrs), the reference
 * decoder it is given (html_unescape, 12., below) and the case-insensitive search for a
 * raw-text end tag. White space is Python's
 * (Py_UNICODE_ISSPACE, which is what the regular expressions' \s and str.rstrip() use).
 *
 * tests/test_htmltext.py runs both implementations on every HTML part of the shared
 * corpora and on generated and hostile markup and requires identical results.
 *
 * Work is one forward scan (plus one scan per comment, declaration or quoted value to find
 * its end, each of which consumes what it scans): linear in the input, as the Python one.
 *
 * 3. logistic_steps(): the online logistic regression's sparse gradient steps, one per row
 * (tests/test_logistic.py: against the Python loop and scikit-learn's SGDClassifier).
 *
 * 2. words(): the words spamkit.text.tokenize.WORD_PATTERN_MIN2 finds, without the regular
 * expression engine (tests/test_text.py compares them on generated text and on every
 * message of the shared corpora).
 *
 * 4. hash_columns(): the column of each token under the hashing trick as scikit-learn's
 * FeatureHasher(alternate_sign=False) computes it -- MurmurHash3_x86_32 (Austin Appleby's
 * public-domain algorithm, smhasher/src/MurmurHash3.cpp) of the token's UTF-8 bytes with seed
 * 0, read as a signed 32-bit integer, |h| mod n (and for h = -2^31, (2^31 - 1 - (n - 1)) mod
 * n, as sklearn/feature_extraction/_hashing_fast.pyx defines it). FeatureHasher spends most
 * of its time per call and per token in Python; this is one C loop over a token list.
 * tests/test_features.py compares the two on corpus tokens and generated strings.
 *
 * 5. known_columns(): a fixed vocabulary's columns of a token list (one C loop of dict lookups).
 *
 * 6. tag_attrs(), digit_shapes(), header_words(), url_parts(), received_ips(): a start tag's
 * attributes as spamkit.htmltext._tag_attrs reads them (called by html_to_text for each start
 * tag that may hold a URL or alt text), and the mail analyzer's digit shapes, field words, URL
 * pieces and relay addresses, each against its Python definition (a regular expression) in
 * tests/test_htmltext.py and tests/test_text.py.
 *
 * 11. grow_columns(): the columns of the terms a worker numbered first, looked up (or added) in
 * the driver's growing vocabulary, against the Python definition in tests/test_features.py.
 *
 * 12. html_unescape(): html.unescape with the standard library's own tables, and
 * base64_chars(): how many bytes of a slice are in base64's alphabet (spamkit.message's
 * attachment sizes), each against its Python definition (tests/test_htmltext.py,
 * tests/test_mime.py).
 *
 * 10. term_keys(): BLAKE2b-64 of each term of a vocabulary (RFC 7693), the keys of a filter file's
 * hash index, against hashlib in tests/test_persist.py.
 *
 * 9. Numbering: a worker's numbering of the chunks of training documents it is given, the
 * Python loop of spamkit.features.number_terms with a table of its own in place of the dict
 * (tests/test_engines.py compares the two), one probe of that table per token.
 *
 * 8. sort_terms(): the order in which sorted() puts a vocabulary's terms, comparing their UTF-8
 * bytes (the order of code points, which is how Python compares str) with memcmp instead of
 * calling a key function and comparing str objects (tests/test_features.py, against sorted()).
 *
 * 7. fisher_sums() and nb_sums(): per CSR row, Robinson/Fisher's clue count and log sums and
 * multinomial NB's log-odds, the arithmetic of spamkit.models.robinson.RobinsonFisher._clues
 * and FisherNBStack._nb_log_odds in the same order (tests/test_robinson.py, test_stack.py).
 * setup.py builds this file with -ffp-contract=off: no fused multiply-add, so each sum rounds
 * step by step as NumPy's does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <errno.h>
#include <unistd.h>
#if !defined(_WIN32)
#include <pthread.h>
#include <sched.h>
#define HAVE_HELPER_THREADS 1
#endif

/* ------------------------------------------------------------------ a loop in parts, on helper threads
 *
 * The long loops over a whole training matrix or vocabulary (sort_terms, renumber_rows,
 * fisher_sums, nb_sums) run at the end of `spamkit train`, after the worker processes are done,
 * when this process is the only one working. Their iterations are independent (a row, a range of
 * terms), so they are cut into parts that run at once: part 0 on the calling thread, the others
 * on helper threads made for the call and joined before it returns (no thread outlives it, so a
 * later fork is safe: spamkit.processes). A part touches plain memory only, never a Python
 * object or the C API; the caller holds whatever keeps that memory alive. Each part computes
 * exactly what the single loop computes for its iterations, so the results are the same bits
 * whatever the number of parts. The number of parts is the CPUs this process may run on
 * (sched_getaffinity: a run pinned to one CPU makes no helper), at most MAX_PARTS, and only
 * as many as leave each part at least the caller's minimum of work (a thread costs ~50 us). */
#define MAX_PARTS 4
/* the non-zeros a part of a row loop is given at least (fisher_sums, nb_sums, renumber_rows) */
#define ROWS_PART_NNZ 100000

typedef void (*part_fn)(void *arg, int part, int parts);

typedef struct {
    part_fn fn;
    void *arg;
    int part, parts;
} PartJob;

#ifdef HAVE_HELPER_THREADS
static void *part_main(void *p)
{
    PartJob *job = p;
    job->fn(job->arg, job->part, job->parts);
    return NULL;
}
#endif

/* The CPUs this process may run on (1 where that cannot be told). */
static int usable_cpus(void)
{
#if defined(__linux__) && defined(CPU_COUNT)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
#endif
#if defined(_SC_NPROCESSORS_ONLN)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n < 64 ? n : 64) : 1;
#else
    return 1;
#endif
}

/* How many parts `work` units make: one per usable CPU, at most MAX_PARTS, each >= `least`. */
static int parts_for(Py_ssize_t work, Py_ssize_t least)
{
#ifdef HAVE_HELPER_THREADS
    if (least < 1)
        least = 1;
    Py_ssize_t by_work = work / least;
    int parts = usable_cpus();
    if (parts > MAX_PARTS)
        parts = MAX_PARTS;
    if (by_work < parts)
        parts = by_work < 1 ? 1 : (int)by_work;
    return parts;
#else
    (void)work; (void)least;
    return 1;
#endif
}

/* fn(arg, k, parts) for every k < parts: k = 0 here, the others on helper threads, all joined
   before this returns (a part whose thread cannot be made runs here, after part 0). */
static void run_parts(part_fn fn, void *arg, int parts)
{
#ifdef HAVE_HELPER_THREADS
    pthread_t threads[MAX_PARTS];
    PartJob jobs[MAX_PARTS];
    int started[MAX_PARTS] = {0};
    if (parts > MAX_PARTS)
        parts = MAX_PARTS;
    for (int k = 1; k < parts; k++) {
        jobs[k].fn = fn;
        jobs[k].arg = arg;
        jobs[k].part = k;
        jobs[k].parts = parts;
        started[k] = pthread_create(&threads[k], NULL, part_main, &jobs[k]) == 0;
    }
    fn(arg, 0, parts);
    for (int k = 1; k < parts; k++) {
        if (started[k])
            pthread_join(threads[k], NULL);
        else
            fn(arg, k, parts);
    }
#else
    for (int k = 0; k < parts; k++)
        fn(arg, k, parts);
#endif
}

/* loop_parts(work, least) -> int: parts_for, for tests (how many parts a loop is cut into here) */
static PyObject *loop_parts(PyObject *self, PyObject *args)
{
    Py_ssize_t work, least;
    if (!PyArg_ParseTuple(args, "nn:loop_parts", &work, &least))
        return NULL;
    return PyLong_FromLong(parts_for(work, least));
}

/* The rows [*lo, *hi) of part `part` of `parts` of a CSR matrix: cut where the non-zeros before
   the row reach part/parts of all of them (indptr of int64, or int32 when `narrow`). */
static void row_part(const void *indptr, int narrow, Py_ssize_t n_rows, int part, int parts,
                     Py_ssize_t *lo, Py_ssize_t *hi)
{
    const long long *p64 = indptr;
    const int32_t *p32 = indptr;
#define PTR(i) (narrow ? (long long)p32[i] : p64[i])
    long long nnz = n_rows > 0 ? PTR(n_rows) - PTR(0) : 0;
    Py_ssize_t cut[2];
    for (int e = 0; e < 2; e++) {
        int k = part + e;
        if (k <= 0) { cut[e] = 0; continue; }
        if (k >= parts) { cut[e] = n_rows; continue; }
        long long target = PTR(0) + nnz * k / parts;
        Py_ssize_t a = 0, b = n_rows;               /* the first row whose start reaches target */
        while (a < b) {
            Py_ssize_t m = a + (b - a) / 2;
            if (PTR(m) < target)
                a = m + 1;
            else
                b = m;
        }
        cut[e] = a;
    }
#undef PTR
    *lo = cut[0];
    *hi = cut[1];
}

#define MAX_PIECES 4096

typedef struct {
    Py_ssize_t *start, *end;
    Py_ssize_t len, cap;
} Ranges;

static int ranges_add(Ranges *r, Py_ssize_t a, Py_ssize_t b)
{
    if (r->len && r->end[r->len - 1] == a) {        /* adjacent: extend the last range */
        r->end[r->len - 1] = b;
        return 0;
    }
    if (r->len == r->cap) {
        Py_ssize_t cap = r->cap ? 2 * r->cap : 16;
        Py_ssize_t *s = PyMem_Realloc(r->start, cap * sizeof(Py_ssize_t));
        if (!s) { PyErr_NoMemory(); return -1; }
        r->start = s;
        Py_ssize_t *e = PyMem_Realloc(r->end, cap * sizeof(Py_ssize_t));
        if (!e) { PyErr_NoMemory(); return -1; }
        r->end = e;
        r->cap = cap;
    }
    r->start[r->len] = a;
    r->end[r->len] = b;
    r->len++;
    return 0;
}

/* 12. html_unescape(): html.unescape in C. The standard library's definition (Lib/html/__init__.py,
 * CPython 3.11-3.13): every match of &(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)
 * replaced by _replace_charref -- a numeric reference by _invalid_charrefs[n], else U+FFFD for a
 * surrogate or beyond U+10FFFF, else "" for one of _invalid_codepoints, else chr(n); a named
 * one by html5[name], else by the longest prefix of at least two characters that html5 holds
 * (its value, then the rest), else left as it is. The tables are the standard library's own,
 * handed over once by set_html_entities (spamkit.htmltext); tests/test_htmltext.py compares
 * the two on generated text and on every HTML part of the shared corpora. The regular
 * expression and a Python call per reference were 4-5% of a worker's parsing. */
static PyObject *entity_names;          /* html.entities.html5 */
static PyObject *invalid_charrefs;      /* html._invalid_charrefs: int -> str */
static PyObject *invalid_codepoints;    /* html._invalid_codepoints: a set of int */
static Py_ssize_t longest_legacy_name;  /* the longest name in html5 without its ";" */

typedef struct {
    Py_UCS4 *buf;
    Py_ssize_t len, cap;
} Chars;

static int chars_reserve(Chars *c, Py_ssize_t more)
{
    if (c->len + more <= c->cap)
        return 0;
    Py_ssize_t cap = c->cap ? c->cap : 64;
    while (cap < c->len + more)
        cap *= 2;
    Py_UCS4 *buf = PyMem_Realloc(c->buf, (size_t)cap * sizeof(Py_UCS4));
    if (buf == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    c->buf = buf;
    c->cap = cap;
    return 0;
}

static int chars_put_range(Chars *c, int kind, const void *data, Py_ssize_t a, Py_ssize_t b)
{
    if (chars_reserve(c, b - a) < 0)
        return -1;
    for (Py_ssize_t i = a; i < b; i++)
        c->buf[c->len++] = PyUnicode_READ(kind, data, i);
    return 0;
}

static int chars_put_str(Chars *c, PyObject *s)
{
    return chars_put_range(c, PyUnicode_KIND(s), PyUnicode_DATA(s), 0, PyUnicode_GET_LENGTH(s));
}

static int is_ascii_digit(Py_UCS4 c) { return c >= '0' && c <= '9'; }

static int hex_value(Py_UCS4 c)
{
    if (c >= '0' && c <= '9') return (int)(c - '0');
    if (c >= 'a' && c <= 'f') return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return (int)(c - 'A' + 10);
    return -1;
}

static int charref_name_char(Py_UCS4 c)
{
    return !(c == '\t' || c == '\n' || c == '\f' || c == ' ' || c == '<' || c == '&' || c == '#' || c == ';');
}

/* what _replace_charref gives for the number n (saturated above 0x10FFFF) */
static int put_numeric(Chars *c, long n)
{
    PyObject *key = PyLong_FromLong(n);
    if (key == NULL)
        return -1;
    PyObject *fixed = PyDict_GetItemWithError(invalid_charrefs, key);       /* borrowed */
    if (fixed != NULL) {
        Py_DECREF(key);
        return PyUnicode_Check(fixed) ? chars_put_str(c, fixed) : (PyErr_SetString(PyExc_TypeError,
                                       "html_unescape: an invalid charref's replacement is not a str"), -1);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(key);
        return -1;
    }
    if ((n >= 0xD800 && n <= 0xDFFF) || n > 0x10FFFF) {
        Py_DECREF(key);
        if (chars_reserve(c, 1) < 0) return -1;
        c->buf[c->len++] = 0xFFFD;
        return 0;
    }
    int dropped = PySet_Contains(invalid_codepoints, key);
    Py_DECREF(key);
    if (dropped < 0)
        return -1;
    if (dropped)
        return 0;
    if (chars_reserve(c, 1) < 0) return -1;
    c->buf[c->len++] = (Py_UCS4)n;
    return 0;
}

/* the value of html5[text[a:b]] (borrowed), NULL when there is none (an exception set on an error) */
static PyObject *entity_value(PyObject *text, Py_ssize_t a, Py_ssize_t b)
{
    PyObject *name = PyUnicode_Substring(text, a, b);
    if (name == NULL)
        return NULL;
    PyObject *value = PyDict_GetItemWithError(entity_names, name);
    Py_DECREF(name);
    if (value != NULL && !PyUnicode_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "html_unescape: an entity's value is not a str");
        return NULL;
    }
    return value;
}

/* html.unescape(text); text itself (a new reference) when it holds no "&" */
static PyObject *unescape_text(PyObject *text)
{
    if (entity_names == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "html_unescape: call set_html_entities first");
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_ssize_t amp = PyUnicode_FindChar(text, '&', 0, n, 1);
    if (amp == -2)
        return NULL;
    if (amp < 0) {
        Py_INCREF(text);
        return text;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Chars out = {0};
    Py_ssize_t done = 0;                              /* text[:done] is in out */
    while (amp >= 0) {
        Py_ssize_t i = amp + 1, end = -1;             /* the reference is text[amp:end] */
        if (i < n && PyUnicode_READ(kind, data, i) == '#') {
            Py_ssize_t j = i + 1;
            long num = 0;
            if (j < n && is_ascii_digit(PyUnicode_READ(kind, data, j))) {
                for (; j < n && is_ascii_digit(PyUnicode_READ(kind, data, j)); j++)
                    if (num <= 0x10FFFF)
                        num = num * 10 + (long)(PyUnicode_READ(kind, data, j) - '0');
                end = j;
            } else if (j + 1 < n && (PyUnicode_READ(kind, data, j) == 'x' || PyUnicode_READ(kind, data, j) == 'X')
                       && hex_value(PyUnicode_READ(kind, data, j + 1)) >= 0) {
                for (j = j + 1; j < n && hex_value(PyUnicode_READ(kind, data, j)) >= 0; j++)
                    if (num <= 0x10FFFF)
                        num = num * 16 + hex_value(PyUnicode_READ(kind, data, j));
                end = j;
            }
            if (end >= 0) {
                if (end < n && PyUnicode_READ(kind, data, end) == ';')
                    end++;
                if (chars_put_range(&out, kind, data, done, amp) < 0 || put_numeric(&out, num) < 0)
                    goto fail;
                done = end;
            }
        } else {
            Py_ssize_t j = i;
            while (j < n && j - i < 32 && charref_name_char(PyUnicode_READ(kind, data, j)))
                j++;
            if (j > i) {
                end = j < n && PyUnicode_READ(kind, data, j) == ';' ? j + 1 : j;
                PyObject *value = entity_value(text, i, end);
                Py_ssize_t rest = end;                /* text[rest:end] follows the value */
                if (value == NULL && !PyErr_Occurred()) {
                    /* the longest prefix name, of 2 characters or more: s[:x] for x from len(s) - 1
                       down; only a name without ";" can be one (";" ends s), none longer than
                       longest_legacy_name */
                    Py_ssize_t x = end - i - 1;
                    if (x > longest_legacy_name)
                        x = longest_legacy_name;
                    for (; x >= 2; x--) {
                        value = entity_value(text, i, i + x);
                        if (value != NULL || PyErr_Occurred())
                            break;
                    }
                    rest = i + x;
                }
                if (PyErr_Occurred())
                    goto fail;
                if (value != NULL) {
                    if (chars_put_range(&out, kind, data, done, amp) < 0 || chars_put_str(&out, value) < 0
                            || chars_put_range(&out, kind, data, rest, end) < 0)
                        goto fail;
                    done = end;
                }
                /* no name: "&" + s, the text as it is (copied with what follows) */
            }
        }
        /* the search goes on after the match, or after the "&" that started none */
        Py_ssize_t from = end >= 0 ? end : amp + 1;
        amp = from < n ? PyUnicode_FindChar(text, '&', from, n, 1) : -1;
        if (amp == -2)
            goto fail;
    }
    if (done == 0) {
        PyMem_Free(out.buf);
        Py_INCREF(text);
        return text;
    }
    if (chars_put_range(&out, kind, data, done, n) < 0)
        goto fail;
    PyObject *result = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, out.buf, out.len);
    PyMem_Free(out.buf);
    return result;
fail:
    PyMem_Free(out.buf);
    return NULL;
}

static PyObject *html_unescape(PyObject *self, PyObject *text)
{
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "html_unescape: text must be a str");
        return NULL;
    }
    return unescape_text(text);
}

/* base64_chars(data, start, stop) -> int: how many bytes of data[start:stop] (slice bounds as
   Python clips them) are in base64's alphabet, A-Z a-z 0-9 + / -- what
   len(data[start:stop].translate(None, <every other byte>)) counts (spamkit.message.payload_size,
   the size of a base64 attachment), without copying the slice twice. */
/* the count of base64_chars: written so that GCC turns it into vector instructions (at -O3,
   asked for this function alone), 16-32 bytes a step: attachments are most of a message's bytes */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
static Py_ssize_t count_base64(const unsigned char *d, Py_ssize_t start, Py_ssize_t stop)
{
    Py_ssize_t count = 0;
    for (Py_ssize_t i = start; i < stop; i++) {
        unsigned char c = d[i];
        unsigned char letter = (unsigned char)((c | 32) - 'a') < 26;
        unsigned char digit = (unsigned char)(c - '0') < 10;
        count += letter | digit | (c == '+') | (c == '/');
    }
    return count;
}

static PyObject *base64_chars(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "y*nn:base64_chars", &view, &start, &stop))
        return NULL;
    Py_ssize_t n = view.len;
    if (start < 0) start = start + n < 0 ? 0 : start + n;
    if (stop < 0) stop = stop + n < 0 ? 0 : stop + n;
    if (start > n) start = n;
    if (stop > n) stop = n;
    Py_ssize_t count = stop > start ? count_base64(view.buf, start, stop) : 0;
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(count);
}

static PyObject *set_html_entities(PyObject *self, PyObject *args)
{
    PyObject *names, *charrefs, *codepoints;
    if (!PyArg_ParseTuple(args, "O!O!O!:set_html_entities", &PyDict_Type, &names, &PyDict_Type, &charrefs,
                          &PySet_Type, &codepoints))
        return NULL;
    Py_ssize_t pos = 0, longest = 0;
    PyObject *key, *value;
    while (PyDict_Next(names, &pos, &key, &value)) {
        if (!PyUnicode_Check(key) || !PyUnicode_Check(value)) {
            PyErr_SetString(PyExc_TypeError, "set_html_entities: names and values must be str");
            return NULL;
        }
        Py_ssize_t len = PyUnicode_GET_LENGTH(key);
        if (len && PyUnicode_READ_CHAR(key, len - 1) != ';' && len > longest)
            longest = len;
    }
    Py_INCREF(names);
    Py_INCREF(charrefs);
    Py_INCREF(codepoints);
    Py_XSETREF(entity_names, names);
    Py_XSETREF(invalid_charrefs, charrefs);
    Py_XSETREF(invalid_codepoints, codepoints);
    longest_legacy_name = longest;
    Py_RETURN_NONE;
}

typedef struct {
    PyObject *html;
    int kind;
    const void *data;
    Py_ssize_t n;
    PyObject *text;        /* list of str */
    PyObject *unescape;
    Ranges data_ranges;
} State;

#define CH(s, i) PyUnicode_READ((s)->kind, (s)->data, (i))

/* The pending visible text as one str, references decoded when it holds "&". */
static int flush(State *s)
{
    Ranges *r = &s->data_ranges;
    if (!r->len)
        return 0;
    PyObject *chunk;
    if (r->len == 1) {
        chunk = PyUnicode_Substring(s->html, r->start[0], r->end[0]);
    } else {
        PyObject *pieces = PyList_New(r->len);
        if (!pieces) return -1;
        for (Py_ssize_t i = 0; i < r->len; i++) {
            PyObject *piece = PyUnicode_Substring(s->html, r->start[i], r->end[i]);
            if (!piece) { Py_DECREF(pieces); return -1; }
            PyList_SET_ITEM(pieces, i, piece);
        }
        PyObject *empty = PyUnicode_FromStringAndSize("", 0);
        if (!empty) { Py_DECREF(pieces); return -1; }
        chunk = PyUnicode_Join(empty, pieces);
        Py_DECREF(empty);
        Py_DECREF(pieces);
    }
    r->len = 0;
    if (!chunk) return -1;
    int amp = 0;
    {
        Py_ssize_t m = PyUnicode_GET_LENGTH(chunk);
        int kind = PyUnicode_KIND(chunk);
        const void *d = PyUnicode_DATA(chunk);
        for (Py_ssize_t i = 0; i < m; i++)
            if (PyUnicode_READ(kind, d, i) == '&') { amp = 1; break; }
    }
    if (amp) {
        PyObject *decoded = PyObject_CallOneArg(s->unescape, chunk);
        Py_DECREF(chunk);
        if (!decoded) return -1;
        chunk = decoded;
    }
    int rc = PyList_Append(s->text, chunk);
    Py_DECREF(chunk);
    return rc;
}

static int append_str(PyObject *list, const char *text)
{
    PyObject *o = PyUnicode_FromString(text);
    if (!o) return -1;
    int rc = PyList_Append(list, o);
    Py_DECREF(o);
    return rc;
}

enum { M_NONE, M_DROPPED, M_TAG };

typedef struct {
    int slash;
    Py_ssize_t name_s, name_e, attr_s, attr_e, end;
} Markup;

static int name_char(Py_UCS4 c)
{
    return !(c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == ' ' || c == '/' || c == '>' || c == 0);
}

static int ascii_letter(Py_UCS4 c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

/* The markup at html[lt] == '<', as the Python scanner's regular expression reads it. */
static int match_markup(State *s, Py_ssize_t lt, Markup *m)
{
    Py_ssize_t n = s->n, i;
    Py_UCS4 c1 = lt + 1 < n ? CH(s, lt + 1) : 0;
    if (lt + 3 < n && c1 == '!' && CH(s, lt + 2) == '-' && CH(s, lt + 3) == '-') {
        /* <!--.*?(?:--!?>|\Z) */
        for (i = lt + 4; i + 2 < n; i++) {
            if (CH(s, i) == '-' && CH(s, i + 1) == '-') {
                Py_UCS4 c = CH(s, i + 2);
                if (c == '>') { m->end = i + 3; return M_DROPPED; }
                if (c == '!' && i + 3 < n && CH(s, i + 3) == '>') { m->end = i + 4; return M_DROPPED; }
            }
        }
        m->end = n;
        return M_DROPPED;
    }
    if (lt + 1 < n && (c1 == '!' || c1 == '?')) {
        /* <[!?][^>]*>? */
        for (i = lt + 2; i < n && CH(s, i) != '>'; i++)
            ;
        m->end = i < n ? i + 1 : n;
        return M_DROPPED;
    }
    if (lt + 2 < n && c1 == '/' && CH(s, lt + 2) == '>') {
        m->end = lt + 3;
        return M_DROPPED;
    }
    /* <(/?)([A-Za-z][^\t\n\r\f />\x00]*)((?:[^>=]+|=\s*"[^"]*"|=\s*'[^']*'|=){0,4096})(>?) */
    i = lt + 1;
    m->slash = 0;
    if (i < n && CH(s, i) == '/') { m->slash = 1; i++; }
    if (!(i < n && ascii_letter(CH(s, i))))
        return M_NONE;
    m->name_s = i++;
    while (i < n && name_char(CH(s, i)))
        i++;
    m->name_e = m->attr_s = i;
    int pieces = 0;
    while (pieces < MAX_PIECES && i < n) {
        Py_UCS4 c = CH(s, i);
        if (c == '>')
            break;
        pieces++;
        if (c != '=') {
            while (i < n && (c = CH(s, i)) != '>' && c != '=')
                i++;
            continue;
        }
        Py_ssize_t j = i + 1;
        while (j < n && Py_UNICODE_ISSPACE(CH(s, j)))
            j++;
        if (j < n && (CH(s, j) == '"' || CH(s, j) == '\'')) {
            Py_UCS4 q = CH(s, j);
            Py_ssize_t k = j + 1;
            while (k < n && CH(s, k) != q)
                k++;
            if (k < n) {                              /* a closed quoted value */
                i = k + 1;
                continue;
            }
            /* an unclosed "...: the '...' alternative cannot match either (the quote differs),
               and an unclosed '...' likewise; both fall through to a bare "=" */
        }
        i++;                                          /* a bare "=" */
    }
    m->attr_e = i;
    if (i < n && CH(s, i) == '>')
        i++;
    m->end = i;
    return M_TAG;
}

#define NAME_CACHE_SIZE 256
#define NAME_CACHE_MAX_LEN 16
static PyObject *name_cache[NAME_CACHE_SIZE];      /* ASCII lower-case tag names (see lower_name) */

/* str.lower() of html[a:b]; done here when the name is ASCII, by Python otherwise. */
static PyObject *lower_name(State *s, Py_ssize_t a, Py_ssize_t b)
{
    Py_ssize_t len = b - a, i;
    int ascii = 1;
    for (i = a; i < b; i++)
        if (CH(s, i) > 127) { ascii = 0; break; }
    if (!ascii) {
        PyObject *sub = PyUnicode_Substring(s->html, a, b);
        if (!sub) return NULL;
        PyObject *low = PyObject_CallMethod(sub, "lower", NULL);
        Py_DECREF(sub);
        return low;
    }
    /* a tag name met lately is the same str object again: no new string, and its hash, which
       the sets of block and invisible tags look it up by, already taken (a direct-mapped cache
       of short names by an FNV-1a hash of their lower-case letters) */
    Py_UCS1 low[NAME_CACHE_MAX_LEN];
    uint32_t h = 2166136261u;
    if (len <= NAME_CACHE_MAX_LEN) {
        for (i = 0; i < len; i++) {
            Py_UCS4 c = CH(s, a + i);
            low[i] = (Py_UCS1)((c >= 'A' && c <= 'Z') ? c + 32 : c);
            h = (h ^ low[i]) * 16777619u;
        }
        PyObject *cached = name_cache[h & (NAME_CACHE_SIZE - 1)];
        if (cached != NULL && PyUnicode_GET_LENGTH(cached) == len
                && memcmp(PyUnicode_1BYTE_DATA(cached), low, (size_t)len) == 0) {
            Py_INCREF(cached);
            return cached;
        }
    }
    PyObject *out = PyUnicode_New(len, 127);
    if (!out) return NULL;
    Py_UCS1 *dst = PyUnicode_1BYTE_DATA(out);
    for (i = 0; i < len; i++) {
        Py_UCS4 c = CH(s, a + i);
        dst[i] = (Py_UCS1)((c >= 'A' && c <= 'Z') ? c + 32 : c);
    }
    if (len <= NAME_CACHE_MAX_LEN) {
        Py_INCREF(out);
        Py_XSETREF(name_cache[h & (NAME_CACHE_SIZE - 1)], out);
    }
    return out;
}

/* Could html[a:b] name an attribute the Python attribute parser would report (a URL
   attribute or alt)? A superset test: ASCII text holding one of the names in any case,
   or any non-ASCII text (whose str.lower() might produce one). */
static int may_hold_wanted(State *s, Py_ssize_t a, Py_ssize_t b)
{
    static const char *names[] = {"href", "src", "action", "background", "cite", "longdesc", "data", "alt", NULL};
    Py_ssize_t i;
    int eq = 0;
    for (i = a; i < b; i++) {
        Py_UCS4 c = CH(s, i);
        if (c > 127) return 1;
        if (c == '=') eq = 1;
    }
    if (!eq) return 0;
    for (i = a; i < b; i++) {
        /* only a name's first letter, in either case, can start it (this filter took the
           search from 60 to 10 instructions a character) */
        Py_UCS4 first = CH(s, i) | 32;
        if (!(first == 'h' || first == 's' || first == 'a' || first == 'b' || first == 'c' || first == 'l'
              || first == 'd'))
            continue;
        for (int k = 0; names[k]; k++) {
            const char *p = names[k];
            if ((Py_UCS4)*p != first)
                continue;
            Py_ssize_t j = i;
            while (*p && j < b) {
                Py_UCS4 c = CH(s, j);
                if (c >= 'A' && c <= 'Z') c += 32;
                if (c != (Py_UCS4)*p) break;
                p++; j++;
            }
            if (!*p) return 1;
        }
    }
    return 0;
}

static int self_closing(State *s, Py_ssize_t a, Py_ssize_t b)
{
    while (b > a && Py_UNICODE_ISSPACE(CH(s, b - 1)))
        b--;
    return b > a && CH(s, b - 1) == '/';
}

/* The str of the ASCII text buf[:len], the same object as the last time that text was asked for
   while it still holds its slot (field names: two dozen a message, nearly all of them met
   before; HTML attribute names), so that its hash is taken once and the lookups by name (get,
   the mail tokens' "header:" names, the wanted attributes) find it by identity. Direct-mapped by an FNV-1a hash; texts longer than
   FIELD_CACHE_MAX_LEN are made fresh. */
#define FIELD_CACHE_SIZE 2048
#define FIELD_CACHE_MAX_LEN 40
static PyObject *field_cache[FIELD_CACHE_SIZE];

static PyObject *cached_ascii(const char *buf, Py_ssize_t len)
{
    if (len > FIELD_CACHE_MAX_LEN)
        return PyUnicode_FromStringAndSize(buf, len);
    uint32_t h = 2166136261u;
    for (Py_ssize_t k = 0; k < len; k++)
        h = (h ^ (unsigned char)buf[k]) * 16777619u;
    PyObject **slot = &field_cache[h & (FIELD_CACHE_SIZE - 1)];
    if (*slot != NULL && PyUnicode_GET_LENGTH(*slot) == len && memcmp(PyUnicode_1BYTE_DATA(*slot), buf, (size_t)len) == 0) {
        Py_INCREF(*slot);
        return *slot;
    }
    PyObject *text = PyUnicode_FromStringAndSize(buf, len);
    if (text != NULL) {
        Py_INCREF(text);
        Py_XSETREF(*slot, text);
    }
    return text;
}

/* tag_attrs(url_attrs, unescape, text) -> (urls, alt): spamkit.htmltext._tag_attrs in C, for
   html_to_text's start tags. The attributes are what the regular expression
   ([^\s"'>/=]+)(?:\s*=\s*("[^"]*"|'[^']*'|[^\s>]*))? finds, one after the other, at most
   max_attrs of them: a name (lower case, by str.lower() where it is not ASCII), then
   optionally "=" and a value, double-quoted, single-quoted or bare (a quote that is never
   closed is read as a bare value); the first of a name wins; quotes are taken off (an
   unclosed one: the opening one only) and character references decoded by unescape where
   there is a "&". The urls are the values, stripped, of the attributes named in url_attrs
   that are not empty and do not start with "#", "cid:" or "data:", in the order of the
   attributes; alt is the alt attribute's value or None. */
static int attr_stop(Py_UCS4 c)
{
    return c == '"' || c == '\'' || c == '>' || c == '/' || c == '=' || Py_UNICODE_ISSPACE(c);
}

/* text[a:b] starts with the ASCII string prefix (case-sensitive, as str.startswith) */
static int starts_with_ascii(int kind, const void *data, Py_ssize_t a, Py_ssize_t b, const char *prefix)
{
    for (; *prefix; prefix++, a++)
        if (a >= b || PyUnicode_READ(kind, data, a) != (Py_UCS4)(unsigned char)*prefix)
            return 0;
    return 1;
}

static PyObject *tag_attrs(PyObject *self, PyObject *args)
{
    PyObject *url_attrs, *unescape, *text;
    Py_ssize_t max_attrs;
    if (!PyArg_ParseTuple(args, "O!OnU:tag_attrs", &PyFrozenSet_Type, &url_attrs, &unescape, &max_attrs, &text))
        return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), pos = 0, count = 0;
    PyObject *urls = PyList_New(0), *attrs = NULL, *result = NULL;
    if (urls == NULL)
        return NULL;
    if (PyUnicode_FindChar(text, '=', 0, n, 1) < 0) {           /* no value anywhere: nothing wanted */
        result = Py_BuildValue("(OO)", urls, Py_None);
        Py_DECREF(urls);
        return result;
    }
    attrs = PyDict_New();
    if (attrs == NULL)
        goto done;
#define AT(i) PyUnicode_READ(kind, data, (i))
    while (pos < n) {
        if (attr_stop(AT(pos))) {
            pos++;
            continue;
        }
        if (count >= max_attrs)
            break;
        count++;
        Py_ssize_t start = pos;
        int ascii = 1;
        while (pos < n && !attr_stop(AT(pos))) {
            if (AT(pos) > 127)
                ascii = 0;
            pos++;
        }
        Py_ssize_t name_end = pos, vs = -1, ve = -1, p = pos;
        while (p < n && Py_UNICODE_ISSPACE(AT(p)))
            p++;
        if (p < n && AT(p) == '=') {
            p++;
            while (p < n && Py_UNICODE_ISSPACE(AT(p)))
                p++;
            Py_ssize_t close = -1;
            if (p < n && (AT(p) == '"' || AT(p) == '\'')) {
                close = PyUnicode_FindChar(text, AT(p), p + 1, n, 1);
                if (close == -2)
                    goto done;
            }
            if (close >= 0) {
                vs = p; ve = close + 1;
            } else {
                Py_ssize_t q = p;
                while (q < n && AT(q) != '>' && !Py_UNICODE_ISSPACE(AT(q)))
                    q++;
                vs = p; ve = q;
            }
            pos = ve;
        }
        PyObject *name;
        if (ascii) {
            char small[64], *buf = name_end - start <= 64 ? small : PyMem_Malloc(name_end - start);
            if (buf == NULL) { PyErr_NoMemory(); goto done; }
            for (Py_ssize_t i = start; i < name_end; i++) {
                Py_UCS4 c = AT(i);
                buf[i - start] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
            }
            name = cached_ascii(buf, name_end - start);
            if (buf != small)
                PyMem_Free(buf);
        } else {
            PyObject *raw = PyUnicode_Substring(text, start, name_end);
            name = raw ? PyObject_CallMethod(raw, "lower", NULL) : NULL;
            Py_XDECREF(raw);
        }
        if (name == NULL)
            goto done;
        /* only a URL attribute's or alt's value is ever looked at: the others are passed over
           without their values being cut out and decoded (a style or class attribute's) */
        int wanted = PySet_Contains(url_attrs, name);
        if (wanted == 0)
            wanted = PyUnicode_CompareWithASCIIString(name, "alt") == 0;
        if (wanted <= 0) {
            Py_DECREF(name);
            if (wanted < 0) goto done;
            continue;
        }
        int known = PyDict_Contains(attrs, name);
        if (known != 0) {
            Py_DECREF(name);
            if (known < 0) goto done;
            continue;
        }
        if (vs >= 0 && ve - vs >= 1 && (AT(vs) == '"' || AT(vs) == '\'')) {
            if (ve - vs > 1 && AT(ve - 1) == AT(vs))
                ve--;
            vs++;
        }
        PyObject *value = vs < 0 ? PyUnicode_New(0, 0) : PyUnicode_Substring(text, vs, ve);
        if (value != NULL && PyUnicode_GET_LENGTH(value) && PyUnicode_FindChar(value, '&', 0, PyUnicode_GET_LENGTH(value), 1) >= 0) {
            PyObject *decoded = PyObject_CallOneArg(unescape, value);
            Py_DECREF(value);
            value = decoded;
        }
        if (value == NULL || PyDict_SetItem(attrs, name, value) < 0) {
            Py_DECREF(name); Py_XDECREF(value);
            goto done;
        }
        Py_DECREF(name);
        Py_DECREF(value);
    }
#undef AT
    {
        PyObject *key, *value;
        Py_ssize_t it = 0;
        while (PyDict_Next(attrs, &it, &key, &value)) {
            int wanted = PySet_Contains(url_attrs, key);
            if (wanted < 0) goto done;
            if (!wanted || !PyUnicode_Check(value) || PyUnicode_GET_LENGTH(value) == 0)
                continue;
            int vk = PyUnicode_KIND(value);
            const void *vd = PyUnicode_DATA(value);
            Py_ssize_t a = 0, b = PyUnicode_GET_LENGTH(value);
            while (a < b && Py_UNICODE_ISSPACE(PyUnicode_READ(vk, vd, a)))
                a++;
            while (b > a && Py_UNICODE_ISSPACE(PyUnicode_READ(vk, vd, b - 1)))
                b--;
            if (a == b || PyUnicode_READ(vk, vd, a) == '#' || starts_with_ascii(vk, vd, a, b, "cid:")
                    || starts_with_ascii(vk, vd, a, b, "data:"))
                continue;
            PyObject *stripped = PyUnicode_Substring(value, a, b);
            if (stripped == NULL || PyList_Append(urls, stripped) < 0) {
                Py_XDECREF(stripped);
                goto done;
            }
            Py_DECREF(stripped);
        }
    }
    {
        PyObject *alt = PyDict_GetItemString(attrs, "alt");         /* borrowed */
        result = Py_BuildValue("(OO)", urls, alt ? alt : Py_None);
    }
done:
    Py_XDECREF(attrs);
    Py_DECREF(urls);
    return result;
}

static PyObject *html_to_text(PyObject *self, PyObject *args)
{
    PyObject *html, *block, *invisible, *raw_text, *tag_attrs, *unescape;
    Py_ssize_t max_tags;
    if (!PyArg_ParseTuple(args, "UO!O!O!OOn:html_to_text", &html, &PyFrozenSet_Type, &block,
                          &PyFrozenSet_Type, &invisible, &PyDict_Type, &raw_text, &tag_attrs,
                          &unescape, &max_tags))
        return NULL;
    State st = {0};
    State *s = &st;
    s->html = html;
    s->kind = PyUnicode_KIND(html);
    s->data = PyUnicode_DATA(html);
    s->n = PyUnicode_GET_LENGTH(html);
    s->unescape = unescape;
    PyObject *urls = NULL, *tags = NULL, *result = NULL, *name = NULL;
    s->text = PyList_New(0);
    urls = PyList_New(0);
    tags = PyList_New(0);
    if (!s->text || !urls || !tags)
        goto done;
    Py_ssize_t pos = 0, n = s->n, hidden = 0;
    while (pos < n) {
        Py_ssize_t lt = PyUnicode_FindChar(html, '<', pos, n, 1);
        if (lt == -2)
            goto done;
        if (lt < 0) {
            if (!hidden && ranges_add(&s->data_ranges, pos, n) < 0) goto done;
            break;
        }
        if (lt > pos && !hidden && ranges_add(&s->data_ranges, pos, lt) < 0)
            goto done;
        Markup m;
        int kind = match_markup(s, lt, &m);
        if (kind == M_NONE) {                         /* a "<" that starts no markup is text */
            if (!hidden && ranges_add(&s->data_ranges, lt, lt + 1) < 0) goto done;
            pos = lt + 1;
            continue;
        }
        pos = m.end;
        if (kind == M_DROPPED)
            continue;
        name = lower_name(s, m.name_s, m.name_e);
        if (!name) goto done;
        int is_block = PySet_Contains(block, name), is_invisible = PySet_Contains(invisible, name);
        if (is_block < 0 || is_invisible < 0) goto done;
        if (m.slash) {                                /* an end tag */
            if (is_invisible && hidden > 0)
                hidden--;
            if (is_block && (flush(s) < 0 || append_str(s->text, "\n") < 0))
                goto done;
            Py_CLEAR(name);
            continue;
        }
        if (PyList_GET_SIZE(tags) < max_tags && PyList_Append(tags, name) < 0)
            goto done;
        PyObject *alt = NULL;                         /* borrowed from found */
        PyObject *found = NULL;
        if (may_hold_wanted(s, m.attr_s, m.attr_e)) {
            PyObject *attr_text = PyUnicode_Substring(html, m.attr_s, m.attr_e);
            if (!attr_text) goto done;
            found = PyObject_CallOneArg(tag_attrs, attr_text);
            Py_DECREF(attr_text);
            if (!found) goto done;
            if (!PyTuple_Check(found) || PyTuple_GET_SIZE(found) != 2) {
                Py_DECREF(found);
                PyErr_SetString(PyExc_TypeError, "tag_attrs must return (urls, alt)");
                goto done;
            }
            PyObject *more = PyTuple_GET_ITEM(found, 0);
            if (PyList_Check(more) && PyList_GET_SIZE(more)) {
                Py_ssize_t at = PyList_GET_SIZE(urls);
                if (PyList_SetSlice(urls, at, at, more) < 0) { Py_DECREF(found); goto done; }
            }
            alt = PyTuple_GET_ITEM(found, 1);
        }
        int rc = 0;
        if (is_block) {
            rc = flush(s) < 0 || append_str(s->text, "\n") < 0;
        } else if (alt != NULL && alt != Py_None && PyUnicode_Check(alt) && PyUnicode_GET_LENGTH(alt) > 0
                   && PyUnicode_CompareWithASCIIString(name, "img") == 0) {
            PyObject *shown = PyUnicode_FromFormat(" %U ", alt);
            rc = flush(s) < 0 || !shown || PyList_Append(s->text, shown) < 0;
            Py_XDECREF(shown);
        }
        Py_XDECREF(found);
        if (rc) goto done;
        if (is_invisible && !self_closing(s, m.attr_s, m.attr_e)) {
            hidden++;
            PyObject *end_tag = PyDict_GetItemWithError(raw_text, name);   /* borrowed */
            if (!end_tag && PyErr_Occurred()) goto done;
            if (end_tag) {                            /* raw text: no markup inside, up to the end tag */
                PyObject *hit = PyObject_CallMethod(end_tag, "search", "On", html, pos);
                if (!hit) goto done;
                if (hit == Py_None) {
                    pos = n;
                } else {
                    PyObject *start = PyObject_CallMethod(hit, "start", NULL);
                    Py_ssize_t at = start ? PyLong_AsSsize_t(start) : -1;
                    Py_XDECREF(start);
                    if (at < 0 && PyErr_Occurred()) { Py_DECREF(hit); goto done; }
                    pos = at;
                }
                Py_DECREF(hit);
            }
        }
        Py_CLEAR(name);
    }
    if (flush(s) < 0)
        goto done;
    {
        PyObject *empty = PyUnicode_FromStringAndSize("", 0);
        if (!empty) goto done;
        PyObject *joined = PyUnicode_Join(empty, s->text);
        Py_DECREF(empty);
        if (!joined) goto done;
        result = PyTuple_Pack(3, joined, urls, tags);
        Py_DECREF(joined);
    }
done:
    Py_XDECREF(name);
    Py_XDECREF(s->text);
    Py_XDECREF(urls);
    Py_XDECREF(tags);
    PyMem_Free(s->data_ranges.start);
    PyMem_Free(s->data_ranges.end);
    return result;
}


/* ------------------------------------------------------------------ words */

/* spamkit.text.tokenize.WORD_PATTERN_MIN2: a word is an optional currency sign, letters or
   digits, and more runs of them joined by one of ' ’ . - (or a comma between digits); words of
   one character are dropped. "Letters or digits" is the regular expressions' [^\W_] on str,
   which is Py_UNICODE_ISALNUM; \d is Py_UNICODE_ISDECIMAL. */
/* ASCII letters and digits (the first 128 code points of str.isalnum()) */
static const unsigned char ascii_alnum[128] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1,
    ['K'] = 1, ['L'] = 1, ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1,
    ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1,
    ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1,
    ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1, ['s'] = 1, ['t'] = 1,
    ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

static int is_alnum_beyond_ascii(Py_UCS4 c)
{
    return Py_UNICODE_ISALNUM(c);
}

/* str.isalnum() of one character: a table for ASCII, inlined into the tokenizer's loops (a
   call per character was 4% of a worker's work), CPython's database beyond */
static inline int is_alnum(Py_UCS4 c)
{
    return c < 128 ? ascii_alnum[c] : is_alnum_beyond_ascii(c);
}

static int is_decimal(Py_UCS4 c)
{
    if (c < 128)
        return c >= '0' && c <= '9';
    return Py_UNICODE_ISDECIMAL(c);
}

static int is_currency(Py_UCS4 c)
{
    return c == '$' || c == 0xa3 || c == 0x20ac || c == 0xa5;     /* $ £ € ¥ */
}

static int is_joiner(Py_UCS4 c)
{
    return c == '\'' || c == 0x2019 || c == '.' || c == '-';
}

static Py_UCS4 exact_max(int kind, const void *data, Py_ssize_t a, Py_ssize_t b)
{
    Py_UCS4 m = 0;
    for (Py_ssize_t i = a; i < b; i++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c > m) m = c;
    }
    return m;
}

/* lit + s[a:b] + suffix as one str, lit and suffix ASCII: what PyUnicode_FromFormat("lit%Usuffix")
   makes of the substring, without parsing a format and writing through a buffer (800
   instructions a token, a twentieth of a worker's tokenizing of TREC mail). */
static PyObject *literal_and(const char *lit, PyObject *s, Py_ssize_t a, Py_ssize_t b, const char *suffix)
{
    Py_ssize_t ll = (Py_ssize_t)strlen(lit), sl = (Py_ssize_t)strlen(suffix), len = b - a;
    int kind = PyUnicode_KIND(s);
    const void *data = PyUnicode_DATA(s);
    Py_UCS4 maxc = 127;
    if (!PyUnicode_IS_ASCII(s)) {
        Py_UCS4 m = exact_max(kind, data, a, b);
        if (m > maxc)
            maxc = m;
    }
    PyObject *out = PyUnicode_New(ll + len + sl, maxc);
    if (out == NULL)
        return NULL;
    int okind = PyUnicode_KIND(out);
    void *odata = PyUnicode_DATA(out);
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < ll; i++)
        PyUnicode_WRITE(okind, odata, k++, (Py_UCS1)lit[i]);
    if (okind == kind) {
        memcpy((char *)odata + k * kind, (const char *)data + a * kind, (size_t)(len * kind));
        k += len;
    } else {
        for (Py_ssize_t i = a; i < b; i++)
            PyUnicode_WRITE(okind, odata, k++, PyUnicode_READ(kind, data, i));
    }
    for (Py_ssize_t i = 0; i < sl; i++)
        PyUnicode_WRITE(okind, odata, k++, (Py_UCS1)suffix[i]);
    return out;
}

/* A cache of the word tokens made lately, so that a word met again is the same str object:
   no new string to allocate, its hash already computed for the dicts and tables that count
   and look it up, and the identity test that those try first then succeeds. Direct-mapped by
   an FNV-1a hash of the characters (a field word's prefix, "subject:", first); a slot holds
   a strong reference until another word takes it. Tokens longer than TOKEN_CACHE_MAX_LEN
   rarely repeat and are made fresh. Equal strings are interchangeable, so what callers see
   is the same. (Field words were always made fresh: a third of a TREC message's tokens,
   each a new string hashed by the worker's numbering.) */
#define TOKEN_CACHE_SIZE 32768
#define TOKEN_CACHE_MAX_LEN 40
static PyObject *token_cache[TOKEN_CACHE_SIZE];

/* the FNV-1a state after the characters text[start:start + len], from h */
static uint32_t fnv_chars(uint32_t h, int kind, const void *data, Py_ssize_t start, Py_ssize_t len)
{
    if (kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *d = (const Py_UCS1 *)data + start;
        for (Py_ssize_t k = 0; k < len; k++)
            h = (h ^ d[k]) * 16777619u;
    } else {
        for (Py_ssize_t k = 0; k < len; k++)
            h = (h ^ (uint32_t)PyUnicode_READ(kind, data, start + k)) * 16777619u;
    }
    return h;
}

/* do the characters of a at offset equal text[start:start + len]? */
static int same_chars(PyObject *a, Py_ssize_t offset, int kind, const void *data, Py_ssize_t start, Py_ssize_t len)
{
    int akind = PyUnicode_KIND(a);
    const void *adata = PyUnicode_DATA(a);
    if (akind == kind)
        return memcmp((const char *)adata + offset * akind, (const char *)data + start * kind, (size_t)(len * kind)) == 0;
    for (Py_ssize_t k = 0; k < len; k++)
        if (PyUnicode_READ(akind, adata, offset + k) != PyUnicode_READ(kind, data, start + k))
            return 0;
    return 1;
}

/* prefix + text[start:start + len] as a str (prefix NULL: none; pmax: its largest character),
   the cached one when it is there. h0: the FNV-1a state after the prefix (2166136261 without). */
static PyObject *cached_token(PyObject *prefix, Py_UCS4 pmax, uint32_t h0, PyObject *text, int kind,
                              const void *data, Py_ssize_t start, Py_ssize_t len)
{
    Py_ssize_t plen = prefix ? PyUnicode_GET_LENGTH(prefix) : 0;
    PyObject **slot = NULL;
    if (plen + len <= TOKEN_CACHE_MAX_LEN) {
        slot = &token_cache[fnv_chars(h0, kind, data, start, len) & (TOKEN_CACHE_SIZE - 1)];
        PyObject *cached = *slot;
        if (cached != NULL && PyUnicode_GET_LENGTH(cached) == plen + len
                && (!plen || same_chars(cached, 0, PyUnicode_KIND(prefix), PyUnicode_DATA(prefix), 0, plen))
                && same_chars(cached, plen, kind, data, start, len)) {
            Py_INCREF(cached);
            return cached;
        }
    }
    PyObject *token;
    if (!plen) {
        token = PyUnicode_Substring(text, start, start + len);
    } else {
        Py_UCS4 m = exact_max(kind, data, start, start + len);
        token = PyUnicode_New(plen + len, m > pmax ? m : pmax);
        if (token) {
            /* written character by character: PyUnicode_CopyCharacters checks the wrong
               characters when it copies a Latin-1 range into an ASCII string (CPython 3.11) */
            int okind = PyUnicode_KIND(token), pkind = PyUnicode_KIND(prefix);
            void *odata = PyUnicode_DATA(token);
            const void *pdata = PyUnicode_DATA(prefix);
            for (Py_ssize_t k = 0; k < plen; k++)
                PyUnicode_WRITE(okind, odata, k, PyUnicode_READ(pkind, pdata, k));
            for (Py_ssize_t k = 0; k < len; k++)
                PyUnicode_WRITE(okind, odata, plen + k, PyUnicode_READ(kind, data, start + k));
        }
    }
    if (token != NULL && slot != NULL) {
        Py_INCREF(token);
        Py_XSETREF(*slot, token);
    }
    return token;
}

/* str.isalnum() of each Latin-1 character (filled when the module loads) */
static unsigned char latin1_alnum[256];

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* is_alnum, by the Latin-1 table in a one-byte string */
static ALWAYS_INLINE int alnum_in(int kind, Py_UCS4 c)
{
    return kind == PyUnicode_1BYTE_KIND ? latin1_alnum[c] : is_alnum(c);
}

/* words_into's scan for one string width: called with a constant kind, so that each width gets
   a loop of its own, reading characters without asking the width each time (a one-byte string,
   most mail text, by table lookups alone) */
static ALWAYS_INLINE int words_scan(PyObject *out, PyObject *text, int kind, const void *data, Py_ssize_t n,
                                    Py_ssize_t max_len, PyObject *prefix, Py_UCS4 pmax, uint32_t h0,
                                    PyObject *long_token)
{
    Py_ssize_t i = 0;
    while (i < n) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        Py_ssize_t start = i;
        if (alnum_in(kind, c)) {
            i++;
        } else if (is_currency(c) && i + 1 < n && alnum_in(kind, PyUnicode_READ(kind, data, i + 1))) {
            i += 2;
        } else {
            i++;
            continue;
        }
        while (i < n && alnum_in(kind, PyUnicode_READ(kind, data, i)))
            i++;
        while (i + 1 < n) {                           /* joined runs */
            Py_UCS4 j = PyUnicode_READ(kind, data, i), next = PyUnicode_READ(kind, data, i + 1);
            if (!alnum_in(kind, next))
                break;
            if (!(is_joiner(j) || (j == ',' && is_decimal(PyUnicode_READ(kind, data, i - 1)) && is_decimal(next))))
                break;
            i += 2;
            while (i < n && alnum_in(kind, PyUnicode_READ(kind, data, i)))
                i++;
        }
        Py_ssize_t len = i - start;
        if (len < 2)
            continue;
        PyObject *token;
        if (len > max_len) {
            if (prefix != NULL)                       /* markers are not field tokens */
                continue;
            token = long_token;
            Py_INCREF(token);
        } else {
            token = cached_token(prefix, pmax, h0, text, kind, data, start, len);
        }
        if (!token || PyList_Append(out, token) < 0) {
            Py_XDECREF(token);
            return -1;
        }
        Py_DECREF(token);
    }
    return 0;
}

/* appends the words of text to the list out (see words()); -1 on an error */
static int words_into(PyObject *out, PyObject *text, Py_ssize_t max_len, PyObject *prefix, PyObject *long_token)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_UCS4 pmax = 0;
    uint32_t h0 = 2166136261u;
    PyObject *pre = prefix == Py_None ? NULL : prefix;
    if (pre != NULL) {
        Py_ssize_t plen = PyUnicode_GET_LENGTH(pre);
        pmax = exact_max(PyUnicode_KIND(pre), PyUnicode_DATA(pre), 0, plen);
        h0 = fnv_chars(h0, PyUnicode_KIND(pre), PyUnicode_DATA(pre), 0, plen);
    }
    switch (kind) {
    case PyUnicode_1BYTE_KIND:
        return words_scan(out, text, PyUnicode_1BYTE_KIND, data, n, max_len, pre, pmax, h0, long_token);
    case PyUnicode_2BYTE_KIND:
        return words_scan(out, text, PyUnicode_2BYTE_KIND, data, n, max_len, pre, pmax, h0, long_token);
    default:
        return words_scan(out, text, PyUnicode_4BYTE_KIND, data, n, max_len, pre, pmax, h0, long_token);
    }
}

static PyObject *words(PyObject *self, PyObject *args)
{
    PyObject *text, *prefix, *long_token;
    Py_ssize_t max_len;
    if (!PyArg_ParseTuple(args, "UnOU:words", &text, &max_len, &prefix, &long_token))
        return NULL;
    if (prefix != Py_None && !PyUnicode_Check(prefix)) {
        PyErr_SetString(PyExc_TypeError, "prefix must be str or None");
        return NULL;
    }
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    if (words_into(out, text, max_len, prefix, long_token) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* url_parts(urls, out): for each str of the list urls, its lower-case form (str.lower()) cut at
   every run of white space and of the characters / ? # = & . : ; , _ + % ~ ! @ - (what
   spamkit.text's _URL_PIECES.split finds), and each piece of 2 to 30 characters appended to
   the list out as "url:part:" + piece. */
static int url_separator(Py_UCS4 c)
{
    switch (c) {
    case '/': case '?': case '#': case '=': case '&': case '.': case ':': case ';': case ',': case '_':
    case '+': case '%': case '~': case '!': case '@': case '-':
        return 1;
    }
    return Py_UNICODE_ISSPACE(c);
}

static PyObject *url_parts(PyObject *self, PyObject *args)
{
    PyObject *urls, *out;
    if (!PyArg_ParseTuple(args, "O!O!:url_parts", &PyList_Type, &urls, &PyList_Type, &out))
        return NULL;
    for (Py_ssize_t u = 0; u < PyList_GET_SIZE(urls); u++) {
        PyObject *url = PyList_GET_ITEM(urls, u);
        if (!PyUnicode_Check(url)) {
            PyErr_SetString(PyExc_TypeError, "url_parts: every URL must be a str");
            return NULL;
        }
        PyObject *low = PyObject_CallMethod(url, "lower", NULL);
        if (low == NULL)
            return NULL;
        int kind = PyUnicode_KIND(low);
        const void *data = PyUnicode_DATA(low);
        Py_ssize_t n = PyUnicode_GET_LENGTH(low), i = 0;
        while (i < n) {
            while (i < n && url_separator(PyUnicode_READ(kind, data, i)))
                i++;
            Py_ssize_t start = i;
            while (i < n && !url_separator(PyUnicode_READ(kind, data, i)))
                i++;
            Py_ssize_t len = i - start;
            if (len < 2 || len > 30)
                continue;
            PyObject *token = literal_and("url:part:", low, start, i, "");
            if (token == NULL || PyList_Append(out, token) < 0) {
                Py_XDECREF(token);
                Py_DECREF(low);
                return NULL;
            }
            Py_DECREF(token);
        }
        Py_DECREF(low);
    }
    Py_RETURN_NONE;
}

/* header_pairs(fields, decode, defects) -> list: [(name.strip().lower(), value)] for the
   (name, value) str pairs of fields, what spamkit.message.parse_message keeps of the top header
   block: value is decode(value, defects) -- spamkit.message.decode_header_value, the
   definition -- called in order for every value that is not ASCII or holds "=?"; the others,
   which it would return as " ".join(value.split()), are made here (str.split() on ASCII: runs of
   \t \n \v \f \r \x1c-\x1f and space). A name that is not ASCII goes through str.strip().lower(). */
static int ascii_space(Py_UCS1 c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* [*a, *b) narrowed to leave out the ASCII white space at both ends (str.strip() on ASCII) */
static void ascii_strip(const Py_UCS1 *d, Py_ssize_t *a, Py_ssize_t *b)
{
    while (*a < *b && ascii_space(d[*a]))
        (*a)++;
    while (*b > *a && ascii_space(d[*b - 1]))
        (*b)--;
}

/* d[a:b] in lower case (ASCII), in small when it fits, else in memory the caller frees with
   PyMem_Free when it is not small; NULL (with MemoryError) when none is to be had */
static char *ascii_lowered(const Py_UCS1 *d, Py_ssize_t a, Py_ssize_t b, char *small, size_t small_size)
{
    char *buf = (size_t)(b - a) <= small_size ? small : PyMem_Malloc((size_t)(b - a));
    if (buf == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t j = a; j < b; j++)
        buf[j - a] = (char)Py_TOLOWER(d[j]);
    return buf;
}

static PyObject *collapsed_ascii(PyObject *value)
{
    const Py_UCS1 *d = PyUnicode_1BYTE_DATA(value);
    Py_ssize_t n = PyUnicode_GET_LENGTH(value), i = 0, k = 0;
    int plain = 1;                               /* already one space between words, none at the ends */
    for (i = 0; i < n; i++)
        if (ascii_space(d[i]) && (d[i] != ' ' || i == 0 || i == n - 1 || d[i + 1] == ' ')) {
            plain = 0;
            break;
        }
    if (plain) {
        Py_INCREF(value);
        return value;
    }
    char *buf = PyMem_Malloc((size_t)(n ? n : 1));
    if (buf == NULL)
        return PyErr_NoMemory();
    for (i = 0; i < n;) {
        while (i < n && ascii_space(d[i]))
            i++;
        if (i >= n)
            break;
        if (k)
            buf[k++] = ' ';
        while (i < n && !ascii_space(d[i]))
            buf[k++] = (char)d[i++];
    }
    PyObject *out = PyUnicode_FromStringAndSize(buf, k);
    PyMem_Free(buf);
    return out;
}

static PyObject *header_pairs(PyObject *self, PyObject *args)
{
    PyObject *fields, *decode, *defects;
    if (!PyArg_ParseTuple(args, "O!OO!:header_pairs", &PyList_Type, &fields, &decode, &PyList_Type, &defects))
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(fields); i++) {
        PyObject *pair = PyList_GET_ITEM(fields, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 0))
                || !PyUnicode_Check(PyTuple_GET_ITEM(pair, 1))) {
            PyErr_SetString(PyExc_TypeError, "header_pairs: fields must be (str, str) pairs");
            goto fail;
        }
        PyObject *name = PyTuple_GET_ITEM(pair, 0), *value = PyTuple_GET_ITEM(pair, 1);
        Py_INCREF(pair);                          /* decode() runs Python code: hold what we use */
        PyObject *low, *text;
        if (PyUnicode_IS_ASCII(name)) {
            const Py_UCS1 *d = PyUnicode_1BYTE_DATA(name);
            Py_ssize_t a = 0, b = PyUnicode_GET_LENGTH(name);
            ascii_strip(d, &a, &b);
            char small[256];
            char *buf = ascii_lowered(d, a, b, small, sizeof(small));
            if (buf == NULL) {
                Py_DECREF(pair);
                goto fail;
            }
            low = cached_ascii(buf, b - a);
            if (buf != small)
                PyMem_Free(buf);
        } else {
            PyObject *stripped = PyObject_CallMethod(name, "strip", NULL);
            low = stripped ? PyObject_CallMethod(stripped, "lower", NULL) : NULL;
            Py_XDECREF(stripped);
        }
        if (low == NULL) {
            Py_DECREF(pair);
            goto fail;
        }
        int fast = PyUnicode_IS_ASCII(value);
        if (fast) {
            const Py_UCS1 *d = PyUnicode_1BYTE_DATA(value);
            Py_ssize_t m = PyUnicode_GET_LENGTH(value);
            for (Py_ssize_t j = 0; j + 1 < m; j++)
                if (d[j] == '=' && d[j + 1] == '?') {
                    fast = 0;
                    break;
                }
        }
        text = fast ? collapsed_ascii(value) : PyObject_CallFunctionObjArgs(decode, value, defects, NULL);
        Py_DECREF(pair);
        if (text == NULL) {
            Py_DECREF(low);
            goto fail;
        }
        PyObject *item = PyTuple_Pack(2, low, text);
        Py_DECREF(low);
        Py_DECREF(text);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            goto fail;
        }
        Py_DECREF(item);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* header_block(raw, start, end, max_chars, max_fields) -> (fields, body, first) or None: the header block
   at raw[start:end] when it is well formed, what spamkit.mime._well_formed_block reads with two
   regular expressions (its definition, which tests/test_mime.py compares with this): field lines
   (a name of printable ASCII but ":", maybe empty, then ":" and the rest of the line), each with
   its continuation lines (starting with a space or a tab), then an empty line ("\n" or "\r\n"),
   all within max_chars + 2 bytes of start; else None, as for more than max_fields fields.
   fields: [(name, value)], str decoded from ASCII with surrogateescape; a line's content ends
   before its "\n" and one "\r" right before it; the value loses the blanks after the colon, and
   each continuation line is appended whole after one space. body: where the body starts. first:
   {name in lower case: its first value}, what spamkit.mime.Part.get looks fields up in (made
   here, where the names are at hand: in Python it was 3% of parsing TREC mail). */
static int field_name_byte(unsigned char c)
{
    return c >= 0x21 && c <= 0x7e && c != ':';
}

static Py_ssize_t content_end(const unsigned char *b, Py_ssize_t line, Py_ssize_t nl)
{
    return (nl > line && b[nl - 1] == '\r') ? nl - 1 : nl;
}

static PyObject *header_block(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t start, end, max_chars, max_fields;
    if (!PyArg_ParseTuple(args, "y*nnnn:header_block", &view, &start, &end, &max_chars, &max_fields))
        return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    if (end > view.len)
        end = view.len;
    if (start < 0 || start > end || max_chars < 0) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    Py_ssize_t limit = (end - start > max_chars + 2) ? start + max_chars + 2 : end;
    /* first pass: the structure, the body's start and the number of fields */
    Py_ssize_t pos = start, body = -1, n_fields = 0;
    while (pos < limit) {
        unsigned char c = b[pos];
        if (c == '\n') {
            body = pos + 1;
            break;
        }
        if (c == '\r' && pos + 1 < limit && b[pos + 1] == '\n') {
            body = pos + 2;
            break;
        }
        Py_ssize_t p = pos;
        while (p < limit && field_name_byte(b[p]))
            p++;
        if (p >= limit || b[p] != ':')
            break;
        const unsigned char *nl = memchr(b + p, '\n', (size_t)(limit - p));
        if (nl == NULL)
            break;
        pos = (nl - b) + 1;
        n_fields++;
        while (pos < limit && (b[pos] == ' ' || b[pos] == '\t')) {
            nl = memchr(b + pos, '\n', (size_t)(limit - pos));
            if (nl == NULL) {
                pos = limit;                      /* an unfinished continuation line: not well formed */
                break;
            }
            pos = (nl - b) + 1;
        }
    }
    if (body < 0 || n_fields > max_fields) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    /* second pass: the fields, and the first value of each name in lower case */
    PyObject *fields = PyList_New(n_fields), *first = PyDict_New();
    char *joined = NULL;
    Py_ssize_t joined_size = 0;
    if (fields == NULL || first == NULL)
        goto fail;
    pos = start;
    for (Py_ssize_t k = 0; k < n_fields; k++) {
        Py_ssize_t colon = pos;
        while (b[colon] != ':')
            colon++;
        Py_ssize_t nl = (const unsigned char *)memchr(b + colon, '\n', (size_t)(limit - colon)) - b;
        Py_ssize_t v = colon + 1, stop = content_end(b, pos, nl);
        while (v < stop && (b[v] == ' ' || b[v] == '\t'))
            v++;
        if (v > stop)
            v = stop;
        /* the name's bytes are printable ASCII (field_name_byte): the same str as last time */
        PyObject *name = cached_ascii((const char *)b + pos, colon - pos);
        if (name == NULL)
            goto fail;
        pos = nl + 1;
        PyObject *value;
        if (pos < limit && (b[pos] == ' ' || b[pos] == '\t')) {
            /* continuation lines: the value, then " " and each line's content */
            Py_ssize_t size = stop - v, scan = pos;
            while (scan < limit && (b[scan] == ' ' || b[scan] == '\t')) {
                Py_ssize_t cnl = (const unsigned char *)memchr(b + scan, '\n', (size_t)(limit - scan)) - b;
                size += 1 + (content_end(b, scan, cnl) - scan);
                scan = cnl + 1;
            }
            if (size > joined_size) {
                char *grown = PyMem_Realloc(joined, (size_t)size);
                if (grown == NULL) {
                    Py_DECREF(name);
                    PyErr_NoMemory();
                    goto fail;
                }
                joined = grown;
                joined_size = size;
            }
            Py_ssize_t at = stop - v;
            memcpy(joined, b + v, (size_t)at);
            while (pos < limit && (b[pos] == ' ' || b[pos] == '\t')) {
                Py_ssize_t cnl = (const unsigned char *)memchr(b + pos, '\n', (size_t)(limit - pos)) - b;
                Py_ssize_t cend = content_end(b, pos, cnl);
                joined[at++] = ' ';
                memcpy(joined + at, b + pos, (size_t)(cend - pos));
                at += cend - pos;
                pos = cnl + 1;
            }
            value = PyUnicode_DecodeASCII(joined, at, "surrogateescape");
        } else {
            value = PyUnicode_DecodeASCII((const char *)b + v, stop - v, "surrogateescape");
        }
        if (value == NULL) {
            Py_DECREF(name);
            goto fail;
        }
        PyObject *pair = PyTuple_Pack(2, name, value);
        /* the name's bytes are printable ASCII (field_name_byte): str.lower() is ASCII's, and the
           lower-case name a shared str too (its hash kept for this dict and every lookup) */
        PyObject *key;
        {
            Py_ssize_t len = PyUnicode_GET_LENGTH(name);
            char small[64], *low = len <= 64 ? small : PyMem_Malloc((size_t)len);
            if (low == NULL) {
                key = PyErr_NoMemory();
            } else {
                const Py_UCS1 *src = PyUnicode_1BYTE_DATA(name);
                for (Py_ssize_t i = 0; i < len; i++)
                    low[i] = (char)((src[i] >= 'A' && src[i] <= 'Z') ? src[i] + 32 : src[i]);
                key = cached_ascii(low, len);
                if (low != small)
                    PyMem_Free(low);
            }
        }
        PyObject *kept = key != NULL ? PyDict_SetDefault(first, key, value) : NULL;    /* borrowed */
        Py_XDECREF(key);
        Py_DECREF(name);
        Py_DECREF(value);
        if (pair == NULL || kept == NULL) {
            Py_XDECREF(pair);
            goto fail;
        }
        PyList_SET_ITEM(fields, k, pair);
    }
    PyMem_Free(joined);
    PyBuffer_Release(&view);
    return Py_BuildValue("(NnN)", fields, body, first);
fail:
    PyMem_Free(joined);
    Py_XDECREF(fields);
    Py_XDECREF(first);
    PyBuffer_Release(&view);
    return NULL;
}

/* find_urls(text) -> list of str: URL_PATTERN.findall(text) of spamkit.text.tokenize, that is
   re.compile(r"(?:https?://|www\.)[^\s<>\"'()\[\]{}]+", re.IGNORECASE).findall(text), by one
   forward scan: at each position (leftmost first) "http", an optional "s", "://", or "www." (any
   case; re's IGNORECASE also takes U+017F LATIN SMALL LETTER LONG S for "s"), then the longest
   run of at least one character that is not white space (str.isspace, which is re's \s on str)
   nor one of <>"'()[]{}; the scan goes on after the match. tests/test_text.py compares it with
   the regular expression on generated text. */
static int url_body_char(Py_UCS4 c)
{
    switch (c) {
    case '<': case '>': case '"': case '\'': case '(': case ')': case '[': case ']': case '{': case '}':
        return 0;
    default:
        return !Py_UNICODE_ISSPACE(c);
    }
}

static int same_letter(Py_UCS4 c, char lower)
{
    return c == (Py_UCS4)lower || c == (Py_UCS4)(lower - 32) || (lower == 's' && c == 0x17F);
}

/* find_urls's scan for one string width (a constant kind, inlined: each width its own loop,
   the characters read without asking the width each time); -1 on an error */
static ALWAYS_INLINE int urls_scan(PyObject *out, PyObject *text, int kind, const void *data, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i + 4 < n) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        Py_ssize_t after = -1;                       /* where the body of a URL starting at i starts */
        if (c == 'h' || c == 'H') {
            if (same_letter(PyUnicode_READ(kind, data, i + 1), 't') && same_letter(PyUnicode_READ(kind, data, i + 2), 't')
                    && same_letter(PyUnicode_READ(kind, data, i + 3), 'p')) {
                Py_ssize_t j = i + 4;
                if (same_letter(PyUnicode_READ(kind, data, j), 's'))
                    j++;
                if (j + 3 <= n && PyUnicode_READ(kind, data, j) == ':' && PyUnicode_READ(kind, data, j + 1) == '/'
                        && PyUnicode_READ(kind, data, j + 2) == '/')
                    after = j + 3;
            }
        } else if (c == 'w' || c == 'W') {
            if (same_letter(PyUnicode_READ(kind, data, i + 1), 'w') && same_letter(PyUnicode_READ(kind, data, i + 2), 'w')
                    && PyUnicode_READ(kind, data, i + 3) == '.')
                after = i + 4;
        }
        if (after >= 0 && after < n && url_body_char(PyUnicode_READ(kind, data, after))) {
            Py_ssize_t end = after + 1;
            while (end < n && url_body_char(PyUnicode_READ(kind, data, end)))
                end++;
            PyObject *url = PyUnicode_Substring(text, i, end);
            if (url == NULL || PyList_Append(out, url) < 0) {
                Py_XDECREF(url);
                return -1;
            }
            Py_DECREF(url);
            i = end;
            continue;
        }
        i++;
    }
    return 0;
}

static PyObject *find_urls(PyObject *self, PyObject *args)
{
    PyObject *text;
    if (!PyArg_ParseTuple(args, "U:find_urls", &text))
        return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    int rc = kind == PyUnicode_1BYTE_KIND ? urls_scan(out, text, PyUnicode_1BYTE_KIND, data, n)
             : kind == PyUnicode_2BYTE_KIND ? urls_scan(out, text, PyUnicode_2BYTE_KIND, data, n)
             : urls_scan(out, text, PyUnicode_4BYTE_KIND, data, n);
    if (rc < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* url_host_tokens(urls, fallback, out): for each str of the list urls, "url:" + each host that
   spamkit.text.tokenize.url_hosts(url) gives (the host, and its last two labels where it has
   more than two and is not a dotted number), appended to the list out -- what the mail
   analyzer's tokens.extend("url:" + h for h in url_hosts(url)) appends. An ASCII URL is read
   here, as the regular expression ^(?:[a-z][a-z0-9+.\-]*://)?(?:[^@/?#]*@)?([^/?#:\s]+)
   (IGNORECASE) reads url.strip(), its alternatives tried in the order a backtracking matcher
   tries them; any other goes to fallback(url) (url_hosts itself). tests/test_text.py compares. */
static int host_byte(unsigned char c)
{
    return !(c == '/' || c == '?' || c == '#' || c == ':' || ascii_space(c));
}

static Py_ssize_t host_end(const unsigned char *d, Py_ssize_t at, Py_ssize_t n)
{
    Py_ssize_t e = at;
    while (e < n && host_byte(d[e]))
        e++;
    return e;
}

/* the host's span after position p (the userinfo tried first), or 0 when there is none */
static int host_after(const unsigned char *d, Py_ssize_t p, Py_ssize_t n, Py_ssize_t *a, Py_ssize_t *b)
{
    Py_ssize_t q = p;
    while (q < n && d[q] != '@' && d[q] != '/' && d[q] != '?' && d[q] != '#')
        q++;
    if (q < n && d[q] == '@') {
        Py_ssize_t e = host_end(d, q + 1, n);
        if (e > q + 1) {
            *a = q + 1;
            *b = e;
            return 1;
        }
    }
    Py_ssize_t e = host_end(d, p, n);
    if (e > p) {
        *a = p;
        *b = e;
        return 1;
    }
    return 0;
}

static int append_url_token(PyObject *out, const char *host, Py_ssize_t len)
{
    PyObject *token = PyUnicode_New(4 + len, 127);
    if (token == NULL)
        return -1;
    Py_UCS1 *t = PyUnicode_1BYTE_DATA(token);
    memcpy(t, "url:", 4);
    memcpy(t + 4, host, (size_t)len);
    int rc = PyList_Append(out, token);
    Py_DECREF(token);
    return rc;
}

static PyObject *url_host_tokens(PyObject *self, PyObject *args)
{
    PyObject *urls, *fallback, *out;
    if (!PyArg_ParseTuple(args, "O!OO!:url_host_tokens", &PyList_Type, &urls, &fallback, &PyList_Type, &out))
        return NULL;
    char small[512];
    for (Py_ssize_t u = 0; u < PyList_GET_SIZE(urls); u++) {
        PyObject *url = PyList_GET_ITEM(urls, u);
        if (!PyUnicode_Check(url)) {
            PyErr_SetString(PyExc_TypeError, "url_host_tokens: every URL must be a str");
            return NULL;
        }
        if (!PyUnicode_IS_ASCII(url)) {
            Py_INCREF(url);
            PyObject *hosts = PyObject_CallOneArg(fallback, url);
            Py_DECREF(url);
            if (hosts == NULL)
                return NULL;
            PyObject *seq = PySequence_Fast(hosts, "url_host_tokens: fallback must return a sequence");
            Py_DECREF(hosts);
            if (seq == NULL)
                return NULL;
            for (Py_ssize_t h = 0; h < PySequence_Fast_GET_SIZE(seq); h++) {
                PyObject *token = PyUnicode_FromFormat("url:%S", PySequence_Fast_GET_ITEM(seq, h));
                if (token == NULL || PyList_Append(out, token) < 0) {
                    Py_XDECREF(token);
                    Py_DECREF(seq);
                    return NULL;
                }
                Py_DECREF(token);
            }
            Py_DECREF(seq);
            continue;
        }
        const unsigned char *d = PyUnicode_1BYTE_DATA(url);
        Py_ssize_t lo = 0, n = PyUnicode_GET_LENGTH(url);
        ascii_strip(d, &lo, &n);                                       /* url.strip() */
        d += lo;
        n -= lo;
        Py_ssize_t a = 0, b = 0;
        int found = 0;
        if (n > 0 && ascii_letter(d[0])) {                              /* a scheme, tried first */
            Py_ssize_t p = 1;
            while (p < n && (ascii_letter(d[p]) || (d[p] >= '0' && d[p] <= '9') || d[p] == '+' || d[p] == '.' || d[p] == '-'))
                p++;
            if (p + 3 <= n && d[p] == ':' && d[p + 1] == '/' && d[p + 2] == '/')
                found = host_after(d, p + 3, n, &a, &b);
        }
        if (!found)
            found = host_after(d, 0, n, &a, &b);
        if (!found)
            continue;
        while (a < b && d[a] == '.')                                 /* .lower().strip(".") */
            a++;
        while (b > a && d[b - 1] == '.')
            b--;
        Py_ssize_t len = b - a;
        char *host = ascii_lowered(d, a, b, small, sizeof(small));
        if (host == NULL)
            return NULL;
        char *h = host;
        if (len >= 4 && memcmp(h, "www.", 4) == 0) {
            h += 4;
            len -= 4;
        }
        int rc = 0;
        if (len > 0) {
            Py_ssize_t dots = 0, last = -1, before_last = -1;
            int all_digits = 1, label_len = 0;
            for (Py_ssize_t i = 0; i < len; i++) {
                if (h[i] == '.') {
                    if (label_len == 0)
                        all_digits = 0;                              /* "".isdigit() is False */
                    dots++;
                    before_last = last;
                    last = i;
                    label_len = 0;
                } else {
                    if (h[i] < '0' || h[i] > '9')
                        all_digits = 0;
                    label_len++;
                }
            }
            if (label_len == 0)
                all_digits = 0;
            rc = append_url_token(out, h, len);
            if (rc == 0 && dots >= 2 && !all_digits)
                rc = append_url_token(out, h + before_last + 1, len - before_last - 1);
        }
        if (host != small)
            PyMem_Free(host);
        if (rc < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

/* received_ips(values, out): for each str of the list values (the Received fields), each dotted
   quad the regular expression (?<![\d.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\d.])
   finds (\d: Unicode decimal digits) whose four numbers are at most 255, appended to the list
   out as "received:ip:A.B.C.D", "received:ip:A.B.C" and "received:ip:A.B", digits as written
   (spamkit.text.Analyzer's received_ips tokens). A run of digits matches a group only whole:
   a shorter match would leave a digit where the pattern needs a dot or an end. */
static PyObject *received_ips(PyObject *self, PyObject *args)
{
    PyObject *values, *out;
    if (!PyArg_ParseTuple(args, "O!O!:received_ips", &PyList_Type, &values, &PyList_Type, &out))
        return NULL;
    for (Py_ssize_t v = 0; v < PyList_GET_SIZE(values); v++) {
        PyObject *text = PyList_GET_ITEM(values, v);
        if (!PyUnicode_Check(text)) {
            PyErr_SetString(PyExc_TypeError, "received_ips: every value must be a str");
            return NULL;
        }
        int kind = PyUnicode_KIND(text);
        const void *data = PyUnicode_DATA(text);
        Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0;
        while (i < n) {
            Py_UCS4 c = PyUnicode_READ(kind, data, i);
            if (!is_decimal(c) || (i > 0 && (is_decimal(PyUnicode_READ(kind, data, i - 1))
                                            || PyUnicode_READ(kind, data, i - 1) == '.'))) {
                i++;
                continue;
            }
            Py_ssize_t at = i, ends[4];
            int values4[4], ok = 1;
            for (int g = 0; g < 4 && ok; g++) {
                Py_ssize_t start = at;
                int number = 0;
                while (at < n && is_decimal(PyUnicode_READ(kind, data, at))) {
                    number = number * 10 + Py_UNICODE_TODECIMAL(PyUnicode_READ(kind, data, at));
                    at++;
                    if (at - start > 3)
                        break;
                }
                if (at - start < 1 || at - start > 3 || (at < n && is_decimal(PyUnicode_READ(kind, data, at)))) {
                    ok = 0;
                    break;
                }
                ends[g] = at;
                values4[g] = number;
                if (g < 3) {
                    if (at < n && PyUnicode_READ(kind, data, at) == '.')
                        at++;
                    else
                        ok = 0;
                } else if (at < n && PyUnicode_READ(kind, data, at) == '.') {
                    ok = 0;
                }
            }
            if (!ok) {
                i++;
                continue;
            }
            if (values4[0] <= 255 && values4[1] <= 255 && values4[2] <= 255 && values4[3] <= 255) {
                for (int g = 3; g >= 1; g--) {
                    PyObject *token = literal_and("received:ip:", text, i, ends[g], "");
                    if (token == NULL || PyList_Append(out, token) < 0) {
                        Py_XDECREF(token);
                        return NULL;
                    }
                    Py_DECREF(token);
                }
            }
            i = ends[3];
        }
    }
    Py_RETURN_NONE;
}

/* header_words(fields, max_len, long_token, out): for each (name, value) of fields (a list or tuple),
   appends to the list out the words of value prefixed "name:" (words() with that prefix): the
   field tokens of spamkit.text.Analyzer for every header field, in one call. */
static PyObject *header_words(PyObject *self, PyObject *args)
{
    PyObject *fields, *long_token, *out;
    Py_ssize_t max_len;
    if (!PyArg_ParseTuple(args, "OnUO!:header_words", &fields, &max_len, &long_token, &PyList_Type, &out))
        return NULL;
    if (!PyList_Check(fields) && !PyTuple_Check(fields)) {
        PyErr_SetString(PyExc_TypeError, "header_words: fields must be a list or tuple");
        return NULL;
    }
    for (Py_ssize_t f = 0; f < PySequence_Fast_GET_SIZE(fields); f++) {
        PyObject *field = PySequence_Fast_GET_ITEM(fields, f);
        if (!PyTuple_Check(field) || PyTuple_GET_SIZE(field) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(field, 0))
                || !PyUnicode_Check(PyTuple_GET_ITEM(field, 1))) {
            PyErr_SetString(PyExc_TypeError, "header_words: each field must be a (name, value) tuple of str");
            return NULL;
        }
        PyObject *name = PyTuple_GET_ITEM(field, 0);
        PyObject *prefix = literal_and("", name, 0, PyUnicode_GET_LENGTH(name), ":");
        if (prefix == NULL)
            return NULL;
        int rc = words_into(out, PyTuple_GET_ITEM(field, 1), max_len, prefix, long_token);
        Py_DECREF(prefix);
        if (rc < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}


/* digit_shapes(text, cap, out): for each run of decimal digits in text (what the regular
   expression \d+ finds in a str: Py_UNICODE_ISDECIMAL), appends "shape:dN" to the list out, N
   the run's length capped at cap (spamkit.text.Analyzer's digit_shapes tokens). */
static PyObject *shape_tokens[65];

static PyObject *digit_shapes(PyObject *self, PyObject *args)
{
    PyObject *text, *out;
    int cap;
    if (!PyArg_ParseTuple(args, "UiO!:digit_shapes", &text, &cap, &PyList_Type, &out))
        return NULL;
    if (cap < 1 || cap > 64) {
        PyErr_SetString(PyExc_ValueError, "digit_shapes: cap must be in [1, 64]");
        return NULL;
    }
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0;
    while (i < n) {
        if (!is_decimal(PyUnicode_READ(kind, data, i))) {
            i++;
            continue;
        }
        Py_ssize_t start = i;
        while (i < n && is_decimal(PyUnicode_READ(kind, data, i)))
            i++;
        int len = i - start > cap ? cap : (int)(i - start);
        if (shape_tokens[len] == NULL) {
            shape_tokens[len] = PyUnicode_FromFormat("shape:d%d", len);
            if (shape_tokens[len] == NULL)
                return NULL;
        }
        if (PyList_Append(out, shape_tokens[len]) < 0)
            return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ logistic steps */

#include <math.h>
#include <stdarg.h>

static int get_buffer(PyObject *o, Py_buffer *view, const char *format, Py_ssize_t itemsize, int writable,
                      const char *what)
{
    if (PyObject_GetBuffer(o, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0) {
        view->obj = NULL;                       /* nothing to release */
        return -1;
    }
    /* NumPy writes int64 as 'l' (C long) on LP64 systems and 'q' elsewhere; a native byte-order
       prefix may come first */
    const char *f = view->format ? view->format : "";
    if (*f == '@' || *f == '=')
        f++;
    int same = strcmp(f, format) == 0 || (format[0] == 'q' && strcmp(f, "l") == 0)
               || (format[0] == 'Q' && strcmp(f, "L") == 0);
    if (view->ndim != 1 || view->itemsize != itemsize || !same) {
        PyErr_Format(PyExc_TypeError, "%s must be a one-dimensional array of format '%s'", what, format);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The column indices of a CSR matrix as it holds them: int32 (scipy's usual) or int64, not copied.
   Sets *narrow to 1 for int32. */
static int get_index_buffer(PyObject *o, Py_buffer *view, int *narrow)
{
    if (PyObject_GetBuffer(o, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        view->obj = NULL;
        return -1;
    }
    const char *fmt = view->format ? view->format : "";
    if (*fmt == '@' || *fmt == '=')
        fmt++;
    *narrow = view->itemsize == 4 && strcmp(fmt, "i") == 0;
    if (view->ndim != 1 || !(*narrow || (view->itemsize == 8 && (strcmp(fmt, "q") == 0 || strcmp(fmt, "l") == 0)))) {
        PyErr_SetString(PyExc_TypeError, "indices must be a one-dimensional array of int32 or int64");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* indptr within [0, nnz], non-decreasing; every column within [0, n_cols) */
static int csr_fits(const long long *ptr, Py_ssize_t n_rows, const void *idx, int narrow, Py_ssize_t nnz,
                    Py_ssize_t n_cols)
{
    if (n_rows < 0)
        return 0;
    for (Py_ssize_t i = 0; i <= n_rows; i++)
        if (ptr[i] < 0 || ptr[i] > nnz || (i && ptr[i] < ptr[i - 1]))
            return 0;
    for (Py_ssize_t k = 0; k < nnz; k++) {
        long long c = narrow ? (long long)((const int32_t *)idx)[k] : ((const long long *)idx)[k];
        if (c < 0 || c >= n_cols)
            return 0;
    }
    return 1;
}

/* releases each view of a NULL-terminated list; a view never acquired (obj NULL: zero-initialised,
   or left so by a failed get_buffer) is skipped by PyBuffer_Release */
static void release_views(Py_buffer *view, ...)
{
    va_list more;
    va_start(more, view);
    for (; view != NULL; view = va_arg(more, Py_buffer *))
        PyBuffer_Release(view);
    va_end(more);
}

/* pread_held(fd, n, offset) -> bytes: os.pread without letting go of the GIL. A small read of
   a file the page cache holds is a copy of a few kilobytes; letting go of the GIL for it, as
   os.pread does, hands the GIL to whichever thread waits for it (a process pool's feeder and
   manager threads while `spamkit train` reads), and the reading thread waits for it back
   (spamkit.corpus.tree.Spool.read_at). Short reads at the end of the file as pread gives them. */
static PyObject *pread_held(PyObject *self, PyObject *args)
{
    int fd;
    Py_ssize_t n;
    long long offset;
    if (!PyArg_ParseTuple(args, "inL:pread_held", &fd, &n, &offset))
        return NULL;
    if (n < 0 || offset < 0) {
        PyErr_SetString(PyExc_ValueError, "pread_held: negative size or offset");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, n);
    if (out == NULL)
        return NULL;
    char *buf = PyBytes_AS_STRING(out);
    Py_ssize_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, (size_t)(n - got), (off_t)(offset + got));
        if (r < 0) {
            if (errno == EINTR) {
                if (PyErr_CheckSignals() < 0) {
                    Py_DECREF(out);
                    return NULL;
                }
                continue;
            }
            Py_DECREF(out);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        if (r == 0)
            break;
        got += r;
    }
    if (got < n && _PyBytes_Resize(&out, got) < 0)
        return NULL;
    return out;
}

/* spamkit.corpus.tree.plain_tar_index's common case: the canonical headers at buf[at:],
   one after another, as long as each lies whole in buf. A header is canonical when its
   size and checksum fields are spaces, octal digits, then NULs or spaces; its checksum adds
   up (the field counted as spaces); and its type is a regular file ('0', NUL, '7'), a folder
   ('5', or NUL with a name ending in '/') of size 0, or a link/device/FIFO ('1'-'4', '6') of
   size 0 (skipped). Stops at the first header that is not, or at the end of buf; the Python
   loop reads that one (and says what it is: the end marker, or something for tarfile).
   Returns (entries, at): entries as plain_tar_index gives them (name decoded with
   `encoding` and surrogateescape, folder names without trailing slashes, the ustar prefix
   joined with "/"; the data offset is base + position in buf). */
static int tar_octal(const unsigned char *f, int n, long long *out)
{
    int i = 0;
    long long v = 0;
    int digits = 0;
    while (i < n && f[i] == ' ')
        i++;
    while (i < n && f[i] >= '0' && f[i] <= '7') {
        if (digits >= 20)
            return 0;
        v = v * 8 + (f[i] - '0');
        digits++;
        i++;
    }
    if (digits == 0)
        return 0;
    while (i < n && (f[i] == 0 || f[i] == ' '))
        i++;
    if (i != n)
        return 0;
    *out = v;
    return 1;
}

static PyObject *tar_name(const unsigned char *f, Py_ssize_t n, const char *encoding, int strip_slash)
{
    const unsigned char *end = memchr(f, 0, (size_t)n);
    Py_ssize_t len = end ? (Py_ssize_t)(end - f) : n;
    if (strip_slash)
        while (len > 0 && f[len - 1] == '/')
            len--;
    return PyUnicode_Decode((const char *)f, len, encoding, "surrogateescape");
}

static PyObject *tar_headers(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t at;
    long long base;
    const char *encoding;
    if (!PyArg_ParseTuple(args, "y*nLs:tar_headers", &view, &at, &base, &encoding))
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t len = view.len;
    while (at >= 0 && at + 512 <= len) {
        const unsigned char *h = buf + at;
        long long stored, size;
        if (!tar_octal(h + 148, 8, &stored) || !tar_octal(h + 124, 12, &size))
            break;
        long long sum = 256;                           /* the checksum field as eight spaces */
        for (int i = 0; i < 512; i++)
            sum += (i >= 148 && i < 156) ? 0 : h[i];
        if (sum != stored)
            break;
        unsigned char kind = h[156];
        const unsigned char *nul = memchr(h, 0, 100);
        Py_ssize_t name_len = nul ? (Py_ssize_t)(nul - h) : 100;
        if (kind == 0 && name_len > 0 && h[name_len - 1] == '/')
            kind = '5';
        int is_file = kind == '0' || kind == 0 || kind == '7';
        int is_dir = kind == '5';
        int skipped = kind == '1' || kind == '2' || kind == '3' || kind == '4' || kind == '6';
        if (!is_file && !((is_dir || skipped) && size == 0))
            break;
        if (skipped) {
            at += 512;
            continue;
        }
        PyObject *name = tar_name(h, 100, encoding, is_dir);
        if (name == NULL)
            goto fail;
        if (h[345] != 0) {
            PyObject *prefix = tar_name(h + 345, 155, encoding, 0);
            if (prefix == NULL) {
                Py_DECREF(name);
                goto fail;
            }
            PyObject *joined = PyUnicode_FromFormat("%U/%U", prefix, name);
            Py_DECREF(prefix);
            Py_DECREF(name);
            if (joined == NULL)
                goto fail;
            name = joined;
        }
        PyObject *entry = Py_BuildValue("(NOLL)", name, is_dir ? Py_True : Py_False,
                                        is_dir ? 0LL : size, base + at + 512);
        if (entry == NULL || PyList_Append(out, entry) < 0) {
            Py_XDECREF(entry);
            goto fail;
        }
        Py_DECREF(entry);
        at += is_dir ? 512 : 512 + (size + 511) / 512 * 512;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(Nn)", out, at);
fail:
    PyBuffer_Release(&view);
    Py_DECREF(out);
    return NULL;
}

/* spamkit.models.logistic.OnlineLogistic._steps: one gradient step per row of a CSR matrix,
   in row order, each seeing the weights the previous one left:
       z = clip(b + sum_j w_j x_j, -limit, limit);  g = sign * rate * weight_i * (y_i - 1/(1+e^-z))
       w_j += g x_j (the row's columns);  b += g
   A row of weight 0 is skipped (its step would add zeros). Returns the new b; w is updated in place. */
static PyObject *logistic_steps(PyObject *self, PyObject *args)
{
    PyObject *o_indptr, *o_indices, *o_data, *o_w, *o_codes, *o_weights;
    double b, rate, sign, limit;
    if (!PyArg_ParseTuple(args, "OOOOdOOddd:logistic_steps", &o_indptr, &o_indices, &o_data, &o_w, &b,
                          &o_codes, &o_weights, &rate, &sign, &limit))
        return NULL;
    Py_buffer indptr = {0}, indices = {0}, data = {0}, w = {0}, codes = {0}, weights = {0};
    int narrow;
    if (get_buffer(o_indptr, &indptr, "q", 8, 0, "indptr") < 0 || get_index_buffer(o_indices, &indices, &narrow) < 0
            || get_buffer(o_data, &data, "d", 8, 0, "data") < 0 || get_buffer(o_w, &w, "d", 8, 1, "w") < 0
            || get_buffer(o_codes, &codes, "d", 8, 0, "codes") < 0
            || get_buffer(o_weights, &weights, "d", 8, 0, "weights") < 0) {
        release_views(&indptr, &indices, &data, &w, &codes, &weights, NULL);
        return NULL;
    }
    const long long *ptr = indptr.buf;
    const int32_t *col32 = narrow ? indices.buf : NULL;
    const long long *col64 = narrow ? NULL : indices.buf;
#define COL(k) (narrow ? (long long)col32[k] : col64[k])
    const double *val = data.buf, *y = codes.buf, *sw = weights.buf;
    double *wv = w.buf;
    Py_ssize_t n_rows = indptr.shape[0] - 1, nnz = indices.shape[0], n_cols = w.shape[0];
    /* indices checked once, before any step */
    int bad = n_rows < 0 || codes.shape[0] < n_rows || weights.shape[0] < n_rows || data.shape[0] != nnz
              || !csr_fits(ptr, n_rows, indices.buf, narrow, nnz, n_cols);
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n_rows; i++) {
            if (sw[i] == 0.0)
                continue;                    /* a step of weight 0 changes nothing: skipped */
            double dot = 0.0;
            for (long long k = ptr[i]; k < ptr[i + 1]; k++)
                dot += wv[COL(k)] * val[k];
            double z = b + dot;
            z = z < -limit ? -limit : (z > limit ? limit : z);
            double g = sign * rate * sw[i] * (y[i] - 1.0 / (1.0 + exp(-z)));
            for (long long k = ptr[i]; k < ptr[i + 1]; k++)
                wv[COL(k)] += g * val[k];
            b += g;
        }
        Py_END_ALLOW_THREADS
    }
#undef COL
    release_views(&indptr, &indices, &data, &w, &codes, &weights, NULL);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "logistic_steps: the matrix, weights and labels do not fit together");
        return NULL;
    }
    return PyFloat_FromDouble(b);
}

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static int32_t murmurhash3_32(const unsigned char *data, Py_ssize_t len, uint32_t seed)
{
    const uint32_t c1 = 0xcc9e2d51u, c2 = 0x1b873593u;
    uint32_t h1 = seed;
    Py_ssize_t nblocks = len / 4;
    for (Py_ssize_t i = 0; i < nblocks; i++) {
        const unsigned char *b = data + 4 * i;      /* little-endian, whatever the machine */
        uint32_t k1 = (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
        k1 *= c1; k1 = rotl32(k1, 15); k1 *= c2;
        h1 ^= k1; h1 = rotl32(h1, 13); h1 = h1 * 5 + 0xe6546b64u;
    }
    const unsigned char *tail = data + 4 * nblocks;
    uint32_t k1 = 0;
    switch (len & 3) {
    case 3: k1 ^= (uint32_t)tail[2] << 16; /* fall through */
    case 2: k1 ^= (uint32_t)tail[1] << 8;  /* fall through */
    case 1: k1 ^= (uint32_t)tail[0];
        k1 *= c1; k1 = rotl32(k1, 15); k1 *= c2; h1 ^= k1;
    }
    h1 ^= (uint32_t)len;
    h1 ^= h1 >> 16; h1 *= 0x85ebca6bu; h1 ^= h1 >> 13; h1 *= 0xc2b2ae35u; h1 ^= h1 >> 16;
    return (int32_t)h1;
}

static PyObject *hash_columns(PyObject *self, PyObject *args)
{
    PyObject *tokens;
    long long n_features;
    if (!PyArg_ParseTuple(args, "OL", &tokens, &n_features))
        return NULL;
    if (n_features < 1 || n_features > 2147483647LL) {
        PyErr_SetString(PyExc_ValueError, "hash_columns: n_features must be in [1, 2**31 - 1]");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(tokens, "hash_columns: tokens must be a sequence of str");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (out == NULL) {
        Py_DECREF(seq);
        return NULL;
    }
    int32_t *cols = (int32_t *)PyBytes_AS_STRING(out);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!PyUnicode_Check(items[i])) {
            PyErr_Format(PyExc_TypeError, "hash_columns: a token must be a str, got %.100s", Py_TYPE(items[i])->tp_name);
            Py_DECREF(seq); Py_DECREF(out);
            return NULL;
        }
        Py_ssize_t size;
        const char *utf8 = PyUnicode_AsUTF8AndSize(items[i], &size);   /* raises on a lone surrogate, as sklearn */
        if (utf8 == NULL) {
            Py_DECREF(seq); Py_DECREF(out);
            return NULL;
        }
        int32_t h = murmurhash3_32((const unsigned char *)utf8, size, 0);
        long long column = h == INT32_MIN ? (2147483647LL - (n_features - 1)) % n_features
                                          : (h < 0 ? -(long long)h : (long long)h) % n_features;
        cols[i] = (int32_t)column;
    }
    Py_DECREF(seq);
    return out;
}

/* known_columns(index, tokens, out): appends index[token] to the list out for each token of
   tokens that index holds, in order (spamkit.features.count_matrix's lookup of a fixed
   vocabulary: [j for j in map(index.get, tokens) if j is not None], one C loop). index must
   be a dict (a subclass's __missing__ is not called, as dict.get does not call it). */
static PyObject *known_columns(PyObject *self, PyObject *args)
{
    PyObject *index, *tokens, *out;
    if (!PyArg_ParseTuple(args, "O!OO!", &PyDict_Type, &index, &tokens, &PyList_Type, &out))
        return NULL;
    PyObject *seq = PySequence_Fast(tokens, "known_columns: tokens must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *column = PyDict_GetItemWithError(index, items[i]);   /* borrowed */
        if (column == NULL) {
            if (PyErr_Occurred()) {                                      /* an unhashable token */
                Py_DECREF(seq);
                return NULL;
            }
            continue;
        }
        if (PyList_Append(out, column) < 0) {
            Py_DECREF(seq);
            return NULL;
        }
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

/* known_counts(index, tokens) -> (columns, counts) or None: one document's row under a fixed
   vocabulary, what spamkit.features.count_matrix makes of a single token list (its known
   columns, then numpy.unique(..., return_counts=True)): the distinct columns of the tokens the
   dict index holds, ascending, as a bytearray of int32, and how often each occurs, as a
   bytearray of float64 (writable: the representation rewrites them in place). None when a
   column is not an int in [0, 2^31) -- the Python path then says what is wrong. Only exact
   str tokens are looked up here (a str's == runs no Python code, so the list cannot change
   under the loop); any other token: None as well. */
/* Sort m columns (each in [0, 2^31)) ascending: insertion sort for a few, else a least
   significant digit radix sort, a byte a pass, a pass skipped where every column has the same
   byte (the top byte of a vocabulary under 16.7 million terms): three passes over a 20 KB
   message's 600 columns cost less than a third of qsort's comparisons through a function
   pointer. tmp holds m columns. */
static void sort_columns(int32_t *cols, Py_ssize_t m, int32_t *tmp)
{
    if (m < 32) {
        for (Py_ssize_t i = 1; i < m; i++) {
            int32_t v = cols[i];
            Py_ssize_t j = i;
            for (; j > 0 && cols[j - 1] > v; j--)
                cols[j] = cols[j - 1];
            cols[j] = v;
        }
        return;
    }
    int32_t *src = cols, *dst = tmp;
    for (int shift = 0; shift < 32; shift += 8) {
        Py_ssize_t start[256] = {0};
        for (Py_ssize_t i = 0; i < m; i++)
            start[((uint32_t)src[i] >> shift) & 0xFF]++;
        if (start[((uint32_t)src[0] >> shift) & 0xFF] == m)
            continue;                                       /* one byte value: already in order */
        Py_ssize_t at = 0;
        for (int d = 0; d < 256; d++) {
            Py_ssize_t n = start[d];
            start[d] = at;
            at += n;
        }
        for (Py_ssize_t i = 0; i < m; i++)
            dst[start[((uint32_t)src[i] >> shift) & 0xFF]++] = src[i];
        int32_t *swap = src;
        src = dst;
        dst = swap;
    }
    if (src != cols)
        memcpy(cols, src, (size_t)m * sizeof(int32_t));
}

/* (columns, counts) of m columns looked up (cols, freed here; room for 2m: the sort's scratch
   is its second half): the distinct ones ascending, as int32, and how often each occurs -- as
   float64 in bytearrays (as_double: writable, for the representation to rewrite in place) or
   as int32 in bytes. */
static PyObject *sorted_counts(int32_t *cols, Py_ssize_t m, int as_double)
{
    sort_columns(cols, m, cols + m);
    Py_ssize_t distinct = 0;
    for (Py_ssize_t i = 0; i < m; i++)
        if (i == 0 || cols[i] != cols[i - 1])
            distinct++;
    Py_ssize_t width = as_double ? (Py_ssize_t)sizeof(double) : (Py_ssize_t)sizeof(int32_t);
    PyObject *out_cols = as_double ? PyByteArray_FromStringAndSize(NULL, distinct * (Py_ssize_t)sizeof(int32_t))
                                   : PyBytes_FromStringAndSize(NULL, distinct * (Py_ssize_t)sizeof(int32_t));
    PyObject *out_counts = out_cols == NULL ? NULL : as_double ? PyByteArray_FromStringAndSize(NULL, distinct * width)
                                                               : PyBytes_FromStringAndSize(NULL, distinct * width);
    if (out_counts == NULL) {
        Py_XDECREF(out_cols);
        PyMem_Free(cols);
        return NULL;
    }
    int32_t *uc = (int32_t *)(as_double ? PyByteArray_AS_STRING(out_cols) : PyBytes_AS_STRING(out_cols));
    char *counts = as_double ? PyByteArray_AS_STRING(out_counts) : PyBytes_AS_STRING(out_counts);
    Py_ssize_t k = -1;
    for (Py_ssize_t i = 0; i < m; i++) {
        if (i == 0 || cols[i] != cols[i - 1])
            uc[++k] = cols[i];
        if (as_double)
            ((double *)counts)[k] = (i == 0 || cols[i] != cols[i - 1]) ? 1.0 : ((double *)counts)[k] + 1.0;
        else
            ((int32_t *)counts)[k] = (i == 0 || cols[i] != cols[i - 1]) ? 1 : ((int32_t *)counts)[k] + 1;
    }
    PyMem_Free(cols);
    return Py_BuildValue("(NN)", out_cols, out_counts);
}

static PyObject *known_counts(PyObject *self, PyObject *args)
{
    PyObject *index, *tokens;
    if (!PyArg_ParseTuple(args, "O!O!", &PyDict_Type, &index, &PyList_Type, &tokens))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(tokens, i)))
            Py_RETURN_NONE;
    int32_t *cols = PyMem_Malloc((size_t)(n ? 2 * n : 1) * sizeof(int32_t));   /* 2n: see sorted_counts */
    if (cols == NULL)
        return PyErr_NoMemory();
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *column = PyDict_GetItemWithError(index, PyList_GET_ITEM(tokens, i));   /* borrowed */
        if (column == NULL) {
            if (PyErr_Occurred()) {
                PyMem_Free(cols);
                return NULL;
            }
            continue;
        }
        if (!PyLong_CheckExact(column)) {
            PyMem_Free(cols);
            Py_RETURN_NONE;
        }
        int overflow = 0;
        long long value = PyLong_AsLongLongAndOverflow(column, &overflow);
        if (overflow || value < 0 || value > INT32_MAX) {
            PyMem_Free(cols);
            Py_RETURN_NONE;
        }
        cols[m++] = (int32_t)value;
    }
    return sorted_counts(cols, m, 1);
}

/* A fixed vocabulary as one open-addressing table (spamkit.features._frozen_table): frozen_index(index)
   makes it from a dict {str: column} (None if a key is not an exact str or a column not an int in
   [0, 2^31)); frozen_counts(table, tokens) gives what known_counts(index, tokens) gives, with int32
   counts. A dict lookup of a token the dict holds touches four places in memory -- its index
   table, its entry, the key's characters (the token is another str object of equal value) and
   the column's int object -- and on a vocabulary of 178,000 terms each is a cache miss (52 µs
   of lookups a trec07p-dev message against 20 in a dict that fits the cache); a slot here holds
   the hash, the key and the column together: two places. The same hash (PyObject_Hash) and the
   same equality (an exact str equal in value) as the dict, so the same columns. The table holds
   a reference to each key; it is never changed after it is made. */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)0)
#endif

typedef struct {
    Py_hash_t hash;
    PyObject *key;
    int64_t column;
} FrozenSlot;

typedef struct {
    size_t mask;
    FrozenSlot *slots;
} FrozenTable;

static void frozen_free(PyObject *capsule)
{
    FrozenTable *t = PyCapsule_GetPointer(capsule, "spamkit.frozen");
    if (t == NULL)
        return;
    for (size_t i = 0; i <= t->mask; i++)
        Py_XDECREF(t->slots[i].key);
    PyMem_Free(t->slots);
    PyMem_Free(t);
}

static PyObject *frozen_index(PyObject *self, PyObject *args)
{
    PyObject *index;
    if (!PyArg_ParseTuple(args, "O!:frozen_index", &PyDict_Type, &index))
        return NULL;
    Py_ssize_t n = PyDict_GET_SIZE(index);
    size_t size = 16;
    while (size < (size_t)n * 2 + 1)
        size <<= 1;
    FrozenTable *t = PyMem_Malloc(sizeof(FrozenTable));
    FrozenSlot *slots = PyMem_Calloc(size, sizeof(FrozenSlot));
    if (t == NULL || slots == NULL) {
        PyMem_Free(t);
        PyMem_Free(slots);
        return PyErr_NoMemory();
    }
    t->mask = size - 1;
    t->slots = slots;
    PyObject *capsule = PyCapsule_New(t, "spamkit.frozen", frozen_free);
    if (capsule == NULL) {
        PyMem_Free(slots);
        PyMem_Free(t);
        return NULL;
    }
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(index, &pos, &key, &value)) {          /* no Python code runs in the loop */
        if (!PyUnicode_CheckExact(key) || !PyLong_CheckExact(value)) {
            Py_DECREF(capsule);
            Py_RETURN_NONE;
        }
        int overflow = 0;
        long long column = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (overflow || column < 0 || column > INT32_MAX) {
            Py_DECREF(capsule);
            Py_RETURN_NONE;
        }
        Py_hash_t hash = PyObject_Hash(key);                  /* a str's: cached, never fails */
        size_t at = (size_t)hash & t->mask;
        while (slots[at].key != NULL)
            at = (at + 1) & t->mask;
        Py_INCREF(key);
        slots[at].key = key;
        slots[at].hash = hash;
        slots[at].column = column;
    }
    return capsule;
}

static PyObject *frozen_counts(PyObject *self, PyObject *args)
{
    PyObject *capsule, *tokens;
    if (!PyArg_ParseTuple(args, "OO!:frozen_counts", &capsule, &PyList_Type, &tokens))
        return NULL;
    FrozenTable *t = PyCapsule_GetPointer(capsule, "spamkit.frozen");
    if (t == NULL)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(tokens, i)))
            Py_RETURN_NONE;
    int32_t *cols = PyMem_Malloc((size_t)(n ? 2 * n : 1) * sizeof(int32_t));   /* 2n: see sorted_counts */
    if (cols == NULL)
        return PyErr_NoMemory();
    /* Three passes, so that the cache misses of many tokens overlap instead of following one
       another (a message scored alone finds the table out of the cache: 70 µs a 20 KB message
       one token at a time): each token's hash, prefetching its slot; each token's first slot
       with its hash (or an empty one), prefetching that slot's key; then the keys compared,
       probing on past a slot whose key only shares the hash. */
    Py_hash_t *hashes = PyMem_Malloc((size_t)(n ? n : 1) * (sizeof(Py_hash_t) + sizeof(size_t)));
    if (hashes == NULL) {
        PyMem_Free(cols);
        return PyErr_NoMemory();
    }
    size_t *first = (size_t *)(hashes + n);
    FrozenSlot *slots = t->slots;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_hash_t hash = PyObject_Hash(PyList_GET_ITEM(tokens, i));
        if (hash == -1) {
            PyMem_Free(hashes);
            PyMem_Free(cols);
            return NULL;
        }
        hashes[i] = hash;
        PREFETCH(&slots[(size_t)hash & t->mask]);
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        size_t at = (size_t)hashes[i] & t->mask;
        while (slots[at].key != NULL && slots[at].hash != hashes[i])
            at = (at + 1) & t->mask;
        first[i] = at;
        if (slots[at].key != NULL) {
            PREFETCH(slots[at].key);
            PREFETCH((const char *)slots[at].key + 64);
        }
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *token = PyList_GET_ITEM(tokens, i);
        Py_hash_t hash = hashes[i];
        for (size_t at = first[i]; slots[at].key != NULL; at = (at + 1) & t->mask) {
            if (slots[at].hash == hash && (slots[at].key == token || PyUnicode_Compare(slots[at].key, token) == 0)) {
                cols[m++] = (int32_t)slots[at].column;
                break;
            }
        }
    }
    PyMem_Free(hashes);
    return sorted_counts(cols, m, 0);
}

/* grow_columns(index, terms) -> bytes of int32: each term's column in the dict index, a term
   not in it getting the next one, len(index) -- [index.setdefault(t, len(index)) for t in terms]
   as int32, which is the definition (spamkit.features.count_matrix, tests/test_features.py): the
   driver's lookup of the terms a worker numbered for the first time. */
static PyObject *grow_columns(PyObject *self, PyObject *args)
{
    PyObject *index, *terms;
    if (!PyArg_ParseTuple(args, "O!O!", &PyDict_Type, &index, &PyList_Type, &terms))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(terms);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (out == NULL)
        return NULL;
    int32_t *columns = (int32_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(terms) && i < n; i++) {
        PyObject *term = PyList_GET_ITEM(terms, i);
        Py_INCREF(term);                                   /* a key's == may run Python code */
        PyObject *column = PyDict_GetItemWithError(index, term);          /* borrowed */
        long long value;
        if (column == NULL) {
            if (PyErr_Occurred())
                goto fail_term;
            Py_ssize_t next = PyDict_GET_SIZE(index);
            if (next > INT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "grow_columns: more columns than 32-bit numbers");
                goto fail_term;
            }
            PyObject *fresh = PyLong_FromSsize_t(next);
            if (fresh == NULL || PyDict_SetItem(index, term, fresh) < 0) {
                Py_XDECREF(fresh);
                goto fail_term;
            }
            Py_DECREF(fresh);
            value = next;
        } else {
            value = PyLong_AsLongLong(column);
            if (value == -1 && PyErr_Occurred())
                goto fail_term;
            if (value < INT32_MIN || value > INT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "grow_columns: a column does not fit 32 bits");
                goto fail_term;
            }
        }
        Py_DECREF(term);
        columns[i] = (int32_t)value;
        continue;
    fail_term:
        Py_DECREF(term);
        Py_DECREF(out);
        return NULL;
    }
    if (PyList_GET_SIZE(terms) != n) {
        PyErr_SetString(PyExc_RuntimeError, "grow_columns: the list of terms changed size");
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

/* Numbering: a worker's numbers of the terms it has seen (spamkit.features.new_numbering), in
   place of the dict of spamkit.features.number_terms's Python loop, and that loop in one call:
   number(token_lists) -> (new_terms, ids, counts, sizes), the same four things: for each
   document its distinct tokens in order of first appearance, each one's number (a term not
   seen before gets the next number, len(self), and is appended to new_terms) and how often it
   occurs; ids and counts bytes of int32, sizes (distinct tokens per document) bytes of int64.

   One open-addressing table (linear probing, at most 2/3 full) maps a term to its number, the
   document it was last seen in and its rank among that document's distinct terms; by number,
   the term itself (a strong reference). A token costs one probe of the table: its number and
   its place in the current document from the slot found (the loop it replaces tallied each
   document in a table of its own, then looked each distinct term up in the dict, and read its
   number back from a Python int). Keys compare as a dict compares them: identity, then hash
   and ==; two str by their length, kind and code units (what str == compares). Any other
   hashable token is compared with ==, which may run Python code: the table holds its keys,
   and a call that comes back into number() while one runs raises. */
typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Buffer;

static int buffer_put(Buffer *b, const void *item, Py_ssize_t size)
{
    if (b->len + size > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + size)
            cap *= 2;
        char *data = PyMem_Realloc(b->data, (size_t)cap);
        if (data == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        b->data = data;
        b->cap = cap;
    }
    if (size > 0)
        memcpy(b->data + b->len, item, (size_t)size);
    b->len += size;
    return 0;
}

/* how many tokens ahead Numbering.number asks for a slot */
#define NUMBERING_AHEAD 8

/* A slot holds its term itself, so that finding a token already numbered reads one slot (and,
   for a token that is not the very str object numbered, the term's characters), not the
   slot and then the table of terms by number: the table is larger than the caches, and the
   second read was a second wait for memory. 32 bits of the hash tell most terms apart first;
   the whole hash, kept by number, places a term again when the table grows. */
typedef struct {
    uint32_t tag;                       /* 32 bits of the term's hash (hash_tag) */
    int32_t id1;                        /* the term's number + 1; 0: a free slot */
    uint32_t seen;                      /* the last document the term was in (0: none yet) */
    int32_t rank;                       /* its rank among that document's distinct terms */
    PyObject *key;                      /* the term (borrowed: keys holds the reference) */
} NumberSlot;

static uint32_t hash_tag(Py_hash_t hash)
{
    return (uint32_t)(((uint64_t)(Py_uhash_t)hash * 0x9E3779B97F4A7C15ull) >> 32);
}

typedef struct {
    PyObject_HEAD
    NumberSlot *slots;
    size_t mask;                        /* capacity - 1, a power of two */
    PyObject **keys;                    /* by number: the term */
    Py_hash_t *hashes;                  /* by number: its hash */
    Py_ssize_t count, cap;
    uint32_t doc;
    int busy;
} Numbering;

static void numbering_dealloc(Numbering *self)
{
    for (Py_ssize_t i = 0; i < self->count; i++)
        Py_DECREF(self->keys[i]);
    PyMem_Free(self->slots);
    PyMem_Free(self->keys);
    PyMem_Free(self->hashes);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *numbering_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "Numbering() takes no arguments");
        return NULL;
    }
    Numbering *self = (Numbering *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->slots = PyMem_Calloc(64, sizeof(NumberSlot));
    if (self->slots == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    self->mask = 63;
    return (PyObject *)self;
}

static Py_ssize_t numbering_len(Numbering *self)
{
    return self->count;
}

/* 1 if two keys are equal as dict keys (identity first), 0 if not, -1 with an exception */
static int same_key(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (PyUnicode_CheckExact(a) && PyUnicode_CheckExact(b)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(a);
        int kind = PyUnicode_KIND(a);
        return n == PyUnicode_GET_LENGTH(b) && kind == (int)PyUnicode_KIND(b) &&
               memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * (size_t)kind) == 0;
    }
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

static int numbering_grow_table(Numbering *self)
{
    size_t cap = (self->mask + 1) * 2;
    NumberSlot *slots = PyMem_Calloc(cap, sizeof(NumberSlot));
    if (slots == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i <= self->mask; i++) {
        NumberSlot slot = self->slots[i];
        if (slot.id1 == 0)
            continue;
        size_t j = (size_t)self->hashes[slot.id1 - 1] & (cap - 1);
        while (slots[j].id1 != 0)
            j = (j + 1) & (cap - 1);
        slots[j] = slot;
    }
    PyMem_Free(self->slots);
    self->slots = slots;
    self->mask = cap - 1;
    return 0;
}

/* The slot of token's term, a new term getting the next number (and appended to new_terms, when
   not NULL); -1 with an exception set. */
static Py_ssize_t numbering_find_or_add(Numbering *self, PyObject *token, PyObject *new_terms)
{
    Py_hash_t hash = PyObject_Hash(token);
    if (hash == -1)
        return -1;
    size_t i = (size_t)hash & self->mask;
    uint32_t tag = hash_tag(hash);
    for (;;) {
        NumberSlot *slot = &self->slots[i];
        if (slot->id1 == 0)
            break;
        if (slot->tag == tag) {
            /* no call comes back into number() (busy), so the table stays as it is */
            int equal = same_key(slot->key, token);
            if (equal < 0)
                return -1;
            if (equal)
                return (Py_ssize_t)i;
        }
        i = (i + 1) & self->mask;
    }
    if (self->count >= INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "Numbering: more terms than 32-bit numbers");
        return -1;
    }
    if ((size_t)(self->count + 1) * 3 > (self->mask + 1) * 2) {
        if (numbering_grow_table(self) < 0)
            return -1;
        i = (size_t)hash & self->mask;
        while (self->slots[i].id1 != 0)
            i = (i + 1) & self->mask;
    }
    if (self->count == self->cap) {
        Py_ssize_t cap = self->cap ? self->cap * 2 : 1024;
        PyObject **keys = PyMem_Realloc(self->keys, (size_t)cap * sizeof(PyObject *));
        if (keys == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        self->keys = keys;
        Py_hash_t *hashes = PyMem_Realloc(self->hashes, (size_t)cap * sizeof(Py_hash_t));
        if (hashes == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        self->hashes = hashes;
        self->cap = cap;
    }
    if (new_terms != NULL && PyList_Append(new_terms, token) < 0)
        return -1;
    Py_ssize_t id = self->count++;
    Py_INCREF(token);
    self->keys[id] = token;
    self->hashes[id] = hash;
    NumberSlot *slot = &self->slots[i];
    slot->tag = tag;
    slot->key = token;
    slot->id1 = (int32_t)(id + 1);
    slot->seen = 0;
    slot->rank = 0;
    return (Py_ssize_t)i;
}

static PyObject *numbering_number(Numbering *self, PyObject *token_lists)
{
    if (!PyList_Check(token_lists)) {
        PyErr_SetString(PyExc_TypeError, "Numbering.number: token_lists must be a list");
        return NULL;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Numbering.number called again while it runs");
        return NULL;
    }
    self->busy = 1;
    Buffer ids = {0}, counts = {0}, sizes = {0};
    int32_t *doc_ids = NULL, *doc_counts = NULL;
    Py_ssize_t doc_cap = 0;
    PyObject *new_terms = PyList_New(0), *result = NULL;
    if (new_terms == NULL)
        goto done;
    for (Py_ssize_t d = 0; d < PyList_GET_SIZE(token_lists); d++) {
        PyObject *doc_obj = PyList_GET_ITEM(token_lists, d);
        Py_INCREF(doc_obj);
        PyObject *seq = PySequence_Fast(doc_obj, "Numbering.number: a document must be a sequence");
        Py_DECREF(doc_obj);
        if (seq == NULL)
            goto done;
        /* nothing runs Python code while a document of exact str is numbered (and only then is
           a token's hash taken ahead of its turn); a Python == or __hash__ of any other token
           could change a list: its tokens are then taken from a copy of it */
        int plain = 1;
        for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) && plain; i++)
            plain = PyUnicode_CheckExact(PySequence_Fast_ITEMS(seq)[i]);
        PyObject *items = plain || !PyList_CheckExact(seq) ? seq : PyList_GetSlice(seq, 0, PyList_GET_SIZE(seq));
        if (items != seq)
            Py_DECREF(seq);
        if (items == NULL)
            goto done;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
        PyObject **tokens = PySequence_Fast_ITEMS(items);
        if (n > doc_cap) {
            int32_t *grown = PyMem_Realloc(doc_ids, (size_t)n * sizeof(int32_t));
            if (grown != NULL)
                doc_ids = grown;
            int32_t *grown_counts = grown ? PyMem_Realloc(doc_counts, (size_t)n * sizeof(int32_t)) : NULL;
            if (grown_counts == NULL) {
                PyErr_NoMemory();
                Py_DECREF(items);
                goto done;
            }
            doc_counts = grown_counts;
            doc_cap = n;
        }
        if (self->doc == UINT32_MAX) {                /* the stamps wrap: none is current */
            for (size_t k = 0; k <= self->mask; k++)
                self->slots[k].seen = 0;
            self->doc = 0;
        }
        uint32_t doc = ++self->doc;
        Py_ssize_t distinct = 0;
        int failed = 0;
        for (Py_ssize_t i = 0; i < n; i++) {
            /* the table is larger than the caches: ask for the slot of a token a few ahead
               while this one is looked up (a str's hash runs no Python code, and is kept) */
            if (plain && i + NUMBERING_AHEAD < n) {
                Py_hash_t ahead = PyObject_Hash(tokens[i + NUMBERING_AHEAD]);
                if (ahead != -1)
                    __builtin_prefetch(&self->slots[(size_t)ahead & self->mask]);
                else
                    PyErr_Clear();
            }
            Py_ssize_t at = numbering_find_or_add(self, tokens[i], new_terms);
            if (at < 0) {
                failed = 1;
                break;
            }
            NumberSlot *slot = &self->slots[at];
            if (slot->seen != doc) {
                slot->seen = doc;
                slot->rank = (int32_t)distinct;
                doc_ids[distinct] = slot->id1 - 1;
                doc_counts[distinct++] = 1;
            } else if (doc_counts[slot->rank] == INT32_MAX) {
                PyErr_SetString(PyExc_OverflowError, "Numbering.number: a count does not fit 32 bits");
                failed = 1;
                break;
            } else {
                doc_counts[slot->rank]++;
            }
        }
        Py_DECREF(items);
        int64_t size = (int64_t)distinct;
        if (failed || buffer_put(&ids, doc_ids, (Py_ssize_t)(distinct * (Py_ssize_t)sizeof(int32_t))) < 0 ||
            buffer_put(&counts, doc_counts, (Py_ssize_t)(distinct * (Py_ssize_t)sizeof(int32_t))) < 0 ||
            buffer_put(&sizes, &size, sizeof size) < 0)
            goto done;
    }
    result = Py_BuildValue("(Oy#y#y#)", new_terms, ids.data ? ids.data : "", ids.len,
                           counts.data ? counts.data : "", counts.len, sizes.data ? sizes.data : "", sizes.len);
done:
    self->busy = 0;
    Py_XDECREF(new_terms);
    PyMem_Free(ids.data);
    PyMem_Free(counts.data);
    PyMem_Free(sizes.data);
    PyMem_Free(doc_ids);
    PyMem_Free(doc_counts);
    return result;
}

/* columns(terms) -> bytes of int32: each term's number, a term not seen before getting the next
   one -- [index.setdefault(t, len(index)) for t in terms] with this table as the dict, the
   definition (spamkit.features.count_matrix, tests/test_features.py). The process that counts
   a training run's chunks looks up the terms each worker numbered first so, instead of in a
   dict (speedups.grow_columns): the slot of a term a few ahead is asked for while this one is
   looked up (the table is larger than the caches), and no Python int is made per column.
   Looking up trec07p-dev's workers' new terms was most of that process's work while they
   parsed. */
static PyObject *numbering_columns(Numbering *self, PyObject *terms)
{
    if (!PyList_Check(terms)) {
        PyErr_SetString(PyExc_TypeError, "Numbering.columns: terms must be a list");
        return NULL;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Numbering.columns called again while it runs");
        return NULL;
    }
    /* exact str only: nothing runs Python code, a hash may be taken ahead of its turn and the
       list cannot change; anything else is looked up in a copy of the list, one at a time */
    Py_ssize_t n = PyList_GET_SIZE(terms);
    int plain = 1;
    for (Py_ssize_t i = 0; i < n && plain; i++)
        plain = PyUnicode_CheckExact(PyList_GET_ITEM(terms, i));
    PyObject *items = plain ? (Py_INCREF(terms), terms) : PyList_GetSlice(terms, 0, n);
    if (items == NULL)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (out == NULL) {
        Py_DECREF(items);
        return NULL;
    }
    int32_t *columns = (int32_t *)PyBytes_AS_STRING(out);
    self->busy = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (plain && i + NUMBERING_AHEAD < n) {
            Py_hash_t ahead = PyObject_Hash(PyList_GET_ITEM(items, i + NUMBERING_AHEAD));
            if (ahead != -1)
                __builtin_prefetch(&self->slots[(size_t)ahead & self->mask]);
            else
                PyErr_Clear();
        }
        Py_ssize_t at = numbering_find_or_add(self, PyList_GET_ITEM(items, i), NULL);
        if (at < 0) {
            self->busy = 0;
            Py_DECREF(items);
            Py_DECREF(out);
            return NULL;
        }
        columns[i] = self->slots[at].id1 - 1;
    }
    self->busy = 0;
    Py_DECREF(items);
    return out;
}

static PyObject *numbering_terms(Numbering *self, PyObject *unused)
{
    PyObject *out = PyList_New(self->count);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < self->count; i++) {
        Py_INCREF(self->keys[i]);
        PyList_SET_ITEM(out, i, self->keys[i]);
    }
    return out;
}

static PyMethodDef numbering_methods[] = {
    {"number", (PyCFunction)numbering_number, METH_O,
     "number(token_lists) -> (new_terms, ids, counts, sizes)\n\n"
     "spamkit.features.number_terms with this table in place of its dict."},
    {"columns", (PyCFunction)numbering_columns, METH_O,
     "columns(terms) -> bytes of int32: each term's number, new terms numbered next (setdefault with len)."},
    {"terms", (PyCFunction)numbering_terms, METH_NOARGS, "terms() -> list: the terms in the order of their numbers."},
    {NULL, NULL, 0, NULL}
};

static PySequenceMethods numbering_as_sequence = {
    .sq_length = (lenfunc)numbering_len,
};

static PyTypeObject NumberingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "spamkit.speedups.Numbering",
    .tp_basicsize = sizeof(Numbering),
    .tp_dealloc = (destructor)numbering_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A worker's numbers of the terms it has seen (spamkit.features.new_numbering).",
    .tp_methods = numbering_methods,
    .tp_as_sequence = &numbering_as_sequence,
    .tp_new = numbering_new,
};

/* a vocabulary term's UTF-8 bytes (cached by the str), or NULL, with no error set, when it is
   not a str or has no UTF-8 form (a lone surrogate): sort_terms and term_keys then answer None */
static const char *utf8_of(PyObject *t, Py_ssize_t *len)
{
    const char *bytes = PyUnicode_Check(t) ? PyUnicode_AsUTF8AndSize(t, len) : NULL;
    if (bytes == NULL)
        PyErr_Clear();
    return bytes;
}

/* ------------------------------------------------------------------ BLAKE2b term keys */

/* BLAKE2b as RFC 7693 specifies it (section 3: the G mixing function, the compression function
   F with 12 rounds over the message schedule SIGMA, the parameter block folded into h[0];
   the IV is SHA-512's), unkeyed, with an 8-byte digest: the key spamkit.lean.term_hash gives a
   term (hashlib.blake2b(term.encode("utf-8"), digest_size=8), read little-endian), which is
   the first word of the final state. tests/test_persist.py compares it with hashlib. */
static const uint64_t blake2b_iv[8] = {
    0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
    0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL};

static const unsigned char blake2b_sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
    {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
    {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
    {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
    {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
    {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3}};

static inline uint64_t rotr64(uint64_t x, unsigned n) { return (x >> n) | (x << (64 - n)); }

#define BLAKE2B_G(a, b, c, d, x, y)                  \
    do {                                             \
        v[a] = v[a] + v[b] + (x);                    \
        v[d] = rotr64(v[d] ^ v[a], 32);              \
        v[c] = v[c] + v[d];                          \
        v[b] = rotr64(v[b] ^ v[c], 24);              \
        v[a] = v[a] + v[b] + (y);                    \
        v[d] = rotr64(v[d] ^ v[a], 16);              \
        v[c] = v[c] + v[d];                          \
        v[b] = rotr64(v[b] ^ v[c], 63);              \
    } while (0)

/* F: one 128-byte block into the state h; t the bytes hashed so far (with this block), last
   whether it is the final block */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
static void blake2b_compress(uint64_t h[8], const unsigned char block[128], uint64_t t, int last)
{
    uint64_t v[16], m[16];
    for (int i = 0; i < 16; i++) {
        uint64_t w = 0;
        for (int k = 7; k >= 0; k--)
            w = (w << 8) | block[8 * i + k];            /* little-endian words */
        m[i] = w;
    }
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = blake2b_iv[i];
    }
    v[12] ^= t;                                         /* the high word of the 128-bit counter stays 0 */
    if (last)
        v[14] = ~v[14];
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 12
#endif
    for (int r = 0; r < 12; r++) {
        const unsigned char *s = blake2b_sigma[r];
        BLAKE2B_G(0, 4, 8, 12, m[s[0]], m[s[1]]);
        BLAKE2B_G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        BLAKE2B_G(2, 6, 10, 14, m[s[4]], m[s[5]]);
        BLAKE2B_G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        BLAKE2B_G(0, 5, 10, 15, m[s[8]], m[s[9]]);
        BLAKE2B_G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        BLAKE2B_G(2, 7, 8, 13, m[s[12]], m[s[13]]);
        BLAKE2B_G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++)
        h[i] ^= v[i] ^ v[i + 8];
}

/* the first 8 bytes of BLAKE2b-64 of data, as a little-endian number */
static uint64_t blake2b_64(const unsigned char *data, Py_ssize_t len)
{
    uint64_t h[8];
    unsigned char block[128];
    memcpy(h, blake2b_iv, sizeof h);
    h[0] ^= 0x01010000ULL ^ 8ULL;                       /* depth 1, fanout 1, no key, 8-byte digest */
    uint64_t t = 0;
    while (len > 128) {                                 /* every block but the last */
        t += 128;
        blake2b_compress(h, data, t, 0);
        data += 128;
        len -= 128;
    }
    memset(block, 0, sizeof block);
    if (len)
        memcpy(block, data, (size_t)len);
    t += (uint64_t)len;
    blake2b_compress(h, block, t, 1);
    return h[0];
}

/* term_keys(terms) -> bytes of uint64, or None: BLAKE2b-64 of each term's UTF-8 bytes
   (spamkit.persist.term_hash_index's keys); None when an item is not a str or has no UTF-8
   form, for the caller's Python path to report as it does. */
static PyObject *term_keys(PyObject *self, PyObject *args)
{
    PyObject *terms;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &terms))
        return NULL;
    /* the terms' UTF-8 bytes gathered with the GIL (a copy of the list keeps every term alive),
       then hashed without it: a thread can hash a vocabulary while another fits a model */
    PyObject *held = PyList_GetSlice(terms, 0, PyList_GET_SIZE(terms));
    if (held == NULL)
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(held);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * 8);
    const char **starts = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(const char *));
    Py_ssize_t *lengths = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t));
    if (out == NULL || starts == NULL || lengths == NULL) {
        Py_XDECREF(out);
        PyMem_Free(starts);
        PyMem_Free(lengths);
        Py_DECREF(held);
        return out == NULL ? NULL : PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
#if defined(__GNUC__)
        if (i + 16 < n)                               /* the terms lie all over the heap: ask ahead */
            __builtin_prefetch(PyList_GET_ITEM(held, i + 16));
#endif
        starts[i] = utf8_of(PyList_GET_ITEM(held, i), &lengths[i]);
        if (starts[i] == NULL) {
            Py_DECREF(out);
            PyMem_Free(starts);
            PyMem_Free(lengths);
            Py_DECREF(held);
            Py_RETURN_NONE;
        }
    }
    unsigned char *keys = (unsigned char *)PyBytes_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t key = blake2b_64((const unsigned char *)starts[i], lengths[i]);
        for (int k = 0; k < 8; k++)
            keys[8 * i + k] = (unsigned char)(key >> (8 * k));
    }
    Py_END_ALLOW_THREADS
    PyMem_Free(starts);
    PyMem_Free(lengths);
    Py_DECREF(held);
    return out;
}

/* key_order(keys) -> bytes of int64: the positions of a buffer of uint64 keys in ascending
   order, equal keys in their order (np.argsort(keys, kind="stable"), tests/test_persist.py):
   an LSD radix sort, 11 bits a pass (six passes; a pass whose digit is the same in every key
   is skipped), without the GIL. The hash index of a vocabulary sorts its BLAKE2b keys with it
   (spamkit.persist.term_hash_index): 178,480 keys in ~3 ms where NumPy's stable argsort took 12. */
static PyObject *key_order(PyObject *self, PyObject *args)
{
    PyObject *o_keys;
    if (!PyArg_ParseTuple(args, "O:key_order", &o_keys))
        return NULL;
    Py_buffer kb = {0};
    if (get_buffer(o_keys, &kb, "Q", 8, 0, "keys") < 0)
        return NULL;
    Py_ssize_t n = kb.shape[0];
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    uint64_t *k1 = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(uint64_t)), *k2 = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(uint64_t));
    int64_t *p2 = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(int64_t));
    size_t *count = PyMem_Calloc(6 * 2048, sizeof(size_t));
    if (out == NULL || k1 == NULL || k2 == NULL || p2 == NULL || count == NULL) {
        Py_XDECREF(out);
        PyMem_Free(k1); PyMem_Free(k2); PyMem_Free(p2); PyMem_Free(count);
        PyBuffer_Release(&kb);
        return out == NULL ? NULL : PyErr_NoMemory();
    }
    int64_t *p1 = (int64_t *)PyBytes_AS_STRING(out);
    const uint64_t *keys = kb.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t key = keys[i];
        k1[i] = key;
        p1[i] = (int64_t)i;
        for (int d = 0; d < 6; d++)
            count[d * 2048 + ((key >> (11 * d)) & 2047)]++;
    }
    uint64_t *ks = k1, *kd = k2;
    int64_t *ps = p1, *pd = p2;
    for (int d = 0; d < 6; d++) {
        size_t *c = count + d * 2048, total = 0;
        if (n && c[(ks[0] >> (11 * d)) & 2047] == (size_t)n)
            continue;                                 /* one digit in every key: nothing moves */
        for (int b = 0; b < 2048; b++) {
            size_t here = c[b];
            c[b] = total;
            total += here;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            size_t at = c[(ks[i] >> (11 * d)) & 2047]++;
            kd[at] = ks[i];
            pd[at] = ps[i];
        }
        uint64_t *tk = ks; ks = kd; kd = tk;
        int64_t *tp = ps; ps = pd; pd = tp;
    }
    if (ps != p1)
        memcpy(p1, ps, (size_t)n * sizeof(int64_t));
    Py_END_ALLOW_THREADS
    PyMem_Free(k1); PyMem_Free(k2); PyMem_Free(p2); PyMem_Free(count);
    PyBuffer_Release(&kb);
    return out;
}

/* ------------------------------------------------------------------ sorting terms */

typedef struct {
    uint64_t head;              /* the first 8 bytes, big-endian, zero-padded: most comparisons end here */
    const char *bytes;
    Py_ssize_t len;
    Py_ssize_t pos;
} Term;

/* code point order: the UTF-8 bytes compared as unsigned bytes, a prefix first (UTF-8 keeps
   the order of code points); equal terms by position, so the sort is stable. The heads
   decide unless they are equal (zero padding sorts a shorter term first only when it is a
   prefix; equal heads of terms shorter than 8 bytes go on to the full comparison). */
/* The 8 bytes of a term from byte `depth`, big-endian, zero-padded past its end. */
static uint64_t term_key_at(const Term *t, Py_ssize_t depth)
{
    uint64_t key = 0;
    for (Py_ssize_t k = depth; k < depth + 8; k++)
        key = (key << 8) | (k < t->len ? (unsigned char)t->bytes[k] : 0u);
    return key;
}

/* Terms equal in their first `depth` bytes, compared from there on (then by position). */
static int term_order_from(const Term *x, const Term *y, Py_ssize_t depth)
{
    Py_ssize_t n = (x->len < y->len ? x->len : y->len) - depth;
    int c = n > 0 ? memcmp(x->bytes + depth, y->bytes + depth, (size_t)n) : 0;
    if (c != 0)
        return c;
    if (x->len != y->len)
        return x->len < y->len ? -1 : 1;
    return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

static void sort_terms_from(Term *a, Py_ssize_t n, Py_ssize_t depth);

/* x before y, for terms equal in their first `depth` bytes whose heads hold the next 8 */
static int term_before(const Term *x, const Term *y, Py_ssize_t depth)
{
    if (x->head != y->head)
        return x->head < y->head;
    return term_order_from(x, y, depth) < 0;
}

/* Moves a[root] down the heap a[0 .. end-1] (ordered by term_before) to where it belongs. */
static void sift_down_terms(Term *a, Py_ssize_t root, Py_ssize_t end, Py_ssize_t depth)
{
    for (;;) {
        Py_ssize_t child = 2 * root + 1;
        if (child >= end)
            return;
        if (child + 1 < end && term_before(&a[child], &a[child + 1], depth))
            child++;
        if (!term_before(&a[root], &a[child], depth))
            return;
        Term t = a[root]; a[root] = a[child]; a[child] = t;
        root = child;
    }
}

/* Heapsort by term_before: what sort_terms_by_head falls back to when its partitions keep
   coming out lopsided (introsort, Musser 1997), so that no order of the terms makes the sort
   quadratic. */
static void heap_sort_terms(Term *a, Py_ssize_t n, Py_ssize_t depth)
{
    for (Py_ssize_t start = n / 2; start-- > 0;)
        sift_down_terms(a, start, n, depth);
    for (Py_ssize_t end = n - 1; end > 0; end--) {
        Term t = a[0]; a[0] = a[end]; a[end] = t;
        sift_down_terms(a, 0, end, depth);
    }
}

/* the partitions sort_terms_by_head makes before it heapsorts: -1, 2 log2 n + 2; tests set
   another (sort_terms' third argument) to take the heapsort's path. Read-only while a sort runs. */
static int partition_budget = -1;

/* the next of a xorshift64 sequence (Marsaglia 2003): where pivots are sampled from */
static inline uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *state = x;
}

static inline uint64_t median3(uint64_t x, uint64_t y, uint64_t z)
{
    return x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
}

/* A pivot head for a[0 .. n-1]: the median of three heads at sampled places, or for larger
   n the median of three such medians (Tukey's ninther). Fixed places (first, middle, last)
   made a sorted vocabulary ten times slower to sort than a shuffled one: the partitions
   left organ-pipe orders behind, on which such a median is a bad pivot. */
static uint64_t pivot_head(const Term *a, Py_ssize_t n, uint64_t *rng)
{
#define AT() (a[(Py_ssize_t)(next_random(rng) % (uint64_t)n)].head)
    if (n < 64) {
        uint64_t x = AT(), y = AT(), z = AT();
        return median3(x, y, z);
    }
    uint64_t m[3];
    for (int k = 0; k < 3; k++) {
        uint64_t x = AT(), y = AT(), z = AT();
        m[k] = median3(x, y, z);
    }
#undef AT
    return median3(m[0], m[1], m[2]);
}

/* Sorts a[0 .. n-1], terms equal in their first `depth` bytes whose `head` holds their 8 bytes
   from there: a three-way quicksort on the heads (Bentley & Sedgewick's multikey quicksort,
   "Fast algorithms for sorting and searching strings", SODA 1997, 8 bytes a step), the
   terms of equal head sorted again from 8 bytes further. A vocabulary's terms share long
   prefixes (41,181 of trec07p-dev's 178,480 begin with "received"): comparing whole terms,
   each comparison of two of them walked those prefixes again (qsort: 62 ms for that
   vocabulary; this: about 20). Pivots are sampled (pivot_head) and, after more lopsided
   partitions than 2 log2 n, the rest is heapsorted: O(n log n) comparisons of heads
   whatever the order of the terms. */
static void sort_terms_by_head(Term *a, Py_ssize_t n, Py_ssize_t depth)
{
    uint64_t rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)n * 0xBF58476D1CE4E5B9ull) ^ (uint64_t)depth;
    int budget = 2;
    for (Py_ssize_t m = n; m > 1; m >>= 1)
        budget += 2;
    if (partition_budget >= 0)
        budget = partition_budget;
    while (n > 1) {
        if (n < 12) {                                   /* insertion sort */
            for (Py_ssize_t i = 1; i < n; i++) {
                Term t = a[i];
                Py_ssize_t j = i;
                while (j > 0 && (a[j - 1].head > t.head ||
                                 (a[j - 1].head == t.head && term_order_from(&a[j - 1], &t, depth) > 0))) {
                    a[j] = a[j - 1];
                    j--;
                }
                a[j] = t;
            }
            return;
        }
        if (budget-- <= 0) {
            heap_sort_terms(a, n, depth);
            return;
        }
        uint64_t pivot = pivot_head(a, n, &rng);
        /* Dijkstra's three-way partition: [0, lt) < pivot, [lt, i) == pivot, (gt, n) > pivot */
        Py_ssize_t lt = 0, i = 0, gt = n - 1;
        while (i <= gt) {
            if (a[i].head < pivot) {
                Term t = a[lt]; a[lt] = a[i]; a[i] = t;
                lt++; i++;
            } else if (a[i].head > pivot) {
                Term t = a[gt]; a[gt] = a[i]; a[i] = t;
                gt--;
            } else {
                i++;
            }
        }
        /* the equal part: terms that end within these 8 bytes come first (each is a prefix of
           the longer ones), by length then position; the rest go on from 8 bytes further */
        Term *eq = a + lt;
        Py_ssize_t m = gt + 1 - lt, done = 0;
        for (Py_ssize_t k = 0; k < m; k++) {
            if (eq[k].len <= depth + 8) {
                Term t = eq[done]; eq[done] = eq[k]; eq[k] = t;
                done++;
            }
        }
        for (Py_ssize_t k = 1; k < done; k++) {         /* few: insertion sort by (len, pos) */
            Term t = eq[k];
            Py_ssize_t j = k;
            while (j > 0 && term_order_from(&eq[j - 1], &t, depth) > 0) {
                eq[j] = eq[j - 1];
                j--;
            }
            eq[j] = t;
        }
        sort_terms_from(eq + done, m - done, depth + 8);
        /* the smaller side by recursion, the larger by the loop: stack depth O(log n) a level */
        Py_ssize_t left = lt, right = n - gt - 1;
        if (left < right) {
            sort_terms_by_head(a, left, depth);
            a += gt + 1;
            n = right;
        } else {
            sort_terms_by_head(a + gt + 1, right, depth);
            n = left;
        }
    }
}

/* Sorts terms equal in their first `depth` bytes, from there on. */
static void sort_terms_from(Term *a, Py_ssize_t n, Py_ssize_t depth)
{
    if (n < 2)
        return;
    for (Py_ssize_t i = 0; i < n; i++)
        a[i].head = term_key_at(&a[i], depth);
    sort_terms_by_head(a, n, depth);
}

/* the terms a part of sort_terms is given at least */
#define SORT_PART_TERMS 20000

typedef struct {
    Term *start[MAX_PARTS];
    Py_ssize_t len[MAX_PARTS];
} SortJob;

static void sort_part(void *arg, int part, int parts)
{
    SortJob *J = arg;
    (void)parts;
    sort_terms_by_head(J->start[part], J->len[part], 0);
}

/* sort_terms_by_head(a, n, 0) in parts (run_parts): the terms cut at splitters taken from a
   sample of them (whole terms: trec07p-dev's vocabulary has 41,181 terms of one head,
   "received"), every term of a part before every term of the next, each part then sorted on
   its own. The same order as one sort. */
static void sort_terms_in_parts(Term *a, Py_ssize_t n)
{
    int parts = parts_for(n, SORT_PART_TERMS);
    if (parts < 2) {
        sort_terms_by_head(a, n, 0);
        return;
    }
    Term sample[64 * MAX_PARTS];
    uint64_t rng = 0xD1B54A32D192ED03ull ^ (uint64_t)n;
    int m = 64 * parts;
    for (int k = 0; k < m; k++) {
        Term t = a[(Py_ssize_t)(next_random(&rng) % (uint64_t)n)];
        int j = k;
        while (j > 0 && term_before(&t, &sample[j - 1], 0)) {   /* insertion sort: a few hundred */
            sample[j] = sample[j - 1];
            j--;
        }
        sample[j] = t;
    }
    SortJob job;
    int count = 0;
    Py_ssize_t lo = 0;
    for (int k = 1; k < parts; k++) {
        const Term *cut = &sample[k * m / parts];
        if (k > 1 && cut->pos == sample[(k - 1) * m / parts].pos)
            continue;                                 /* the same term drawn twice: no part between */
        Py_ssize_t i = lo;                            /* the terms before `cut` to the front of a[lo .. n) */
        for (Py_ssize_t j = lo; j < n; j++)
            if (term_before(&a[j], cut, 0)) {
                Term t = a[i]; a[i] = a[j]; a[j] = t;
                i++;
            }
        job.start[count] = a + lo;
        job.len[count] = i - lo;
        count++;
        lo = i;
    }
    job.start[count] = a + lo;
    job.len[count] = n - lo;
    count++;
    run_parts(sort_part, &job, count);
}

/* The terms of the list, sorted (sort_terms_by_head) into a new array of n items; NULL with
   *none set when an item is not a str or has no UTF-8 form, NULL with an exception otherwise. */
static Term *sorted_term_array(PyObject *terms, Py_ssize_t n, int *none)
{
    *none = 0;
    Term *items = PyMem_Malloc((size_t)(n ? n : 1) * sizeof(Term));
    if (items == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t len;
#if defined(__GNUC__)
        if (i + 16 < n)                               /* the terms lie all over the heap: ask ahead */
            __builtin_prefetch(PyList_GET_ITEM(terms, i + 16));
#endif
        const char *bytes = utf8_of(PyList_GET_ITEM(terms, i), &len);
        if (bytes == NULL) {
            PyMem_Free(items);
            *none = 1;
            return NULL;
        }
        uint64_t head = 0;
        for (Py_ssize_t k = 0; k < 8; k++)
            head = (head << 8) | (k < len ? (unsigned char)bytes[k] : 0u);
        items[i].head = head;
        items[i].bytes = bytes;
        items[i].len = len;
        items[i].pos = i;
    }
    if (PyList_GET_SIZE(terms) != n) {          /* the UTF-8 forms cannot run code, but be sure */
        PyMem_Free(items);
        PyErr_SetString(PyExc_RuntimeError, "sort_terms: the list changed while it was read");
        return NULL;
    }
    sort_terms_in_parts(items, n);                   /* heads from byte 0: made above */
    return items;
}

/* The positions of sorted items as bytes of int64. */
static PyObject *term_order_bytes(const Term *items, Py_ssize_t n)
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (out != NULL) {
        int64_t *order = (int64_t *)PyBytes_AS_STRING(out);
        for (Py_ssize_t i = 0; i < n; i++)
            order[i] = (int64_t)items[i].pos;
    }
    return out;
}

/* sort_terms(terms, with_terms=False, budget=-1) -> bytes of int64 or None: the positions of the list's str
   items in the order sorted() puts them (Python compares str by code point; equal items keep
   their order), i.e. sorted(range(len(terms)), key=terms.__getitem__). None when an item is not
   a str or has no UTF-8 form (a lone surrogate): the caller sorts in Python then. Vocabularies
   of a few hundred thousand terms sort about four times faster than with the key function.
   with_terms: (positions, the terms in that order) -- [terms[i] for i in order], the definition
   (tests/test_features.py) -- the list made here from the sorted array in one pass: taking the
   terms by their positions in Python, one str at a time in sorted order, was a third of
   renumbering trec07p-dev's 178,480 terms. budget: for tests, the partitions made before the
   heapsort takes over (-1: 2 log2 n + 2). */
static PyObject *sort_terms(PyObject *self, PyObject *args)
{
    PyObject *terms;
    int none, with_terms = 0, budget = -1;
    if (!PyArg_ParseTuple(args, "O!|pi", &PyList_Type, &terms, &with_terms, &budget))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(terms);
    partition_budget = budget < 0 ? -1 : budget;
    Term *items = sorted_term_array(terms, n, &none);
    partition_budget = -1;
    if (items == NULL) {
        if (none)
            Py_RETURN_NONE;
        return NULL;
    }
    PyObject *order = term_order_bytes(items, n);
    if (!with_terms || order == NULL) {
        PyMem_Free(items);
        return order;
    }
    PyObject *list = PyList_New(n);
    if (list != NULL) {
        /* the list was not changed since sorted_term_array checked it: nothing ran since */
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *term = PyList_GET_ITEM(terms, items[i].pos);
            Py_INCREF(term);
            PyList_SET_ITEM(list, i, term);
        }
    }
    PyMem_Free(items);
    if (list == NULL) {
        Py_DECREF(order);
        return NULL;
    }
    PyObject *out = PyTuple_Pack(2, order, list);
    Py_DECREF(order);
    Py_DECREF(list);
    return out;
}

/* ------------------------------------------------------------------ MIME parameters */

/* value[a:b] stripped of white space and unquoted as spamkit.mime._unquote does: a quoted string
   loses its quotes and the backslash of each quoted pair, <...> its angle brackets. */
static PyObject *unquoted(const Py_UCS1 *v, Py_ssize_t a, Py_ssize_t b)
{
    ascii_strip(v, &a, &b);
    if (b - a >= 2 && v[a] == '"' && v[b - 1] == '"') {
        a++;
        b--;
        Py_UCS1 *out = PyMem_Malloc((size_t)(b - a) + 1);
        if (out == NULL)
            return PyErr_NoMemory();
        Py_ssize_t n = 0;
        for (Py_ssize_t i = a; i < b; i++) {
            if (v[i] == '\\' && i + 1 < b)
                i++;                                    /* \x -> x */
            out[n++] = v[i];
        }
        PyObject *text = PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, out, n);
        PyMem_Free(out);
        return text;
    }
    if (b - a >= 2 && v[a] == '<' && v[b - 1] == '>') {
        a++;
        b--;
    }
    return PyUnicode_FromKindAndData(PyUnicode_1BYTE_KIND, v + a, b - a);
}

/* mime_parameters(value, max_params) -> dict or None: spamkit.mime._parameters(value) for an
   ASCII value whose parameter names hold no "*" (RFC 2231's sections and charsets: None, and
   the Python definition decodes them), which is the definition (tests/test_mime.py compares
   the two): the ";"-separated segments after the first ";" -- a ";" inside a quoted string
   (which a backslash escapes within, and which runs to the end when not closed) does not
   separate -- at most max_params of them; each "name=value" with a name (stripped, lower
   case) kept the first time, its value stripped and unquoted. Parameters were a tenth of a
   worker's time on TREC mail in Python (a regular expression for the pieces, another for the
   quoted pairs, a dict copied out of a cache). */
static PyObject *mime_parameters(PyObject *self, PyObject *args)
{
    PyObject *value;
    Py_ssize_t max_params;
    if (!PyArg_ParseTuple(args, "Un:mime_parameters", &value, &max_params))
        return NULL;
    if (!PyUnicode_IS_ASCII(value))
        Py_RETURN_NONE;
    const Py_UCS1 *v = PyUnicode_1BYTE_DATA(value);
    Py_ssize_t n = PyUnicode_GET_LENGTH(value), pos = 0;
    while (pos < n && v[pos] != ';')
        pos++;
    PyObject *out = PyDict_New();
    if (out == NULL || pos >= n)
        return out;
    pos++;
    Py_ssize_t segments = 0;
    while (segments < max_params) {
        /* the segment from pos to the next ";" outside a quoted string, or the end */
        Py_ssize_t start = pos;
        int ended = 0;                                  /* a ";" closed it */
        while (pos < n) {
            Py_UCS1 c = v[pos];
            if (c == ';') {
                ended = 1;
                break;
            }
            if (c == '"') {                             /* a quoted string, or a lone quote */
                Py_ssize_t q = pos + 1;
                for (;;) {
                    if (q >= n || v[q] == '"')
                        break;
                    if (v[q] == '\\') {
                        if (q + 1 >= n)
                            break;                      /* a backslash last: no pair */
                        q += 2;
                    } else {
                        q++;
                    }
                }
                if (q >= n)
                    pos = n;                            /* unclosed: to the end */
                else if (v[q] == '"')
                    pos = q + 1;                        /* closed */
                else
                    pos = pos + 1;                      /* stopped at a last backslash: a lone quote */
                continue;
            }
            pos++;
        }
        Py_ssize_t end = pos;
        segments++;
        Py_ssize_t eq = start;
        while (eq < end && v[eq] != '=')
            eq++;
        if (eq < end) {
            Py_ssize_t a = start, b = eq;
            ascii_strip(v, &a, &b);
            if (b > a) {
                for (Py_ssize_t i = a; i < b; i++)
                    if (v[i] == '*') {
                        Py_DECREF(out);
                        Py_RETURN_NONE;                 /* RFC 2231: the Python definition */
                    }
                PyObject *name = PyUnicode_New(b - a, 127);
                if (name == NULL) {
                    Py_DECREF(out);
                    return NULL;
                }
                Py_UCS1 *w = PyUnicode_1BYTE_DATA(name);
                for (Py_ssize_t i = a; i < b; i++)
                    w[i - a] = (v[i] >= 'A' && v[i] <= 'Z') ? (Py_UCS1)(v[i] + 32) : v[i];
                int has = PyDict_Contains(out, name);
                if (has == 0) {
                    PyObject *text = unquoted(v, eq + 1, end);
                    has = text == NULL ? -1 : PyDict_SetItem(out, name, text);
                    Py_XDECREF(text);
                }
                Py_DECREF(name);
                if (has < 0) {
                    Py_DECREF(out);
                    return NULL;
                }
            }
        }
        if (!ended)
            break;
        pos++;                                          /* past the ";" */
    }
    return out;
}

/* ------------------------------------------------------------------ renumbering CSR columns */

/* column_counts(indices, n_cols) -> bytes of int64: how many entries name each column, i.e.
   np.bincount(indices, minlength=n_cols), the definition (tests/test_features.py), without the
   copy of int32 indices that bincount makes as int64 first (18 MB for the 2.3 million entries of
   trec07p-dev and Enron1: the peak of training). ValueError for an index outside [0, n_cols). */
static PyObject *column_counts(PyObject *self, PyObject *args)
{
    PyObject *o_indices;
    Py_ssize_t n_cols;
    if (!PyArg_ParseTuple(args, "On:column_counts", &o_indices, &n_cols))
        return NULL;
    if (n_cols < 0) {
        PyErr_SetString(PyExc_ValueError, "column_counts: n_cols must be >= 0");
        return NULL;
    }
    Py_buffer indices = {0};
    int narrow;
    if (get_index_buffer(o_indices, &indices, &narrow) < 0)
        return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, n_cols * (Py_ssize_t)sizeof(int64_t));
    if (out == NULL) {
        PyBuffer_Release(&indices);
        return NULL;
    }
    int64_t *counts = (int64_t *)PyBytes_AS_STRING(out);
    memset(counts, 0, (size_t)n_cols * sizeof(int64_t));
    Py_ssize_t nnz = indices.shape[0];
    const int32_t *c32 = indices.buf;
    const long long *c64 = indices.buf;
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < nnz; k++) {
        long long j = narrow ? (long long)c32[k] : c64[k];
        if (j < 0 || j >= n_cols) {
            bad = 1;
            break;
        }
        counts[j]++;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&indices);
    if (bad) {
        Py_DECREF(out);
        PyErr_SetString(PyExc_ValueError, "column_counts: an index is outside [0, n_cols)");
        return NULL;
    }
    return out;
}


/* Sorts keys[0 .. n-1] (below 2^bits) ascending, moving vals with them, stably: least
   significant digit first, 8 bits a pass, the histograms of every pass counted in one read;
   tk and tv hold n items each. Short runs by insertion. */
static void radix_sort_row(uint32_t *keys, double *vals, uint32_t *tk, double *tv, Py_ssize_t n, int bits)
{
    if (n < 48) {
        for (Py_ssize_t i = 1; i < n; i++) {
            uint32_t k = keys[i];
            double v = vals[i];
            Py_ssize_t j = i;
            while (j > 0 && keys[j - 1] > k) {
                keys[j] = keys[j - 1];
                vals[j] = vals[j - 1];
                j--;
            }
            keys[j] = k;
            vals[j] = v;
        }
        return;
    }
    int passes = (bits + 7) / 8;
    Py_ssize_t count[4][257];
    memset(count, 0, sizeof(count[0]) * (size_t)passes);
    for (Py_ssize_t i = 0; i < n; i++)
        for (int p = 0; p < passes; p++)
            count[p][((keys[i] >> (8 * p)) & 255u) + 1]++;
    uint32_t *sk = keys, *dk = tk;
    double *sv = vals, *dv = tv;
    for (int p = 0; p < passes; p++) {
        Py_ssize_t *c = count[p];
        if (c[((sk[0] >> (8 * p)) & 255u) + 1] == n)  /* every key has this digit: nothing would move */
            continue;
        for (int d = 0; d < 256; d++)
            c[d + 1] += c[d];
        for (Py_ssize_t i = 0; i < n; i++) {
            Py_ssize_t at = c[(sk[i] >> (8 * p)) & 255u]++;
            dk[at] = sk[i];
            dv[at] = sv[i];
        }
        uint32_t *t1 = sk; sk = dk; dk = t1;
        double *t2 = sv; sv = dv; dv = t2;
    }
    if (sk != keys) {
        memcpy(keys, sk, (size_t)n * sizeof(uint32_t));
        memcpy(vals, sv, (size_t)n * sizeof(double));
    }
}

typedef struct {
    const void *indptr;
    int narrow_ptr;
    Py_ssize_t n_rows;
    int32_t *idx;
    const int32_t *map;
    double *val;
    int bits;
    Py_ssize_t longest;
    uint32_t *keys;                               /* 2 * longest per part */
    double *tv;                                   /* longest per part */
    int repeated[MAX_PARTS];
} RenumberJob;

static void renumber_part(void *arg, int part, int parts)
{
    RenumberJob *J = arg;
    Py_ssize_t lo, hi;
    row_part(J->indptr, J->narrow_ptr, J->n_rows, part, parts, &lo, &hi);
    const int32_t *p32 = J->indptr;
    const long long *p64 = J->indptr;
    uint32_t *keys = J->keys + (size_t)part * 2 * J->longest;
    double *tv = J->tv + (size_t)part * J->longest;
    int repeated = 0;
    for (Py_ssize_t i = lo; i < hi; i++) {
        long long start = J->narrow_ptr ? (long long)p32[i] : p64[i];
        long long end = J->narrow_ptr ? (long long)p32[i + 1] : p64[i + 1];
        Py_ssize_t n = (Py_ssize_t)(end - start);
        for (Py_ssize_t k = 0; k < n; k++)
            keys[k] = (uint32_t)J->map[J->idx[start + k]];
        radix_sort_row(keys, J->val + start, keys + J->longest, tv, n, J->bits);
        for (Py_ssize_t k = 0; k < n; k++) {
            J->idx[start + k] = (int32_t)keys[k];
            if (k && keys[k] == keys[k - 1])
                repeated = 1;
        }
    }
    J->repeated[part] = repeated;
}

/* renumber_rows(indptr, indices, data, new_col) -> None: in place, every column index j of a CSR
   matrix becomes new_col[j], then each row's entries are sorted by their new columns, the data
   moved with them -- the definition: indices[:] = new_col[indices], then scipy's
   sort_indices() (tests/test_features.py compares the two). indptr int32 or int64, indices and
   new_col int32, data float64; every new column must be >= 0 and a row must not hold a column
   twice (ValueError otherwise, the matrix then unchanged or renumbered only). Renumbering
   trec07p-dev's counts to alphabetical columns: scipy's per-row sort of (column, value) pairs
   35 ms, this ~10. */
static PyObject *renumber_rows(PyObject *self, PyObject *args)
{
    PyObject *o_indptr, *o_indices, *o_data, *o_new;
    if (!PyArg_ParseTuple(args, "OOOO:renumber_rows", &o_indptr, &o_indices, &o_data, &o_new))
        return NULL;
    Py_buffer indptr = {0}, indices = {0}, data = {0}, new_col = {0};
    int narrow_ptr;
    if (get_index_buffer(o_indptr, &indptr, &narrow_ptr) < 0 || get_buffer(o_indices, &indices, "i", 4, 1, "indices") < 0
            || get_buffer(o_data, &data, "d", 8, 1, "data") < 0 || get_buffer(o_new, &new_col, "i", 4, 0, "new_col") < 0) {
        release_views(&indptr, &indices, &data, &new_col, NULL);
        return NULL;
    }
    Py_ssize_t n_rows = indptr.shape[0] - 1, nnz = indices.shape[0], n_old = new_col.shape[0];
    const int32_t *p32 = indptr.buf;
    const long long *p64 = indptr.buf;
    int32_t *idx = indices.buf;
    const int32_t *map = new_col.buf;
    double *val = data.buf;
    const char *bad = NULL;
    if (data.shape[0] != nnz)
        bad = "data and indices differ in length";
    Py_ssize_t longest = 0;
    for (Py_ssize_t i = 0; !bad && i <= n_rows && n_rows >= 0; i++) {
        long long at = narrow_ptr ? (long long)p32[i] : p64[i];
        long long before = i ? (narrow_ptr ? (long long)p32[i - 1] : p64[i - 1]) : 0;
        if (at < 0 || at > nnz || at < before || (i == n_rows && at != nnz))
            bad = "indptr does not describe the indices";
        else if (i && at - before > longest)
            longest = (Py_ssize_t)(at - before);
    }
    int32_t top = 0;
    for (Py_ssize_t j = 0; !bad && j < n_old; j++) {
        if (map[j] < 0)
            bad = "new_col holds a negative column";
        else if (map[j] > top)
            top = map[j];
    }
    for (Py_ssize_t k = 0; !bad && k < nnz; k++)
        if (idx[k] < 0 || idx[k] >= n_old)
            bad = "a column index is outside new_col";
    if (bad) {
        release_views(&indptr, &indices, &data, &new_col, NULL);
        PyErr_Format(PyExc_ValueError, "renumber_rows: %s", bad);
        return NULL;
    }
    int bits = 0;
    while (bits < 32 && ((uint32_t)top >> bits) != 0)
        bits++;
    int parts = parts_for(nnz, ROWS_PART_NNZ);
    size_t room = (size_t)(longest ? longest : 1);
    RenumberJob job = {indptr.buf, narrow_ptr, n_rows < 0 ? 0 : n_rows, idx, map, val, bits, (Py_ssize_t)room,
                       PyMem_Malloc((size_t)parts * room * 2 * sizeof(uint32_t)),
                       PyMem_Malloc((size_t)parts * room * sizeof(double)), {0}};
    if (job.keys == NULL || job.tv == NULL) {
        PyMem_Free(job.keys); PyMem_Free(job.tv);
        release_views(&indptr, &indices, &data, &new_col, NULL);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    run_parts(renumber_part, &job, parts);
    Py_END_ALLOW_THREADS
    int repeated = 0;
    for (int k = 0; k < parts; k++)
        repeated |= job.repeated[k];
    PyMem_Free(job.keys);
    PyMem_Free(job.tv);
    release_views(&indptr, &indices, &data, &new_col, NULL);
    if (repeated) {
        PyErr_SetString(PyExc_ValueError, "renumber_rows: a row holds a column twice");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ Fisher and NB row sums */

typedef struct {
    double dev;
    long long col;
    Py_ssize_t pos;
} Candidate;

/* strongest first; ties: lower column, then earlier entry (NumPy's stable sorts in _clues) */
static int stronger(const void *a, const void *b)
{
    const Candidate *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev > y->dev ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

/* Rearranges a[0 .. n-1] so that its first k items are the k strongest (stronger() is a total
   order: positions differ), in no particular order: Hoare's FIND (quickselect, median-of-three
   pivot), linear on average where sorting every candidate cost n log n comparisons through a
   function pointer. The same set as the first k of the sorted array, so the same clues. */
static void select_strongest(Candidate *a, Py_ssize_t n, Py_ssize_t k)
{
    Py_ssize_t lo = 0, hi = n - 1, target = k - 1;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        Candidate t;
        if (stronger(&a[mid], &a[lo]) < 0) { t = a[mid]; a[mid] = a[lo]; a[lo] = t; }
        if (stronger(&a[hi], &a[lo]) < 0) { t = a[hi]; a[hi] = a[lo]; a[lo] = t; }
        if (stronger(&a[hi], &a[mid]) < 0) { t = a[hi]; a[hi] = a[mid]; a[mid] = t; }
        Candidate pivot = a[mid];
        Py_ssize_t i = lo, j = hi;
        while (i <= j) {
            while (stronger(&a[i], &pivot) < 0)
                i++;
            while (stronger(&pivot, &a[j]) < 0)
                j--;
            if (i <= j) {
                t = a[i]; a[i] = a[j]; a[j] = t;
                i++;
                j--;
            }
        }
        if (target <= j)
            hi = j;
        else if (target >= i)
            lo = i;
        else
            break;
    }
}

/* spamkit.models.robinson.RobinsonFisher.clue_sums: for each row of a CSR matrix of token
   presence, Robinson's f(w) = (s x + n p) / (s + n) of each column (p = b / (b + g), b and g
   the column's share of the spam and of the ham messages; x where there is no evidence),
   its clues (|f - 1/2| >= min_dev; past max_clues > 0 the strongest, ties by lower column),
   and out[3i .. 3i+2] = (number of clues, sum of ln f, sum of ln(1 - f)) over the clues in
   the row's order, f clipped to [1e-300, 1 - 1e-16]. The same arithmetic in the same order
   as RobinsonFisher._clues and the bincounts of its caller (tests/test_robinson.py). */
typedef struct {
    const long long *ptr;
    const int32_t *c32;
    const long long *c64;
    int narrow;
    const double *hc, *sc;
    double n_ham, n_spam, s, x, min_dev;
    Py_ssize_t max_clues, n_rows, longest;
    double *out, *f;                              /* f: `longest` doubles per part */
    char *clue;                                   /* `longest` per part */
    Candidate *cand;                              /* `longest` per part */
} FisherJob;

static void fisher_part(void *arg, int part, int parts)
{
    FisherJob *J = arg;
    Py_ssize_t lo, hi;
    row_part(J->ptr, 0, J->n_rows, part, parts, &lo, &hi);
    const long long *ptr = J->ptr;
    double *f = J->f + (size_t)part * J->longest;
    char *clue = J->clue + (size_t)part * J->longest;
    Candidate *cand = J->cand + (size_t)part * J->longest;
    const double n_ham = J->n_ham, n_spam = J->n_spam, s = J->s, x = J->x, min_dev = J->min_dev;
    const Py_ssize_t max_clues = J->max_clues;
    for (Py_ssize_t i = lo; i < hi; i++) {
        long long start = ptr[i], len = ptr[i + 1] - ptr[i];
        Py_ssize_t n_clues = 0;
        for (long long k = 0; k < len; k++) {
            long long j = J->narrow ? (long long)J->c32[start + k] : J->c64[start + k];
            double h = J->hc[j], sp = J->sc[j];
            double b = n_spam > 0 ? sp / n_spam : 0.0;
            double g = n_ham > 0 ? h / n_ham : 0.0;
            double p = b + g > 0 ? b / (b + g) : x;
            double n = h + sp;
            double den = s + n;
            double fk = den > 0 ? (s * x + n * p) / den : x;
            f[k] = fk;
            clue[k] = fabs(fk - 0.5) >= min_dev;
            n_clues += clue[k];
        }
        if (max_clues > 0 && n_clues > max_clues) {
            Py_ssize_t m = 0;
            for (long long k = 0; k < len; k++)
                if (clue[k]) {
                    cand[m].dev = fabs(f[k] - 0.5);
                    cand[m].col = J->narrow ? (long long)J->c32[start + k] : J->c64[start + k];
                    cand[m].pos = (Py_ssize_t)k;
                    m++;
                    clue[k] = 0;
                }
            select_strongest(cand, m, max_clues);
            for (Py_ssize_t q = 0; q < max_clues; q++)
                clue[cand[q].pos] = 1;
            n_clues = max_clues;
        }
        double log_f = 0.0, log_1mf = 0.0;
        for (long long k = 0; k < len; k++)
            if (clue[k]) {
                double fc = f[k] < 1e-300 ? 1e-300 : (f[k] > 1 - 1e-16 ? 1 - 1e-16 : f[k]);
                log_f += log(fc);
                log_1mf += log1p(-fc);
            }
        J->out[3 * i] = (double)n_clues;
        J->out[3 * i + 1] = log_f;
        J->out[3 * i + 2] = log_1mf;
    }
}

static PyObject *fisher_sums(PyObject *self, PyObject *args)
{
    PyObject *o_indptr, *o_indices, *o_ham, *o_spam, *o_out;
    double n_ham, n_spam, s, x, min_dev;
    Py_ssize_t max_clues;
    if (!PyArg_ParseTuple(args, "OOOOdddddnO:fisher_sums", &o_indptr, &o_indices, &o_ham, &o_spam, &n_ham, &n_spam,
                          &s, &x, &min_dev, &max_clues, &o_out))
        return NULL;
    Py_buffer indptr = {0}, indices = {0}, ham = {0}, spam = {0}, out = {0};
    int narrow;
    if (get_buffer(o_indptr, &indptr, "q", 8, 0, "indptr") < 0 || get_index_buffer(o_indices, &indices, &narrow) < 0
            || get_buffer(o_ham, &ham, "d", 8, 0, "ham") < 0 || get_buffer(o_spam, &spam, "d", 8, 0, "spam") < 0
            || get_buffer(o_out, &out, "d", 8, 1, "out") < 0) {
        release_views(&indptr, &indices, &ham, &spam, &out, NULL);
        return NULL;
    }
    const long long *ptr = indptr.buf;
    Py_ssize_t n_rows = indptr.shape[0] - 1, nnz = indices.shape[0], n_cols = ham.shape[0];
    int bad = spam.shape[0] != n_cols || out.shape[0] != 3 * (n_rows < 0 ? 0 : n_rows)
              || !csr_fits(ptr, n_rows, indices.buf, narrow, nnz, n_cols);
    Py_ssize_t longest = 0;
    for (Py_ssize_t i = 0; !bad && i < n_rows; i++)
        if (ptr[i + 1] - ptr[i] > longest)
            longest = (Py_ssize_t)(ptr[i + 1] - ptr[i]);
    int parts = bad ? 1 : parts_for(nnz, ROWS_PART_NNZ);
    FisherJob job = {ptr, indices.buf, indices.buf, narrow, ham.buf, spam.buf, n_ham, n_spam, s, x, min_dev,
                     max_clues, n_rows < 0 ? 0 : n_rows, longest, out.buf, NULL, NULL, NULL};
    if (!bad && longest) {
        size_t room = (size_t)parts * (size_t)longest;
        job.f = PyMem_Malloc(room * sizeof(double));
        job.clue = PyMem_Malloc(room);
        job.cand = PyMem_Malloc(room * sizeof(Candidate));
        if (job.f == NULL || job.clue == NULL || job.cand == NULL) {
            PyMem_Free(job.f); PyMem_Free(job.clue); PyMem_Free(job.cand);
            release_views(&indptr, &indices, &ham, &spam, &out, NULL);
            return PyErr_NoMemory();
        }
    }
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        run_parts(fisher_part, &job, parts);
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(job.f); PyMem_Free(job.clue); PyMem_Free(job.cand);
    release_views(&indptr, &indices, &ham, &spam, &out, NULL);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "fisher_sums: the matrix, counts and output do not fit together");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* spamkit.models.stack.FisherNBStack._nb_log_odds: for each row of a CSR matrix, out[i] =
   sum over its entries, in order, of x_k [(ln(spam_j + a) - den1) - (ln(ham_j + a) - den0)]
   (multinomial NB's log-odds without its prior), as np.bincount sums the weights. */
typedef struct {
    const long long *ptr;
    const int32_t *c32;
    const long long *c64;
    int narrow;
    const double *hc, *sc, *val;
    double a, den0, den1;
    Py_ssize_t n_rows, n_cols;
    double *out;
    double *weight;                               /* n_cols per part, or NULL: no memo */
    unsigned char *known;                         /* n_cols per part */
} NbJob;

static void nb_part(void *arg, int part, int parts)
{
    NbJob *J = arg;
    Py_ssize_t lo, hi;
    row_part(J->ptr, 0, J->n_rows, part, parts, &lo, &hi);
    const long long *ptr = J->ptr;
    double *weight = J->weight != NULL ? J->weight + (size_t)part * J->n_cols : NULL;
    unsigned char *known = J->weight != NULL ? J->known + (size_t)part * J->n_cols : NULL;
    const double a = J->a, den0 = J->den0, den1 = J->den1;
    for (Py_ssize_t i = lo; i < hi; i++) {
        double z = 0.0;
        for (long long k = ptr[i]; k < ptr[i + 1]; k++) {
            long long j = J->narrow ? (long long)J->c32[k] : J->c64[k];
            double w;
            if (weight != NULL && known[j]) {
                w = weight[j];
            } else {
                w = (log(J->sc[j] + a) - den1) - (log(J->hc[j] + a) - den0);
                if (weight != NULL) {
                    weight[j] = w;
                    known[j] = 1;
                }
            }
            z += w * J->val[k];
        }
        J->out[i] = z;
    }
}

static PyObject *nb_sums(PyObject *self, PyObject *args)
{
    PyObject *o_indptr, *o_indices, *o_data, *o_ham, *o_spam, *o_out;
    double a, den0, den1;
    if (!PyArg_ParseTuple(args, "OOOOOdddO:nb_sums", &o_indptr, &o_indices, &o_data, &o_ham, &o_spam, &a, &den0,
                          &den1, &o_out))
        return NULL;
    Py_buffer indptr = {0}, indices = {0}, data = {0}, ham = {0}, spam = {0}, out = {0};
    int narrow;
    if (get_buffer(o_indptr, &indptr, "q", 8, 0, "indptr") < 0 || get_index_buffer(o_indices, &indices, &narrow) < 0
            || get_buffer(o_data, &data, "d", 8, 0, "data") < 0 || get_buffer(o_ham, &ham, "d", 8, 0, "ham") < 0
            || get_buffer(o_spam, &spam, "d", 8, 0, "spam") < 0 || get_buffer(o_out, &out, "d", 8, 1, "out") < 0) {
        release_views(&indptr, &indices, &data, &ham, &spam, &out, NULL);
        return NULL;
    }
    const long long *ptr = indptr.buf;
    Py_ssize_t n_rows = indptr.shape[0] - 1, nnz = indices.shape[0], n_cols = ham.shape[0];
    int bad = spam.shape[0] != n_cols || data.shape[0] != nnz || out.shape[0] != (n_rows < 0 ? 0 : n_rows)
              || !csr_fits(ptr, n_rows, indices.buf, narrow, nnz, n_cols);
    if (!bad) {
        int parts = parts_for(nnz, ROWS_PART_NNZ);
        NbJob job = {ptr, indices.buf, indices.buf, narrow, ham.buf, spam.buf, data.buf, a, den0, den1, n_rows,
                     n_cols, out.buf, NULL, NULL};
        /* each column's weight once per part, where the rows hold many entries per column (a
           fold of training messages: the same numbers, two logarithms per column instead of
           per entry) */
        if (nnz >= n_cols / 4 && n_cols > 0) {
            job.weight = PyMem_Malloc((size_t)parts * (size_t)n_cols * sizeof(double));
            job.known = job.weight != NULL ? PyMem_Calloc((size_t)parts * (size_t)n_cols, 1) : NULL;
            if (job.known == NULL) {
                PyMem_Free(job.weight);
                job.weight = NULL;
            }
        }
        Py_BEGIN_ALLOW_THREADS
        run_parts(nb_part, &job, parts);
        Py_END_ALLOW_THREADS
        PyMem_Free(job.weight);
        PyMem_Free(job.known);
    }
    release_views(&indptr, &indices, &data, &ham, &spam, &out, NULL);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "nb_sums: the matrix, counts and output do not fit together");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* ---- byte context models (spamkit.bytekeys, spamkit.models.context) ----
   The slots of the strings of 1..order+1 symbols ending with each symbol of a text, by the
   arithmetic of spamkit.bytekeys.context_keys (tests/test_context.py compares), computed as the
   text is read instead of stored: symbol i of a text of n bytes is byte i, the end (256) at i = n,
   a pad (257) before the start. */
#define CTX_END 256u
#define CTX_PAD 257u
#define CTX_MAX_ORDER 16
static const uint64_t CTX_MIX = 0x9E3779B97F4A7C15ull, CTX_STEP = 0x100000001B3ull;

static inline uint64_t ctx_symbol(const unsigned char *b, Py_ssize_t n, Py_ssize_t i)
{
    return i < 0 ? CTX_PAD : (i < n ? (uint64_t)b[i] : CTX_END);
}

static inline void ctx_slots(const unsigned char *b, Py_ssize_t n, Py_ssize_t i, int order, int bits, int64_t *out)
{
    uint64_t h = ctx_symbol(b, n, i) + 1;
    for (int k = 0; k <= order; k++) {
        if (k)
            h = (h * CTX_STEP) ^ (ctx_symbol(b, n, i - k) + 1);
        out[k] = (int64_t)(((((h + (uint64_t)(k + 1) * CTX_MIX) * CTX_STEP) ^ (uint64_t)k) * CTX_MIX) >> (64 - bits));
    }
}

/* The slots of symbol i (if the text has it: i <= n) into out, their counts prefetched. The
   table is slot-major: the two classes' counts of slot s are table[2 s] and table[2 s + 1], one
   8-byte pair, so one cache line holds what scoring reads of a slot for both classes. The loops
   below call it two symbols ahead, so that the lookups of a symbol (random reads in a table much
   larger than the cache) overlap the work on the two before it. */
static inline void ctx_ahead(const unsigned char *b, Py_ssize_t n, Py_ssize_t i, int order, int bits, int64_t *out,
                             const uint32_t *table)
{
    if (i > n)
        return;
    ctx_slots(b, n, i, order, bits, out);
    for (int k = 0; k <= order; k++)
        PREFETCH(&table[2 * out[k]]);
}

/* The texts of a sequence as (pointer, length) pairs, each cut at max_bytes; *owner holds them
   (a tuple) until released. Only bytes are accepted. */
static int ctx_texts(PyObject *seq, Py_ssize_t max_bytes, PyObject **owner, const unsigned char ***ptrs,
                     Py_ssize_t **lens)
{
    *owner = PySequence_Tuple(seq);
    if (*owner == NULL)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(*owner);
    *ptrs = PyMem_Malloc(sizeof(**ptrs) * (n ? n : 1));
    *lens = PyMem_Malloc(sizeof(**lens) * (n ? n : 1));
    if (*ptrs == NULL || *lens == NULL) {
        PyMem_Free(*ptrs); PyMem_Free(*lens); Py_CLEAR(*owner);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t t = 0; t < n; t++) {
        PyObject *item = PyTuple_GET_ITEM(*owner, t);
        if (!PyBytes_Check(item)) {
            PyErr_Format(PyExc_TypeError, "context texts must be bytes, got %.80s", Py_TYPE(item)->tp_name);
            PyMem_Free(*ptrs); PyMem_Free(*lens); Py_CLEAR(*owner);
            return -1;
        }
        (*ptrs)[t] = (const unsigned char *)PyBytes_AS_STRING(item);
        Py_ssize_t len = PyBytes_GET_SIZE(item);
        (*lens)[t] = len < max_bytes ? len : max_bytes;
    }
    return 0;
}

/* Counts every slot of every symbol of each text once more in its class's column of the
   slot-major table (a count at UINT32_MAX stays there: saturated), or with unlearn once less:
   a saturated count stays, and a count at zero stops the pass. Returns the number of updates
   made before it stopped (-1: all of them). Learning the first `limit` updates (limit >= 0)
   replays that many and no more: what puts a stopped unlearning back. */
static Py_ssize_t ctx_apply(const unsigned char **ptrs, const Py_ssize_t *lens, const long long *code,
                            Py_ssize_t n_texts, int order, int bits, uint32_t *table, int unlearn, Py_ssize_t limit)
{
    int64_t ring[3][CTX_MAX_ORDER + 1];
    Py_ssize_t done = 0;
    for (Py_ssize_t t = 0; t < n_texts; t++) {
        uint32_t *column = table + code[t];
        Py_ssize_t n = lens[t];
        ctx_ahead(ptrs[t], n, 0, order, bits, ring[0], table);
        ctx_ahead(ptrs[t], n, 1, order, bits, ring[1], table);
        for (Py_ssize_t i = 0; i <= n; i++) {
            ctx_ahead(ptrs[t], n, i + 2, order, bits, ring[(i + 2) % 3], table);
            const int64_t *slot = ring[i % 3];
            for (int k = 0; k <= order; k++, done++) {
                if (limit >= 0 && done >= limit)
                    return -1;
                uint32_t *count = &column[2 * slot[k]];
                if (*count == UINT32_MAX)
                    continue;
                if (!unlearn)
                    (*count)++;
                else if (*count == 0)
                    return done;
                else
                    (*count)--;
            }
        }
    }
    return -1;
}

/* context_learn(texts, codes, order, bits, max_bytes, table, sign=1) -> bool: every slot of every
   symbol of text t counted once more (sign 1) or once less (sign -1) in column codes[t] of the
   slot-major uint32 table (2 * 2**bits counts, slot s of class c at 2 s + c). Unlearning that
   would take a count below zero changes nothing and returns False. */
static PyObject *context_learn(PyObject *self, PyObject *args)
{
    PyObject *o_texts, *o_codes, *o_table;
    int order, bits, sign = 1;
    Py_ssize_t max_bytes;
    if (!PyArg_ParseTuple(args, "OOiinO|i:context_learn", &o_texts, &o_codes, &order, &bits, &max_bytes, &o_table,
                          &sign))
        return NULL;
    if (order < 0 || order > CTX_MAX_ORDER || bits < 8 || bits > 30 || max_bytes < 1 || (sign != 1 && sign != -1)) {
        PyErr_SetString(PyExc_ValueError, "context_learn: order, bits, max_bytes or sign out of range");
        return NULL;
    }
    PyObject *owner;
    const unsigned char **ptrs;
    Py_ssize_t *lens;
    if (ctx_texts(o_texts, max_bytes, &owner, &ptrs, &lens) < 0)
        return NULL;
    Py_buffer codes = {0}, tab = {0};
    if (get_buffer(o_codes, &codes, "q", 8, 0, "codes") < 0 || get_buffer(o_table, &tab, "I", 4, 1, "table") < 0) {
        release_views(&codes, &tab, NULL);
        PyMem_Free(ptrs); PyMem_Free(lens); Py_DECREF(owner);
        return NULL;
    }
    Py_ssize_t n_texts = PyTuple_GET_SIZE(owner), size = (Py_ssize_t)1 << bits;
    const long long *code = codes.buf;
    int bad = codes.shape[0] != n_texts || tab.shape[0] != 2 * size, done = 1;
    for (Py_ssize_t t = 0; !bad && t < n_texts; t++)
        bad = code[t] != 0 && code[t] != 1;
    if (!bad) {
        uint32_t *table = tab.buf;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t stopped = ctx_apply(ptrs, lens, code, n_texts, order, bits, table, sign < 0, -1);
        if (stopped >= 0) {                  /* put back what the stopped unlearning took */
            ctx_apply(ptrs, lens, code, n_texts, order, bits, table, 0, stopped);
            done = 0;
        }
        Py_END_ALLOW_THREADS
    }
    release_views(&codes, &tab, NULL);
    PyMem_Free(ptrs); PyMem_Free(lens); Py_DECREF(owner);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "context_learn: the texts, codes and table do not fit together");
        return NULL;
    }
    return PyBool_FromLong(done);
}

/* context_ratios(texts, order, bits, max_bytes, table, texts0, texts1, symbols0, symbols1, beta, out,
   lengths) -> None: per text, the sum over its symbols of log p_1 - log p_0 of the blended model
   (spamkit.models.context.ByteContextModel.symbol_log_probs, in the same order) into out, and its
   number of symbols into lengths; table: slot-major uint32 counts, as context_learn's. */
static PyObject *context_ratios(PyObject *self, PyObject *args)
{
    PyObject *o_texts, *o_table, *o_out, *o_len;
    int order, bits;
    Py_ssize_t max_bytes;
    double texts0, texts1, symbols0, symbols1, beta;
    if (!PyArg_ParseTuple(args, "OiinOdddddOO:context_ratios", &o_texts, &order, &bits, &max_bytes, &o_table,
                          &texts0, &texts1, &symbols0, &symbols1, &beta, &o_out, &o_len))
        return NULL;
    if (order < 0 || order > CTX_MAX_ORDER || bits < 8 || bits > 30 || max_bytes < 1 || !(beta > 0)) {
        PyErr_SetString(PyExc_ValueError, "context_ratios: order, bits, max_bytes or beta out of range");
        return NULL;
    }
    PyObject *owner;
    const unsigned char **ptrs;
    Py_ssize_t *lens;
    if (ctx_texts(o_texts, max_bytes, &owner, &ptrs, &lens) < 0)
        return NULL;
    Py_buffer tab = {0}, out = {0}, len = {0};
    if (get_buffer(o_table, &tab, "I", 4, 0, "table") < 0 || get_buffer(o_out, &out, "d", 8, 1, "out") < 0
            || get_buffer(o_len, &len, "q", 8, 1, "lengths") < 0) {
        release_views(&tab, &out, &len, NULL);
        PyMem_Free(ptrs); PyMem_Free(lens); Py_DECREF(owner);
        return NULL;
    }
    Py_ssize_t n_texts = PyTuple_GET_SIZE(owner), size = (Py_ssize_t)1 << bits;
    int bad = tab.shape[0] != 2 * size || out.shape[0] != n_texts || len.shape[0] != n_texts;
    if (!bad) {
        const uint32_t *table = tab.buf;
        const double n_texts_of[2] = {texts0, texts1}, n_symbols_of[2] = {symbols0, symbols1};
        double *o = out.buf;
        long long *olen = len.buf;
        Py_BEGIN_ALLOW_THREADS
        /* A context's count is the count its string had as the previous symbol's pair (kept,
           not read again). */
        int64_t ring[3][CTX_MAX_ORDER + 1];
        double pair_before[2][CTX_MAX_ORDER + 1];
        for (Py_ssize_t t = 0; t < n_texts; t++) {
            double sum = 0.0;
            Py_ssize_t n = lens[t];
            ctx_ahead(ptrs[t], n, 0, order, bits, ring[0], table);
            ctx_ahead(ptrs[t], n, 1, order, bits, ring[1], table);
            for (Py_ssize_t i = 0; i <= n; i++) {
                ctx_ahead(ptrs[t], n, i + 2, order, bits, ring[(i + 2) % 3], table);
                const int64_t *slot = ring[i % 3];
                double lp[2];
                for (int c = 0; c < 2; c++) {
                    double p = 1.0 / 257.0, pair[CTX_MAX_ORDER + 1];
                    for (int k = 0; k <= order; k++) {
                        double n_context = k == 0 ? n_symbols_of[c] : (i == 0 ? n_texts_of[c] : pair_before[c][k - 1]);
                        double n_pair = (double)table[2 * slot[k] + c];
                        pair[k] = n_pair;
                        if (n_pair > n_context)
                            n_pair = n_context;
                        p = (n_pair + beta * p) / (n_context + beta);
                    }
                    memcpy(pair_before[c], pair, sizeof(double) * (size_t)(order + 1));
                    lp[c] = log(p);
                }
                sum += lp[1] - lp[0];
            }
            o[t] = sum;
            olen[t] = n + 1;
        }
        Py_END_ALLOW_THREADS
    }
    release_views(&tab, &out, &len, NULL);
    PyMem_Free(ptrs); PyMem_Free(lens); Py_DECREF(owner);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "context_ratios: the texts, table and outputs do not fit together");
        return NULL;
    }
    Py_RETURN_NONE;
}

/* context_unpack(data, table) -> int: a context table packed by spamkit.models.context.pack_table
   (LEB128 varints: the table's bits, then per slot with a count, in slot order, the gap since the
   previous such slot and its two classes' counts) written out whole into table (uint32, two per
   slot; the slots between are set to zero). Returns the number of slots with a count. Hostile
   input is refused with ValueError: a table of another size, a varint cut short or longer than 5
   bytes, a number past 2**32 - 1, a slot past the table, a slot stored with no count. */
static int ctx_varint(const unsigned char *p, Py_ssize_t n, Py_ssize_t *at, uint64_t *value)
{
    uint64_t v = 0;
    for (int k = 0; k < 5; k++) {
        if (*at >= n)
            return -1;
        unsigned char b = p[(*at)++];
        v |= (uint64_t)(b & 0x7f) << (7 * k);
        if (!(b & 0x80)) {
            *value = v;
            return v > 0xffffffffu ? -1 : 0;
        }
    }
    return -1;
}

/* The header of a packed table: its bits, which must make a table of `slots` slots. NULL, or why not. */
static const char *ctx_packed_header(const unsigned char *p, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t slots)
{
    uint64_t bits;
    if (ctx_varint(p, n, at, &bits) < 0 || bits > 30 || ((Py_ssize_t)1 << bits) != slots)
        return "it is a table of another size than the model's settings say";
    return NULL;
}

/* The next stored slot of a packed table, read at *at, checked: its slot (the first not before
   *next, which then moves past it) and its two counts. NULL, or why the data is not a table. */
static const char *ctx_packed_entry(const unsigned char *p, Py_ssize_t n, Py_ssize_t *at, Py_ssize_t slots,
                                    Py_ssize_t *next, Py_ssize_t *slot, uint64_t *c0, uint64_t *c1)
{
    uint64_t gap;
    if (ctx_varint(p, n, at, &gap) < 0 || ctx_varint(p, n, at, c0) < 0 || ctx_varint(p, n, at, c1) < 0)
        return "a number is cut short, too long or past 2**32 - 1";
    if (gap >= (uint64_t)(slots - *next))
        return "a slot lies past the table";
    if (*c0 == 0 && *c1 == 0)
        return "a slot is stored with no count";
    *slot = *next + (Py_ssize_t)gap;
    *next = *slot + 1;
    return NULL;
}

static PyObject *context_unpack(PyObject *self, PyObject *args)
{
    PyObject *o_data, *o_table;
    if (!PyArg_ParseTuple(args, "OO:context_unpack", &o_data, &o_table))
        return NULL;
    Py_buffer data = {0}, tab = {0};
    if (get_buffer(o_data, &data, "B", 1, 0, "data") < 0)
        return NULL;
    if (get_buffer(o_table, &tab, "I", 4, 1, "table") < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    const unsigned char *p = data.buf;
    uint32_t *table = tab.buf;
    Py_ssize_t n = data.shape[0], slots = tab.shape[0] / 2, at = 0, next = 0, stored = 0;
    const char *why = tab.shape[0] % 2 ? "the table is not two counts a slot" : NULL;
    if (!why)
        why = ctx_packed_header(p, n, &at, slots);
    Py_BEGIN_ALLOW_THREADS
    while (!why && at < n) {
        Py_ssize_t before = next, slot;
        uint64_t c0, c1;
        if ((why = ctx_packed_entry(p, n, &at, slots, &next, &slot, &c0, &c1)) != NULL)
            break;
        memset(table + 2 * before, 0, sizeof(uint32_t) * 2 * (size_t)(slot - before));
        table[2 * slot] = (uint32_t)c0;
        table[2 * slot + 1] = (uint32_t)c1;
        stored++;
    }
    if (!why)
        memset(table + 2 * next, 0, sizeof(uint32_t) * 2 * (size_t)(slots - next));
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    PyBuffer_Release(&tab);
    if (why) {
        PyErr_Format(PyExc_ValueError, "packed context table: %s", why);
        return NULL;
    }
    return PyLong_FromSsize_t(stored);
}

/* context_index(data, bits) -> bytes: a packed context table (as context_unpack reads it) checked
   whole, with the same refusals, and indexed for context_gather: for each block of 64 slots, the
   byte offset of its first stored slot in data and the slot stored before it (-1: none), two
   int64 a block. Pipe mode scores one message from the packed table through it: a few thousand
   slots looked up instead of 2**bits written out. */
#define CTX_BLOCK_BITS 6
static PyObject *context_index(PyObject *self, PyObject *args)
{
    PyObject *o_data;
    int bits;
    if (!PyArg_ParseTuple(args, "Oi:context_index", &o_data, &bits))
        return NULL;
    if (bits < CTX_BLOCK_BITS || bits > 30) {
        PyErr_SetString(PyExc_ValueError, "context_index: bits out of range");
        return NULL;
    }
    Py_buffer data = {0};
    if (get_buffer(o_data, &data, "B", 1, 0, "data") < 0)
        return NULL;
    Py_ssize_t blocks = (Py_ssize_t)1 << (bits - CTX_BLOCK_BITS), slots = (Py_ssize_t)1 << bits;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)sizeof(int64_t) * 2 * blocks);
    if (out == NULL) {
        PyBuffer_Release(&data);
        return NULL;
    }
    int64_t *index = (int64_t *)PyBytes_AS_STRING(out);
    const unsigned char *p = data.buf;
    Py_ssize_t n = data.shape[0], at = 0, next = 0, block = 0;
    int64_t previous = -1;
    const char *why;
    Py_BEGIN_ALLOW_THREADS
    why = ctx_packed_header(p, n, &at, slots);
    while (!why && at < n) {
        Py_ssize_t entry = at, slot;
        uint64_t c0, c1;
        if ((why = ctx_packed_entry(p, n, &at, slots, &next, &slot, &c0, &c1)) != NULL)
            break;
        for (; block <= (slot >> CTX_BLOCK_BITS); block++) {      /* blocks up to this slot's start here */
            index[2 * block] = entry;
            index[2 * block + 1] = previous;
        }
        previous = slot;
    }
    for (; !why && block < blocks; block++) {                    /* blocks after the last stored slot */
        index[2 * block] = n;
        index[2 * block + 1] = previous;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    if (why) {
        Py_DECREF(out);
        PyErr_Format(PyExc_ValueError, "packed context table: %s", why);
        return NULL;
    }
    return out;
}

/* The counts of one slot from a packed table checked and indexed by context_index. */
static inline void ctx_lookup(const unsigned char *p, Py_ssize_t n, const int64_t *index, int64_t slot,
                              uint32_t *pair)
{
    int64_t block = slot >> CTX_BLOCK_BITS, previous = index[2 * block + 1];
    Py_ssize_t at = (Py_ssize_t)index[2 * block];
    pair[0] = pair[1] = 0;
    if (at < 0 || at > n)                              /* not an index context_index made: nothing read */
        return;
    while (at < n) {
        uint64_t gap = 0, c0 = 0, c1 = 0;
        if (ctx_varint(p, n, &at, &gap) < 0 || ctx_varint(p, n, &at, &c0) < 0 || ctx_varint(p, n, &at, &c1) < 0)
            return;                                    /* (checked whole by context_index: not met) */
        int64_t here = previous + 1 + (int64_t)gap;
        if (here >= slot) {
            if (here == slot) {
                pair[0] = (uint32_t)c0;
                pair[1] = (uint32_t)c1;
            }
            return;
        }
        previous = here;
    }
}

/* context_gather(texts, order, bits, max_bytes, data, index, table) -> None: the counts of every
   slot the texts' symbols read (what context_ratios reads of them) copied from a packed table
   (data, indexed by context_index) into table, which then scores those texts as the whole table
   would. The other slots of table are not written. */
static PyObject *context_gather(PyObject *self, PyObject *args)
{
    PyObject *o_texts, *o_data, *o_index, *o_table;
    int order, bits;
    Py_ssize_t max_bytes;
    if (!PyArg_ParseTuple(args, "OiinOOO:context_gather", &o_texts, &order, &bits, &max_bytes, &o_data, &o_index,
                          &o_table))
        return NULL;
    if (order < 0 || order > CTX_MAX_ORDER || bits < CTX_BLOCK_BITS || bits > 30 || max_bytes < 1) {
        PyErr_SetString(PyExc_ValueError, "context_gather: order, bits or max_bytes out of range");
        return NULL;
    }
    PyObject *owner;
    const unsigned char **ptrs;
    Py_ssize_t *lens;
    if (ctx_texts(o_texts, max_bytes, &owner, &ptrs, &lens) < 0)
        return NULL;
    Py_buffer data = {0}, index = {0}, tab = {0};
    if (get_buffer(o_data, &data, "B", 1, 0, "data") < 0 || get_buffer(o_index, &index, "B", 1, 0, "index") < 0
            || get_buffer(o_table, &tab, "I", 4, 1, "table") < 0) {
        release_views(&data, &index, &tab, NULL);
        PyMem_Free(ptrs); PyMem_Free(lens); Py_DECREF(owner);
        return NULL;
    }
    Py_ssize_t size = (Py_ssize_t)1 << bits;
    int bad = tab.shape[0] != 2 * size
              || index.shape[0] != (Py_ssize_t)sizeof(int64_t) * 2 * (size >> CTX_BLOCK_BITS);
    if (!bad) {
        const unsigned char *p = data.buf;
        const int64_t *ix = (const int64_t *)index.buf;
        uint32_t *table = tab.buf;
        Py_ssize_t n_data = data.shape[0], n_texts = PyTuple_GET_SIZE(owner);
        Py_BEGIN_ALLOW_THREADS
        int64_t slot[CTX_MAX_ORDER + 1];
        for (Py_ssize_t t = 0; t < n_texts; t++)
            for (Py_ssize_t i = 0; i <= lens[t]; i++) {
                ctx_slots(ptrs[t], lens[t], i, order, bits, slot);
                for (int k = 0; k <= order; k++)
                    ctx_lookup(p, n_data, ix, slot[k], &table[2 * slot[k]]);
            }
        Py_END_ALLOW_THREADS
    }
    release_views(&data, &index, &tab, NULL);
    PyMem_Free(ptrs); PyMem_Free(lens); Py_DECREF(owner);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "context_gather: the index and table do not fit the bits");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"context_learn", context_learn, METH_VARARGS,
     "context_learn(texts, codes, order, bits, max_bytes, table, sign=1) -> bool\n\n"
     "Count (or with sign -1 uncount) the context slots of every symbol of each text in its class's column "
     "(spamkit.models.context); False: unlearning would go below zero, nothing changed."},
    {"context_unpack", context_unpack, METH_VARARGS,
     "context_unpack(data, table) -> int\n\nA packed context table (spamkit.models.context.pack_table) written out "
     "whole into table; the number of slots with a count."},
    {"context_index", context_index, METH_VARARGS,
     "context_index(data, bits) -> bytes\n\nA packed context table checked whole and indexed by blocks of 64 "
     "slots, for context_gather."},
    {"context_gather", context_gather, METH_VARARGS,
     "context_gather(texts, order, bits, max_bytes, data, index, table) -> None\n\nThe counts of the slots the "
     "texts read, from a packed table, written into table."},
    {"context_ratios", context_ratios, METH_VARARGS,
     "context_ratios(texts, order, bits, max_bytes, table, texts0, texts1, symbols0, symbols1, beta, out, "
     "lengths) -> None\n\nPer text, the blended context models' log-likelihood ratio and its number of symbols."},
    {"base64_chars", base64_chars, METH_VARARGS,
     "base64_chars(data, start, stop) -> int\n\nHow many bytes of data[start:stop] are in base64's alphabet."},
    {"html_unescape", html_unescape, METH_O,
     "html_unescape(text) -> str\n\nhtml.unescape(text), with the tables set_html_entities was given."},
    {"set_html_entities", set_html_entities, METH_VARARGS,
     "set_html_entities(html5, invalid_charrefs, invalid_codepoints) -> None\n\n"
     "The standard library's tables for html_unescape (html.entities.html5, html._invalid_charrefs, "
     "html._invalid_codepoints)."},
    {"html_to_text", html_to_text, METH_VARARGS,
     "html_to_text(html, block, invisible, raw_text, tag_attrs, unescape, max_tags) -> (text, urls, tags)\n\n"
     "The C scanner behind spamkit.htmltext.html_to_text; see that function."},
    {"words", words, METH_VARARGS,
     "words(text, max_len, prefix, long_token) -> list of str\n\n"
     "The words of text as spamkit.text.tokenize.WORD_PATTERN_MIN2 finds them; longer than max_len: long_token\n"
     "(left out when prefix is given); prefix (str or None) is put before each word."},
    {"logistic_steps", logistic_steps, METH_VARARGS,
     "logistic_steps(indptr, indices, data, w, b, codes, weights, rate, sign, limit) -> b\n\n"
     "spamkit.models.logistic.OnlineLogistic's gradient steps, one per CSR row in order; w updated in place."},
    {"hash_columns", hash_columns, METH_VARARGS,
     "hash_columns(tokens, n_features) -> bytes of int32\n\n"
     "Each token's column as scikit-learn's FeatureHasher(n_features, alternate_sign=False) puts it."},
    {"known_counts", known_counts, METH_VARARGS,
     "known_counts(index, tokens) -> (columns, counts) or None\n\n"
     "One document's distinct known columns (int32, ascending) and their counts (float64), as bytearrays."},
    {"frozen_index", frozen_index, METH_VARARGS,
     "frozen_index(index) -> table or None\n\n"
     "A fixed vocabulary dict {str: column} as one open-addressing table (see frozen_counts)."},
    {"frozen_counts", frozen_counts, METH_VARARGS,
     "frozen_counts(table, tokens) -> (columns, counts) or None\n\n"
     "known_counts through a frozen_index table, counts as int32 bytes."},
    {"grow_columns", grow_columns, METH_VARARGS,
     "grow_columns(index, terms) -> bytes of int32\n\n"
     "Each term's column in the dict index, a new term getting len(index) (spamkit.features.count_matrix)."},
    {"term_keys", term_keys, METH_VARARGS,
     "term_keys(terms) -> bytes of uint64 (little-endian), or None\n\n"
     "BLAKE2b with an 8-byte digest of each term's UTF-8 bytes (spamkit.lean.term_hash), in C."},
    {"mime_parameters", mime_parameters, METH_VARARGS,
     "mime_parameters(value, max_params) -> dict or None\n\n"
     "spamkit.mime._parameters(value) for an ASCII value without RFC 2231 names; None otherwise."},
    {"column_counts", column_counts, METH_VARARGS,
     "column_counts(indices, n_cols) -> bytes of int64\n\n"
     "np.bincount(indices, minlength=n_cols), without an int64 copy of int32 indices."},
    {"renumber_rows", renumber_rows, METH_VARARGS,
     "renumber_rows(indptr, indices, data, new_col) -> None\n\n"
     "In place: indices[:] = new_col[indices], then each CSR row sorted by column, data moved with it."},
    {"sort_terms", sort_terms, METH_VARARGS,
     "sort_terms(terms, with_terms=False, budget=-1) -> bytes of int64 (with_terms: and the terms in that order), "
     "or None\n\n"
     "The positions of a list of str in sorted order (stable), as sorted(range(len(terms)), key=terms.__getitem__)."},
    {"key_order", key_order, METH_VARARGS,
     "key_order(keys) -> bytes of int64\n\n"
     "np.argsort(keys, kind='stable') of a buffer of uint64 keys, by radix sort."},
    {"loop_parts", loop_parts, METH_VARARGS,
     "loop_parts(work, least) -> int\n\n"
     "How many parts (threads) a loop of work units is cut into here, each of at least least units."},
    {"known_columns", known_columns, METH_VARARGS,
     "known_columns(index, tokens, out) -> None\n\n"
     "Appends index[t] to the list out for each t of tokens in the dict index, in order."},
    {"header_pairs", header_pairs, METH_VARARGS,
     "header_pairs(fields, decode, defects) -> list of (name, value)\n\n"
     "The top header block as spamkit.message.parse_message keeps it: lower-case names, decoded values."},
    {"header_block", header_block, METH_VARARGS,
     "header_block(raw, start, end, max_chars, max_fields) -> (fields, body, first) or None\n\n"
     "A well-formed header block's fields and where its body starts (spamkit.mime._well_formed_block)."},
    {"find_urls", find_urls, METH_VARARGS,
     "find_urls(text) -> list of str\n\n"
     "spamkit.text.tokenize.URL_PATTERN.findall(text), in one forward scan."},
    {"url_host_tokens", url_host_tokens, METH_VARARGS,
     "url_host_tokens(urls, fallback, out) -> None\n\n"
     "Appends 'url:' + each host spamkit.text.tokenize.url_hosts gives for each URL to out."},
    {"received_ips", received_ips, METH_VARARGS,
     "received_ips(values, out) -> None\n\n"
     "Appends the received:ip: tokens (a.b.c.d, a.b.c, a.b) of each dotted quad in values to out."},
    {"url_parts", url_parts, METH_VARARGS,
     "url_parts(urls, out) -> None\n\n"
     "Appends 'url:part:' + each 2-30 character piece of each URL (lower case, cut at separators) to out."},
    {"header_words", header_words, METH_VARARGS,
     "header_words(fields, max_len, long_token, out) -> None\n\n"
     "Appends the words of each (name, value) of fields, prefixed 'name:', to the list out."},
    {"tag_attrs", tag_attrs, METH_VARARGS,
     "tag_attrs(url_attrs, unescape, max_attrs, text) -> (urls, alt)\n\n"
     "The URLs and alt text of a start tag's attribute text: spamkit.htmltext._tag_attrs in C."},
    {"digit_shapes", digit_shapes, METH_VARARGS,
     "digit_shapes(text, cap, out) -> None\n\n"
     "Appends 'shape:dN' to the list out for each run of decimal digits of text (N its length, at most cap)."},
    {"tar_headers", tar_headers, METH_VARARGS, "The canonical tar headers of a block (spamkit.corpus.tree.plain_tar_index)."},
    {"pread_held", pread_held, METH_VARARGS,
     "pread_held(fd, n, offset) -> bytes\n\n"
     "os.pread without releasing the GIL (a small read from the page cache; spamkit.corpus.tree.Spool)."},
    {"fisher_sums", fisher_sums, METH_VARARGS,
     "fisher_sums(indptr, indices, ham, spam, n_ham, n_spam, s, x, min_dev, max_clues, out) -> None\n\n"
     "Per CSR row: (clues, sum ln f, sum ln(1 - f)) of Robinson/Fisher into out (3 per row)."},
    {"nb_sums", nb_sums, METH_VARARGS,
     "nb_sums(indptr, indices, data, ham, spam, alpha, den0, den1, out) -> None\n\n"
     "Per CSR row: multinomial NB's log-odds without the prior, into out."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "spamkit.speedups",
    "Compiled inner loops of spamkit (optional: pure-Python equivalents are used without them).",
    -1, methods
};

PyMODINIT_FUNC PyInit_speedups(void)
{
    for (int c = 0; c < 256; c++)
        latin1_alnum[c] = (unsigned char)Py_UNICODE_ISALNUM((Py_UCS4)c);
    if (PyType_Ready(&NumberingType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&NumberingType);
    if (PyModule_AddObject(m, "Numbering", (PyObject *)&NumberingType) < 0) {
        Py_DECREF(&NumberingType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
