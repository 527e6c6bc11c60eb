/* spamkit.common.speedups, HTML to text and a start tag's attributes (spamkit.parse.htmltext).
 *
 * One source of the extension spamkit.common.speedups (spamkit/common/speedups.c assembles it); what each
 * function computes and the Python definition it is tested against are said above it. */
#include "speedups.h"

#define MAX_PIECES 4096

/* the pieces of the html the pending text is made of: html[at[i].start:at[i].end] for i < len */
typedef struct {
    struct { Py_ssize_t start, end; } *at;
    Py_ssize_t len, cap;
} Ranges;

static int ranges_add(Ranges *r, Py_ssize_t a, Py_ssize_t b)
{
    if (r->len && r->at[r->len - 1].end == a) {     /* adjacent: extend the last range */
        r->at[r->len - 1].end = b;
        return 0;
    }
    if (r->len == r->cap) {
        Py_ssize_t cap = r->cap ? 2 * r->cap : 16;
        void *at = sk_realloc(r->at, (size_t)cap * sizeof(*r->at));
        if (at == NULL)
            return -1;
        r->at = at;
        r->cap = cap;
    }
    r->at[r->len].start = a;
    r->at[r->len].end = b;
    r->len++;
    return 0;
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
        chunk = PyUnicode_Substring(s->html, r->at[0].start, r->at[0].end);
    } else {
        PyObject *pieces = PyList_New(r->len);
        if (!pieces) return -1;
        for (Py_ssize_t i = 0; i < r->len; i++) {
            PyObject *piece = PyUnicode_Substring(s->html, r->at[i].start, r->at[i].end);
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

SK_HIDDEN int sk_ascii_letter(Py_UCS4 c)
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
    if (!(i < n && sk_ascii_letter(CH(s, i))))
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
            name = sk_cached_ascii(buf, name_end - start);
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
    PyMem_Free(s->data_ranges.at);
    return result;
}


SK_HIDDEN PyMethodDef sk_parse_html_methods[] = {
    {"html_to_text", html_to_text, METH_VARARGS,
     "html_to_text(html, block, invisible, raw_text, tag_attrs, unescape, max_tags) -> (text, urls, tags)\n\n"
     "The C scanner behind spamkit.htmltext.html_to_text; see that function."},
    {"tag_attrs", tag_attrs, METH_VARARGS,
     "tag_attrs(url_attrs, unescape, max_attrs, text) -> (urls, alt)\n\n"
     "The URLs and alt text of a start tag's attribute text: spamkit.htmltext._tag_attrs in C."},
    {NULL, NULL, 0, NULL}
};
