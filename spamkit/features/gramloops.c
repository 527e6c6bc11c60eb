/* The compiled loops of the byte 4-gram model (spamkit.bytekeys.gram_slots,
   spamkit.models.bytegrams.ByteGramLogistic): the features of a message and the online
   logistic regression's steps over them, with the same results as their NumPy definitions
   (the sums of a message's weights are added in slot order in double precision, NumPy's
   pairwise order differs in the last bits: the tests compare the two within 1e-12).

   A source of its own, next to the Python it speeds up, rather than one more area of
   speedups.c: the extension is optional like that one (setup.py), and spamkit.common.compiled
   returns None for it where it is not built or SPAMKIT_PURE_PYTHON=1 is set.

   Sources: G. V. Cormack, "University of Waterloo participation in the TREC 2007 spam track"
   (binary byte 4-grams of the first few kilobytes, online logistic regression); J. Goodman and
   W. Yih, "Online discriminative spam filter training", CEAS 2006 (one gradient step a message). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* must equal spamkit.bytekeys._GRAM_MULTIPLIER (tests/test_bytegrams.py compares them) */
#define GRAM_MULTIPLIER 2654435761u
#define RADIX_BITS 11
#define RADIX (1u << RADIX_BITS)

/* A one-dimensional, C-contiguous buffer of `itemsize`-byte items whose format is `format`
   (a native byte-order prefix allowed); -1 with a TypeError naming `what` otherwise. */
static int get_view(PyObject *o, Py_buffer *view, char format, Py_ssize_t itemsize, int writable, const char *what)
{
    if (PyObject_GetBuffer(o, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0) {
        view->obj = NULL;
        return -1;
    }
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=')
        f++;
    /* NumPy writes uint32 as 'I' and, where C long is 32 bits, possibly 'L' */
    int same = f[0] == format || (format == 'I' && f[0] == 'L' && itemsize == 4);
    if (view->ndim != 1 || view->itemsize != itemsize || !same || f[1] != '\0') {
        PyErr_Format(PyExc_TypeError, "%s must be a one-dimensional array of format '%c'", what, format);
        PyBuffer_Release(view);
        view->obj = NULL;
        return -1;
    }
    return 0;
}

/* Sorts keys[0..n) (each < 2**bits) into ascending order with LSD radix passes of at most
   RADIX_BITS bits, as few as can be and of equal width (2**18 slots: two passes of 9 bits,
   whose 512 counters cost less to clear and sum than 2048), `tmp` as scratch; returns the
   array that holds the result (keys or tmp). */
static uint32_t *radix_sort(uint32_t *keys, uint32_t *tmp, Py_ssize_t n, int bits)
{
    uint32_t count[RADIX];
    int passes = (bits + RADIX_BITS - 1) / RADIX_BITS;
    int width = passes ? (bits + passes - 1) / passes : 1;
    uint32_t digits = 1u << width;
    for (int shift = 0; shift < bits; shift += width) {
        memset(count, 0, digits * sizeof count[0]);
        for (Py_ssize_t i = 0; i < n; i++)
            count[(keys[i] >> shift) & (digits - 1)]++;
        uint32_t at = 0;
        for (uint32_t d = 0; d < digits; d++) {
            uint32_t c = count[d];
            count[d] = at;
            at += c;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            tmp[count[(keys[i] >> shift) & (digits - 1)]++] = keys[i];
        uint32_t *swap = keys;
        keys = tmp;
        tmp = swap;
    }
    return keys;
}

/* A bitmap of 2**bits bits, all clear between calls (each call clears what it set), for tables
   of up to 2**BITMAP_MAX_BITS slots (32 KB): the first occurrence of each of a message's slots
   is found by testing and setting its bit, without a branch, and only those distinct slots are
   sorted. (Reading the set bits of the whole bitmap in order, as this did before, ran a loop
   per bit whose exit mispredicts about once a word: 51 against 36 us a trec07p-dev message,
   3,500 bytes into 2**18 slots, the two builds side by side.) Calls hold the GIL: one user at a time. */
#define BITMAP_MAX_BITS 18
static uint64_t bitmap[((size_t)1 << BITMAP_MAX_BITS) >> 6];

/* The distinct values of keys[0..n) (each < 2**bits), ascending, into out; returns how many.
   `tmp` (n items) is scratch. */
static Py_ssize_t distinct_sorted(uint32_t *keys, uint32_t *tmp, Py_ssize_t n, int bits, uint32_t *out)
{
    Py_ssize_t m = 0;
    if (bits > BITMAP_MAX_BITS) {
        uint32_t *sorted = radix_sort(keys, tmp, n, bits);
        for (Py_ssize_t i = 0; i < n; i++)
            if (m == 0 || sorted[i] != out[m - 1])
                out[m++] = sorted[i];
        return m;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t key = keys[i];
        uint64_t bit = (uint64_t)1 << (key & 63), *word = &bitmap[key >> 6];
        tmp[m] = key;
        m += !(*word & bit);
        *word |= bit;
    }
    for (Py_ssize_t i = 0; i < m; i++)
        bitmap[tmp[i] >> 6] = 0;
    uint32_t *sorted = radix_sort(tmp, out, m, bits);
    if (sorted != out)
        memcpy(out, sorted, (size_t)m * sizeof(uint32_t));
    return m;
}

/* slots(data, n_bytes, bits) -> bytes: the distinct slots of the byte 4-grams of
   data[:n_bytes], ascending, as native uint32 (spamkit.bytekeys.gram_slots). A 4-gram is the
   big-endian 32-bit number of its bytes; its slot the top `bits` bits of that number times
   GRAM_MULTIPLIER modulo 2**32. */
static Py_ssize_t pack_gaps(const uint32_t *s, Py_ssize_t m, uint16_t *out);

static PyObject *make_slots(PyObject *args, int packed)
{
    Py_buffer data;
    Py_ssize_t n_bytes;
    int bits;
    if (!PyArg_ParseTuple(args, packed ? "y*ni:packed_slots" : "y*ni:slots", &data, &n_bytes, &bits))
        return NULL;
    if (n_bytes < 0 || bits < 1 || bits > 32) {
        PyBuffer_Release(&data);
        PyErr_SetString(PyExc_ValueError, "slots: n_bytes must be >= 0 and bits from 1 to 32");
        return NULL;
    }
    Py_ssize_t len = data.len < n_bytes ? data.len : n_bytes;
    Py_ssize_t n = len < 4 ? 0 : len - 3;
    uint32_t *keys = n ? PyMem_Malloc(3 * (size_t)n * sizeof(uint32_t)) : NULL;
    if (n && keys == NULL) {
        PyBuffer_Release(&data);
        return PyErr_NoMemory();
    }
    const unsigned char *b = data.buf;
    Py_ssize_t m = 0;
    if (n) {
        uint32_t gram = ((uint32_t)b[0] << 16) | ((uint32_t)b[1] << 8) | (uint32_t)b[2];
        for (Py_ssize_t i = 0; i < n; i++) {
            gram = (gram << 8) | (uint32_t)b[i + 3];
            keys[i] = (uint32_t)(gram * GRAM_MULTIPLIER) >> (32 - bits);
        }
        m = distinct_sorted(keys, keys + n, n, bits, keys + 2 * n);
    }
    PyBuffer_Release(&data);
    PyObject *out;
    if (packed) {
        /* the words (at most 6 bytes a slot) overwrite the keys already sorted out of them */
        uint16_t *buf = n ? (uint16_t *)keys : NULL;
        Py_ssize_t words = n ? pack_gaps(keys + 2 * n, m, buf) : 0;
        out = PyBytes_FromStringAndSize(n ? (const char *)buf : "", words * 2);
    } else {
        out = PyBytes_FromStringAndSize(n ? (const char *)(keys + 2 * n) : "", m * (Py_ssize_t)sizeof(uint32_t));
    }
    PyMem_Free(keys);
    return out;
}

static PyObject *slots(PyObject *self, PyObject *args)
{
    return make_slots(args, 0);
}

/* packed_slots(data, n_bytes, bits) -> bytes: slots() as a packed row (see pack_gaps). */
static PyObject *packed_slots(PyObject *self, PyObject *args)
{
    return make_slots(args, 1);
}

/* Packed rows: a message's distinct slots, ascending, as native uint16 gaps (the first slot's
   from 0); a gap of 0xFFFF or more is the word 0xFFFF and then the gap's low and high 16 bits.
   Half the bytes of uint32 slots (gaps in 2**18 slots average ~150), what a training holds of
   every message until the combiner is fitted, and decoded with a branch that is almost never
   taken (a varint's, taken for every other slot, made the loops four times slower).
   packed_slots makes them; steps and scores read them as they read uint32 arrays. */
static Py_ssize_t pack_gaps(const uint32_t *s, Py_ssize_t m, uint16_t *out)
{
    uint32_t prev = 0;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        uint32_t gap = s[i] - prev;
        prev = s[i];
        if (gap >= 0xFFFF) {
            out[k++] = 0xFFFF;
            out[k++] = (uint16_t)(gap & 0xFFFF);
            out[k++] = (uint16_t)(gap >> 16);
        } else {
            out[k++] = (uint16_t)gap;
        }
    }
    return k;
}

/* Whether the `len` bytes at `buf` are a packed row: whole words, every escape followed by its
   two words, every slot below 2**32; its last (largest) slot into *last. 0, or -1 where not. */
static int check_packed(const void *buf, Py_ssize_t len, uint32_t *last)
{
    const uint16_t *w = buf;
    Py_ssize_t n = len / 2;
    uint64_t slot = 0;
    *last = 0;
    if (len % 2)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t gap = w[i];
        if (gap == 0xFFFF) {
            if (i + 2 >= n)
                return -1;                      /* an escape cut short */
            gap = (uint64_t)w[i + 1] | ((uint64_t)w[i + 2] << 16);
            i += 2;
        }
        slot += gap;
        if (slot > UINT32_MAX)
            return -1;
    }
    *last = (uint32_t)slot;
    return 0;
}

/* A row as the loops read it: a uint32 array, or a packed row (a bytes object). */
typedef struct {
    Py_buffer view;
    int packed;
} row_t;

/* The rows (a sequence of uint32 arrays or packed rows) as views, unchecked (check_rows checks
   them without the GIL); -1 on error with every view taken released. */
static int row_views(PyObject *rows, row_t **views_out, Py_ssize_t *n_out)
{
    PyObject *seq = PySequence_Fast(rows, "rows must be a sequence of uint32 arrays or packed rows");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    row_t *views = PyMem_Calloc(n ? (size_t)n : 1, sizeof(row_t));
    if (views == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t i = 0;
    for (; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        row_t *r = &views[i];
        r->packed = PyBytes_Check(item);
        if (r->packed ? PyObject_GetBuffer(item, &r->view, PyBUF_SIMPLE) < 0
                      : get_view(item, &r->view, 'I', 4, 0, "a row of slots") < 0)
            break;
    }
    Py_DECREF(seq);
    if (i < n) {
        while (i-- > 0)
            PyBuffer_Release(&views[i].view);
        PyMem_Free(views);
        return -1;
    }
    *views_out = views;
    *n_out = n;
    return 0;
}

/* The first bad row of a check_rows: its index, what is wrong (1 not a packed row, 2 a slot
   outside the table) and that slot. */
typedef struct {
    Py_ssize_t row;
    int kind;
    uint32_t slot;
} bad_row_t;

/* Whether every slot of every row is below `size` (and every packed row well formed): 0, or -1
   with the first bad row in *bad. Reads the rows' memory only, so it runs without the GIL
   (each training pass of the 4-gram model checked every row holding it: as long as the steps). */
static int check_rows(const row_t *views, Py_ssize_t n, Py_ssize_t size, bad_row_t *bad)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        const row_t *r = &views[i];
        bad->row = i;
        if (r->packed) {
            uint32_t last;
            if (check_packed(r->view.buf, r->view.len, &last) < 0) {
                bad->kind = 1;
                return -1;
            }
            if (r->view.len && (Py_ssize_t)last >= size) {
                bad->kind = 2;
                bad->slot = last;
                return -1;
            }
            continue;
        }
        const uint32_t *s = r->view.buf;
        for (Py_ssize_t k = 0, m = r->view.shape[0]; k < m; k++)
            if ((Py_ssize_t)s[k] >= size) {
                bad->kind = 2;
                bad->slot = s[k];
                return -1;
            }
    }
    return 0;
}

static void raise_bad_row(const bad_row_t *bad, Py_ssize_t size)
{
    if (bad->kind == 1)
        PyErr_Format(PyExc_ValueError, "row %zd is not a packed row of slots", bad->row);
    else
        PyErr_Format(PyExc_ValueError, "row %zd has slot %u, outside the %zd weights", bad->row, bad->slot, size);
}

static void release_rows(row_t *views, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        PyBuffer_Release(&views[i].view);
    PyMem_Free(views);
}

/* A checked packed row's slots into out (room for one slot a word; rows are checked by
   check_rows, so no bound is tested here): how many. */
static Py_ssize_t decode_row(const row_t *r, uint32_t *out)
{
    const uint16_t *w = r->view.buf;
    Py_ssize_t n = r->view.len / 2, m = 0;
    uint32_t slot = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t gap = w[i];
        if (gap == 0xFFFF) {
            gap = (uint32_t)w[i + 1] | ((uint32_t)w[i + 2] << 16);
            i += 2;
        }
        slot += gap;
        out[m++] = slot;
    }
    return m;
}

/* Scratch room for the slots of the longest packed row of views[0..n) (NULL where none is
   packed; *failed set where it cannot be had). */
static uint32_t *packed_scratch(const row_t *views, Py_ssize_t n, int *failed)
{
    Py_ssize_t most = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (views[i].packed && views[i].view.len > most)
            most = views[i].view.len;
    *failed = 0;
    if (most == 0)
        return NULL;
    uint32_t *scratch = PyMem_Malloc((size_t)most * sizeof(uint32_t));
    if (scratch == NULL) {
        PyErr_NoMemory();
        *failed = 1;
    }
    return scratch;
}

/* A row's slots: its array, or its packed slots decoded into scratch. */
static inline const uint32_t *row_slots(const row_t *r, uint32_t *scratch, Py_ssize_t *m)
{
    if (r->packed) {
        *m = decode_row(r, scratch);
        return scratch;
    }
    *m = r->view.shape[0];
    return r->view.buf;
}

static inline double row_sum(const float *w, const uint32_t *s, Py_ssize_t m)
{
    double z = 0.0;
    for (Py_ssize_t k = 0; k < m; k++)
        z += (double)w[s[k]];
    return z;
}

/* steps(weights, rows, targets, rate) -> bytes: for each row in order, its log-odds z (the sum
   of its slots' weights) before the step, as native float64; then the step
       w_j += float32(rate * (target - 1 / (1 + e^-z)))   for every slot j of the row
   in float32 (ByteGramLogistic._step). `weights` float32, written in place; `targets` float64.
   Every slot is checked before any step. */
static PyObject *steps(PyObject *self, PyObject *args)
{
    PyObject *o_w, *rows, *o_t;
    double rate;
    if (!PyArg_ParseTuple(args, "OOOd:steps", &o_w, &rows, &o_t, &rate))
        return NULL;
    Py_buffer w, t;
    if (get_view(o_w, &w, 'f', 4, 1, "weights") < 0)
        return NULL;
    if (get_view(o_t, &t, 'd', 8, 0, "targets") < 0) {
        PyBuffer_Release(&w);
        return NULL;
    }
    row_t *views = NULL;
    Py_ssize_t n = 0;
    if (row_views(rows, &views, &n) < 0) {
        PyBuffer_Release(&w);
        PyBuffer_Release(&t);
        return NULL;
    }
    PyObject *out = NULL;
    if (t.shape[0] != n) {
        PyErr_Format(PyExc_ValueError, "steps: %zd rows but %zd targets", n, t.shape[0]);
        goto done;
    }
    int failed;
    uint32_t *scratch = packed_scratch(views, n, &failed);
    if (failed)
        goto done;
    out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    if (out == NULL) {
        PyMem_Free(scratch);
        goto done;
    }
    double *z_out = (double *)PyBytes_AS_STRING(out);
    float *wv = w.buf;
    const double *target = t.buf;
    bad_row_t bad;
    int checked;
    Py_ssize_t size = w.shape[0];
    Py_BEGIN_ALLOW_THREADS
    checked = check_rows(views, n, size, &bad);         /* every slot before any step */
    for (Py_ssize_t i = 0; checked == 0 && i < n; i++) {
        Py_ssize_t m;
        const uint32_t *s = row_slots(&views[i], scratch, &m);
        double z = row_sum(wv, s, m);
        double p = z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
        float g = (float)(rate * (target[i] - p));
        for (Py_ssize_t k = 0; k < m; k++)
            wv[s[k]] += g;
        z_out[i] = z;
    }
    Py_END_ALLOW_THREADS
    if (checked < 0) {
        raise_bad_row(&bad, size);
        Py_CLEAR(out);
    }
    PyMem_Free(scratch);
done:
    release_rows(views, n);
    PyBuffer_Release(&w);
    PyBuffer_Release(&t);
    return out;
}

/* scores(weights, rows) -> bytes: each row's sum of its slots' weights, native float64. */
static PyObject *scores(PyObject *self, PyObject *args)
{
    PyObject *o_w, *rows;
    if (!PyArg_ParseTuple(args, "OO:scores", &o_w, &rows))
        return NULL;
    Py_buffer w;
    if (get_view(o_w, &w, 'f', 4, 0, "weights") < 0)
        return NULL;
    row_t *views = NULL;
    Py_ssize_t n = 0;
    if (row_views(rows, &views, &n) < 0) {
        PyBuffer_Release(&w);
        return NULL;
    }
    int failed;
    uint32_t *scratch = packed_scratch(views, n, &failed);
    PyObject *out = failed ? NULL : PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    if (out != NULL) {
        double *z = (double *)PyBytes_AS_STRING(out);
        const float *wv = w.buf;
        bad_row_t bad;
        int checked;
        Py_ssize_t size = w.shape[0];
        Py_BEGIN_ALLOW_THREADS
        checked = check_rows(views, n, size, &bad);
        for (Py_ssize_t i = 0; checked == 0 && i < n; i++) {
            Py_ssize_t m;
            const uint32_t *s = row_slots(&views[i], scratch, &m);
            z[i] = row_sum(wv, s, m);
        }
        Py_END_ALLOW_THREADS
        if (checked < 0) {
            raise_bad_row(&bad, size);
            Py_CLEAR(out);
        }
    }
    PyMem_Free(scratch);
    release_rows(views, n);
    PyBuffer_Release(&w);
    return out;
}

static PyMethodDef methods[] = {
    {"slots", slots, METH_VARARGS, "slots(data, n_bytes, bits) -> bytes: distinct 4-gram slots, ascending uint32"},
    {"packed_slots", packed_slots, METH_VARARGS, "packed_slots(data, n_bytes, bits) -> bytes: slots() as a packed row"},
    {"steps", steps, METH_VARARGS, "steps(weights, rows, targets, rate) -> bytes: float64 log-odds before each step"},
    {"scores", scores, METH_VARARGS, "scores(weights, rows) -> bytes: float64 sums of each row's weights"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "spamkit.features.gramloops",
                                    "The byte 4-gram model's compiled loops.", -1, methods};

PyMODINIT_FUNC PyInit_gramloops(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *multiplier = PyLong_FromUnsignedLong(GRAM_MULTIPLIER);
    if (multiplier == NULL || PyModule_AddObject(m, "GRAM_MULTIPLIER", multiplier) < 0) {
        Py_XDECREF(multiplier);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
