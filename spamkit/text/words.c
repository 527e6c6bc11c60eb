/* spamkit.common.speedups, the default word tokenizer (spamkit.text.tokenize).
 *
 * One source of the extension spamkit.common.speedups (spamkit/common/speedups.c assembles it); what each
 * function computes and the Python definition it is tested against are said above it. */
#include "speedups.h"

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

SK_HIDDEN int sk_is_decimal(Py_UCS4 c)
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
SK_HIDDEN PyObject *sk_literal_and(const char *lit, PyObject *s, Py_ssize_t a, Py_ssize_t b, const char *suffix)
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
SK_HIDDEN unsigned char sk_latin1_alnum[256];


/* is_alnum, by the Latin-1 table in a one-byte string */
static ALWAYS_INLINE int alnum_in(int kind, Py_UCS4 c)
{
    return kind == PyUnicode_1BYTE_KIND ? sk_latin1_alnum[c] : is_alnum(c);
}

/* sk_words_into's scan for one string width: called with a constant kind, so that each width gets
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
            if (!(is_joiner(j) || (j == ',' && sk_is_decimal(PyUnicode_READ(kind, data, i - 1)) && sk_is_decimal(next))))
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
SK_HIDDEN int sk_words_into(PyObject *out, PyObject *text, Py_ssize_t max_len, PyObject *prefix, PyObject *long_token)
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
    if (sk_words_into(out, text, max_len, prefix, long_token) < 0) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}


SK_HIDDEN PyMethodDef sk_text_words_methods[] = {
    {"words", words, METH_VARARGS,
     "words(text, max_len, prefix, long_token) -> list of str\n\n"
     "The words of text as spamkit.text.tokenize.WORD_PATTERN_MIN2 finds them; longer than max_len: long_token\n"
     "(left out when prefix is given); prefix (str or None) is put before each word."},
    {NULL, NULL, 0, NULL}
};
