/* spamkit.common.speedups, a worker's numbering of terms (spamkit.features.numbering).
 *
 * One source of the extension spamkit.common.speedups (spamkit/common/speedups.c assembles it); what each
 * function computes and the Python definition it is tested against are said above it. */
#include "speedups.h"

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
        char *data = sk_realloc(b->data, (size_t)cap);
        if (data == NULL)
            return -1;
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
        PyObject **keys = sk_realloc(self->keys, (size_t)cap * sizeof(PyObject *));
        if (keys == NULL)
            return -1;
        self->keys = keys;
        Py_hash_t *hashes = sk_realloc(self->hashes, (size_t)cap * sizeof(Py_hash_t));
        if (hashes == NULL)
            return -1;
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

/* What number() and columns() check first: `list` (the argument `arg`) is a list, else a
   TypeError, and no call of either runs on this table (a token's __hash__ or __eq__ calling
   back), else a RuntimeError. 0, or -1 with the error set. */
static int numbering_may_start(Numbering *self, PyObject *list, const char *method, const char *arg)
{
    if (!PyList_Check(list)) {
        PyErr_Format(PyExc_TypeError, "Numbering.%s: %s must be a list", method, arg);
        return -1;
    }
    if (self->busy) {
        PyErr_Format(PyExc_RuntimeError, "Numbering.%s called again while it runs", method);
        return -1;
    }
    return 0;
}

static PyObject *numbering_number(Numbering *self, PyObject *token_lists)
{
    if (numbering_may_start(self, token_lists, "number", "token_lists") < 0)
        return NULL;
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
    if (numbering_may_start(self, terms, "columns", "terms") < 0)
        return NULL;
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

SK_HIDDEN PyTypeObject sk_NumberingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "spamkit.common.speedups.Numbering",
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
SK_HIDDEN const char *sk_utf8_of(PyObject *t, Py_ssize_t *len)
{
    const char *bytes = PyUnicode_Check(t) ? PyUnicode_AsUTF8AndSize(t, len) : NULL;
    if (bytes == NULL)
        PyErr_Clear();
    return bytes;
}


SK_HIDDEN PyMethodDef sk_features_numbering_methods[] = {
    {NULL, NULL, 0, NULL}
};
