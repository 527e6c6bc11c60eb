/* spamkit.common.speedups, feature columns: the hashing trick, a fixed vocabulary's columns and counts, the frozen table, the growing vocabulary, CSR column counts and renumbering (spamkit.features.vectorizer).
 *
 * One source of the extension spamkit.common.speedups (spamkit/common/speedups.c assembles it); what each
 * function computes and the Python definition it is tested against are said above it. */
#include "speedups.h"

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

/* value as a column: an int (not a subclass) from 0 to INT32_MAX, or -1 for anything else. */
static long long column_value(PyObject *value)
{
    if (!PyLong_CheckExact(value))
        return -1;
    int overflow = 0;
    long long column = PyLong_AsLongLongAndOverflow(value, &overflow);
    return overflow || column < 0 || column > INT32_MAX ? -1 : column;
}

/* The start of counting one document's tokens: *cols gets room for 2n int32 columns (see
   sorted_counts) and n is returned; -2 when an item of the list is not a str (a subclass
   neither: the counting loops read them as such), for the Python definition to answer;
   -1 with MemoryError set. */
static Py_ssize_t column_buffer(PyObject *tokens, int32_t **cols)
{
    Py_ssize_t n = PyList_GET_SIZE(tokens);
    for (Py_ssize_t i = 0; i < n; i++)
        if (!PyUnicode_CheckExact(PyList_GET_ITEM(tokens, i)))
            return -2;
    *cols = PyMem_Malloc((size_t)(n ? 2 * n : 1) * sizeof(int32_t));
    if (*cols == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return n;
}

static PyObject *known_counts(PyObject *self, PyObject *args)
{
    PyObject *index, *tokens;
    if (!PyArg_ParseTuple(args, "O!O!", &PyDict_Type, &index, &PyList_Type, &tokens))
        return NULL;
    int32_t *cols;
    Py_ssize_t n = column_buffer(tokens, &cols);
    if (n < 0)
        return n == -1 ? NULL : Py_NewRef(Py_None);
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
        long long value = column_value(column);
        if (value < 0) {                                      /* not a column: the Python definition answers */
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
        long long column = PyUnicode_CheckExact(key) ? column_value(value) : -1;
        if (column < 0) {
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
    int32_t *cols;
    Py_ssize_t n = column_buffer(tokens, &cols);
    if (n < 0)
        return n == -1 ? NULL : Py_NewRef(Py_None);
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
    if (sk_get_index_buffer(o_indices, &indices, &narrow) < 0)
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
    sk_row_part(J->indptr, J->narrow_ptr, J->n_rows, part, parts, &lo, &hi);
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
    if (sk_get_index_buffer(o_indptr, &indptr, &narrow_ptr) < 0 || sk_get_buffer(o_indices, &indices, "i", 4, 1, "indices") < 0
            || sk_get_buffer(o_data, &data, "d", 8, 1, "data") < 0 || sk_get_buffer(o_new, &new_col, "i", 4, 0, "new_col") < 0) {
        sk_release_views(&indptr, &indices, &data, &new_col, NULL);
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
        sk_release_views(&indptr, &indices, &data, &new_col, NULL);
        PyErr_Format(PyExc_ValueError, "renumber_rows: %s", bad);
        return NULL;
    }
    int bits = 0;
    while (bits < 32 && ((uint32_t)top >> bits) != 0)
        bits++;
    int parts = sk_parts_for(nnz, ROWS_PART_NNZ);
    size_t room = (size_t)(longest ? longest : 1);
    RenumberJob job = {indptr.buf, narrow_ptr, n_rows < 0 ? 0 : n_rows, idx, map, val, bits, (Py_ssize_t)room,
                       PyMem_Malloc((size_t)parts * room * 2 * sizeof(uint32_t)),
                       PyMem_Malloc((size_t)parts * room * sizeof(double)), {0}};
    if (job.keys == NULL || job.tv == NULL) {
        PyMem_Free(job.keys); PyMem_Free(job.tv);
        sk_release_views(&indptr, &indices, &data, &new_col, NULL);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    sk_run_parts(renumber_part, &job, parts);
    Py_END_ALLOW_THREADS
    int repeated = 0;
    for (int k = 0; k < parts; k++)
        repeated |= job.repeated[k];
    PyMem_Free(job.keys);
    PyMem_Free(job.tv);
    sk_release_views(&indptr, &indices, &data, &new_col, NULL);
    return sk_none_unless(repeated, "renumber_rows: a row holds a column twice");
}

SK_HIDDEN PyMethodDef sk_features_columns_methods[] = {
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
    {"column_counts", column_counts, METH_VARARGS,
     "column_counts(indices, n_cols) -> bytes of int64\n\n"
     "np.bincount(indices, minlength=n_cols), without an int64 copy of int32 indices."},
    {"renumber_rows", renumber_rows, METH_VARARGS,
     "renumber_rows(indptr, indices, data, new_col) -> None\n\n"
     "In place: indices[:] = new_col[indices], then each CSR row sorted by column, data moved with it."},
    {"known_columns", known_columns, METH_VARARGS,
     "known_columns(index, tokens, out) -> None\n\n"
     "Appends index[t] to the list out for each t of tokens in the dict index, in order."},
    {NULL, NULL, 0, NULL}
};
