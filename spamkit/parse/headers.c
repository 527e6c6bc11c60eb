/* spamkit.common.speedups, header fields and MIME parameters (spamkit.parse.message, spamkit.parse.mime).
 *
 * One source of the extension spamkit.common.speedups (spamkit/common/speedups.c assembles it); what each
 * function computes and the Python definition it is tested against are said above it. */
#include "speedups.h"

/* 1 for the ASCII white space of str.split() and str.strip(): \t \n \v \f \r, \x1c-\x1f and space */
SK_HIDDEN int sk_ascii_space(Py_UCS1 c)
{
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* item's two str (borrowed) into *name and *value when it is a tuple of two str: 0; else -1,
   a TypeError saying `message` */
SK_HIDDEN int sk_str_pair(PyObject *item, PyObject **name, PyObject **value, const char *message)
{
    if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 || !PyUnicode_Check(PyTuple_GET_ITEM(item, 0))
            || !PyUnicode_Check(PyTuple_GET_ITEM(item, 1))) {
        PyErr_SetString(PyExc_TypeError, message);
        return -1;
    }
    *name = PyTuple_GET_ITEM(item, 0);
    *value = PyTuple_GET_ITEM(item, 1);
    return 0;
}

/* [*a, *b) narrowed to leave out the ASCII white space at both ends (str.strip() on ASCII) */
SK_HIDDEN void sk_ascii_strip(const Py_UCS1 *d, Py_ssize_t *a, Py_ssize_t *b)
{
    while (*a < *b && sk_ascii_space(d[*a]))
        (*a)++;
    while (*b > *a && sk_ascii_space(d[*b - 1]))
        (*b)--;
}

/* d[a:b] in lower case (ASCII), in small when it fits, else in memory the caller frees with
   PyMem_Free when it is not small; NULL (with MemoryError) when none is to be had */
SK_HIDDEN char *sk_ascii_lowered(const Py_UCS1 *d, Py_ssize_t a, Py_ssize_t b, char *small, size_t small_size)
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
        if (sk_ascii_space(d[i]) && (d[i] != ' ' || i == 0 || i == n - 1 || d[i + 1] == ' ')) {
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
        while (i < n && sk_ascii_space(d[i]))
            i++;
        if (i >= n)
            break;
        if (k)
            buf[k++] = ' ';
        while (i < n && !sk_ascii_space(d[i]))
            buf[k++] = (char)d[i++];
    }
    PyObject *out = PyUnicode_FromStringAndSize(buf, k);
    PyMem_Free(buf);
    return out;
}

/* header_pairs(fields, decode, defects) -> list: [(name.strip().lower(), value)] for the
   (name, value) str pairs of fields, what spamkit.message.parse_message keeps of the top header
   block: value is decode(value, defects) -- spamkit.parse.decoding.decode_header_value, the
   definition -- called in order for every value that is not ASCII or holds "=?"; the others,
   which it would return as " ".join(value.split()), are made here (str.split() on ASCII: runs of
   \t \n \v \f \r \x1c-\x1f and space). A name that is not ASCII goes through str.strip().lower(). */
static PyObject *header_pairs(PyObject *self, PyObject *args)
{
    PyObject *fields, *decode, *defects;
    if (!PyArg_ParseTuple(args, "O!OO!:header_pairs", &PyList_Type, &fields, &decode, &PyList_Type, &defects))
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(fields); i++) {
        PyObject *pair = PyList_GET_ITEM(fields, i), *name, *value;
        if (sk_str_pair(pair, &name, &value, "header_pairs: fields must be (str, str) pairs") < 0)
            goto fail;
        Py_INCREF(pair);                          /* decode() runs Python code: hold what we use */
        PyObject *low, *text;
        if (PyUnicode_IS_ASCII(name)) {
            const Py_UCS1 *d = PyUnicode_1BYTE_DATA(name);
            Py_ssize_t a = 0, b = PyUnicode_GET_LENGTH(name);
            sk_ascii_strip(d, &a, &b);
            char small[256];
            char *buf = sk_ascii_lowered(d, a, b, small, sizeof(small));
            if (buf == NULL) {
                Py_DECREF(pair);
                goto fail;
            }
            low = sk_cached_ascii(buf, b - a);
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
        PyObject *name = sk_cached_ascii((const char *)b + pos, colon - pos);
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
                key = sk_cached_ascii(low, len);
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

/* ------------------------------------------------------------------ MIME parameters */

/* value[a:b] stripped of white space and unquoted as spamkit.mime._unquote does: a quoted string
   loses its quotes and the backslash of each quoted pair, <...> its angle brackets. */
static PyObject *unquoted(const Py_UCS1 *v, Py_ssize_t a, Py_ssize_t b)
{
    sk_ascii_strip(v, &a, &b);
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
            sk_ascii_strip(v, &a, &b);
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


SK_HIDDEN PyMethodDef sk_parse_headers_methods[] = {
    {"mime_parameters", mime_parameters, METH_VARARGS,
     "mime_parameters(value, max_params) -> dict or None\n\n"
     "spamkit.mime._parameters(value) for an ASCII value without RFC 2231 names; None otherwise."},
    {"header_pairs", header_pairs, METH_VARARGS,
     "header_pairs(fields, decode, defects) -> list of (name, value)\n\n"
     "The top header block as spamkit.message.parse_message keeps it: lower-case names, decoded values."},
    {"header_block", header_block, METH_VARARGS,
     "header_block(raw, start, end, max_chars, max_fields) -> (fields, body, first) or None\n\n"
     "A well-formed header block's fields and where its body starts (spamkit.mime._well_formed_block)."},
    {NULL, NULL, 0, NULL}
};
