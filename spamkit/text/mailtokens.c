/* spamkit.common.speedups, the mail analyzer's URL pieces, hosts, relay addresses, field words and digit shapes (spamkit.text).
 *
 * One source of the extension spamkit.common.speedups (spamkit/common/speedups.c assembles it); what each
 * function computes and the Python definition it is tested against are said above it. */
#include "speedups.h"

/* The functions of the form f(items, out) -> None: `args` parsed with `format` ("O!O!:name") as
   two lists, and for each item of the first, fn(item, out) (0, or -1 with an exception set); a
   TypeError `what` for an item that is not a str. Returns None, or NULL on error. */
static PyObject *each_str(PyObject *args, const char *format, const char *what, int (*fn)(PyObject *, PyObject *))
{
    PyObject *items, *out;
    if (!PyArg_ParseTuple(args, format, &PyList_Type, &items, &PyList_Type, &out))
        return NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(items); k++) {
        PyObject *item = PyList_GET_ITEM(items, k);
        if (!PyUnicode_Check(item)) {
            PyErr_SetString(PyExc_TypeError, what);
            return NULL;
        }
        if (fn(item, out) < 0)
            return NULL;
    }
    Py_RETURN_NONE;
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

static int url_part_tokens(PyObject *url, PyObject *out)
{
    PyObject *low = PyObject_CallMethod(url, "lower", NULL);
    if (low == NULL)
        return -1;
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
        PyObject *token = sk_literal_and("url:part:", low, start, i, "");
        if (token == NULL || PyList_Append(out, token) < 0) {
            Py_XDECREF(token);
            Py_DECREF(low);
            return -1;
        }
        Py_DECREF(token);
    }
    Py_DECREF(low);
    return 0;
}

static PyObject *url_parts(PyObject *self, PyObject *args)
{
    return each_str(args, "O!O!:url_parts", "url_parts: every URL must be a str", url_part_tokens);
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

/* 1 for a byte a URL's host may hold: not / ? # :, not white space */
static int host_byte(unsigned char c)
{
    return !(c == '/' || c == '?' || c == '#' || c == ':' || sk_ascii_space(c));
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

/* url_host_tokens(urls, fallback, out): for each str of the list urls, "url:" + each host that
   spamkit.text.tokenize.url_hosts(url) gives (the host, and its last two labels where it has
   more than two and is not a dotted number), appended to the list out -- what the mail
   analyzer's tokens.extend("url:" + h for h in url_hosts(url)) appends. An ASCII URL is read
   here, as the regular expression ^(?:[a-z][a-z0-9+.\-]*://)?(?:[^@/?#]*@)?([^/?#:\s]+)
   (IGNORECASE) reads url.strip(), its alternatives tried in the order a backtracking matcher
   tries them; any other goes to fallback(url) (url_hosts itself). tests/test_text.py compares. */
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
        sk_ascii_strip(d, &lo, &n);                                       /* url.strip() */
        d += lo;
        n -= lo;
        Py_ssize_t a = 0, b = 0;
        int found = 0;
        if (n > 0 && sk_ascii_letter(d[0])) {                              /* a scheme, tried first */
            Py_ssize_t p = 1;
            while (p < n && (sk_ascii_letter(d[p]) || (d[p] >= '0' && d[p] <= '9') || d[p] == '+' || d[p] == '.' || d[p] == '-'))
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
        char *host = sk_ascii_lowered(d, a, b, small, sizeof(small));
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
static int received_ip_tokens(PyObject *text, PyObject *out)
{
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text), i = 0;
    while (i < n) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (!sk_is_decimal(c) || (i > 0 && (sk_is_decimal(PyUnicode_READ(kind, data, i - 1))
                                        || PyUnicode_READ(kind, data, i - 1) == '.'))) {
            i++;
            continue;
        }
        Py_ssize_t at = i, ends[4];
        int values4[4], ok = 1;
        for (int g = 0; g < 4 && ok; g++) {
            Py_ssize_t start = at;
            int number = 0;
            while (at < n && sk_is_decimal(PyUnicode_READ(kind, data, at))) {
                number = number * 10 + Py_UNICODE_TODECIMAL(PyUnicode_READ(kind, data, at));
                at++;
                if (at - start > 3)
                    break;
            }
            if (at - start < 1 || at - start > 3 || (at < n && sk_is_decimal(PyUnicode_READ(kind, data, at)))) {
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
                PyObject *token = sk_literal_and("received:ip:", text, i, ends[g], "");
                if (token == NULL || PyList_Append(out, token) < 0) {
                    Py_XDECREF(token);
                    return -1;
                }
                Py_DECREF(token);
            }
        }
        i = ends[3];
    }
    return 0;
}

static PyObject *received_ips(PyObject *self, PyObject *args)
{
    return each_str(args, "O!O!:received_ips", "received_ips: every value must be a str", received_ip_tokens);
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
        PyObject *field = PySequence_Fast_GET_ITEM(fields, f), *name, *value;
        if (sk_str_pair(field, &name, &value, "header_words: each field must be a (name, value) tuple of str") < 0)
            return NULL;
        PyObject *prefix = sk_literal_and("", name, 0, PyUnicode_GET_LENGTH(name), ":");
        if (prefix == NULL)
            return NULL;
        int rc = sk_words_into(out, value, max_len, prefix, long_token);
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
        if (!sk_is_decimal(PyUnicode_READ(kind, data, i))) {
            i++;
            continue;
        }
        Py_ssize_t start = i;
        while (i < n && sk_is_decimal(PyUnicode_READ(kind, data, i)))
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


SK_HIDDEN PyMethodDef sk_text_mailtokens_methods[] = {
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
    {"digit_shapes", digit_shapes, METH_VARARGS,
     "digit_shapes(text, cap, out) -> None\n\n"
     "Appends 'shape:dN' to the list out for each run of decimal digits of text (N its length, at most cap)."},
    {NULL, NULL, 0, NULL}
};
