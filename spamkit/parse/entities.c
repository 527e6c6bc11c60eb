/* spamkit.common.speedups, html.unescape and the base64 alphabet count (spamkit.parse.htmltext, spamkit.parse.message).
 *
 * One source of the extension spamkit.common.speedups (spamkit/common/speedups.c assembles it); what each
 * function computes and the Python definition it is tested against are said above it. */
#include "speedups.h"

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
    Py_UCS4 *buf = sk_realloc(c->buf, (size_t)cap * sizeof(Py_UCS4));
    if (buf == NULL)
        return -1;
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
   len(data[start:stop].translate(None, <every other byte>)) counts (spamkit.parse.decoding.payload_size,
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


SK_HIDDEN PyMethodDef sk_parse_entities_methods[] = {
    {"base64_chars", base64_chars, METH_VARARGS,
     "base64_chars(data, start, stop) -> int\n\nHow many bytes of data[start:stop] are in base64's alphabet."},
    {"html_unescape", html_unescape, METH_O,
     "html_unescape(text) -> str\n\nhtml.unescape(text), with the tables set_html_entities was given."},
    {"set_html_entities", set_html_entities, METH_VARARGS,
     "set_html_entities(html5, invalid_charrefs, invalid_codepoints) -> None\n\n"
     "The standard library's tables for html_unescape (html.entities.html5, html._invalid_charrefs, "
     "html._invalid_codepoints)."},
    {NULL, NULL, 0, NULL}
};
