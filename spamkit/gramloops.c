/* The compiled loops of the byte 4-gram model (spamkit.bytekeys.gram_slots,
   spamkit.models.bytegrams.ByteGramLogistic): the features of a message and the online
   logistic regression's steps over them, with the same results as their NumPy definitions
   (the sums of a message's weights are added in slot order in double precision, NumPy's
   pairwise order differs in the last bits: the tests compare the two within 1e-12).

   A source of its own, next to the Python it speeds up, rather than one more area of
   speedups.c: the extension is optional like that one (setup.py), and spamkit.compiled
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

/* Sorts keys[0..n) (each < 2**bits) into ascending order with LSD radix passes of RADIX_BITS
   bits, `tmp` as scratch; returns the array that holds the result (keys or tmp). */
static uint32_t *radix_sort(uint32_t *keys, uint32_t *tmp, Py_ssize_t n, int bits)
{
    uint32_t count[RADIX];
    for (int shift = 0; shift < bits; shift += RADIX_BITS) {
        memset(count, 0, sizeof count);
        for (Py_ssize_t i = 0; i < n; i++)
            count[(keys[i] >> shift) & (RADIX - 1)]++;
        uint32_t at = 0;
        for (uint32_t d = 0; d < RADIX; d++) {
            uint32_t c = count[d];
            count[d] = at;
            at += c;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            tmp[count[(keys[i] >> shift) & (RADIX - 1)]++] = keys[i];
        uint32_t *swap = keys;
        keys = tmp;
        tmp = swap;
    }
    return keys;
}

/* A bitmap of 2**bits bits, all clear between calls (each call clears what it set), for tables
   of up to 2**BITMAP_MAX_BITS slots (32 KB): where the table has few slots for the message's
   4-grams, setting their bits and reading the set bits in order is faster than sorting them
   (13 against 21 us for 3,500 bytes into 2**18 slots). Calls hold the GIL: one user at a time. */
#define BITMAP_MAX_BITS 18
static uint64_t bitmap[((size_t)1 << BITMAP_MAX_BITS) >> 6];

/* The distinct values of keys[0..n) (each < 2**bits), ascending, into out; returns how many.
   `tmp` (n items) is scratch. */
static Py_ssize_t distinct_sorted(uint32_t *keys, uint32_t *tmp, Py_ssize_t n, int bits, uint32_t *out)
{
    Py_ssize_t m = 0, words = bits >= 6 ? ((Py_ssize_t)1 << bits) >> 6 : 1;
    if (bits > BITMAP_MAX_BITS || words > 4 * n) {
        uint32_t *sorted = radix_sort(keys, tmp, n, bits);
        for (Py_ssize_t i = 0; i < n; i++)
            if (m == 0 || sorted[i] != out[m - 1])
                out[m++] = sorted[i];
        return m;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        bitmap[keys[i] >> 6] |= (uint64_t)1 << (keys[i] & 63);
    for (Py_ssize_t j = 0; j < words; j++) {
        uint64_t w = bitmap[j];
        bitmap[j] = 0;
        while (w) {
            out[m++] = (uint32_t)(j << 6) + (uint32_t)__builtin_ctzll(w);
            w &= w - 1;
        }
    }
    return m;
}

/* slots(data, n_bytes, bits) -> bytes: the distinct slots of the byte 4-grams of
   data[:n_bytes], ascending, as native uint32 (spamkit.bytekeys.gram_slots). A 4-gram is the
   big-endian 32-bit number of its bytes; its slot the top `bits` bits of that number times
   GRAM_MULTIPLIER modulo 2**32. */
static PyObject *slots(PyObject *self, PyObject *args)
{
    Py_buffer data;
    Py_ssize_t n_bytes;
    int bits;
    if (!PyArg_ParseTuple(args, "y*ni:slots", &data, &n_bytes, &bits))
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
    PyObject *out = PyBytes_FromStringAndSize(n ? (const char *)(keys + 2 * n) : "", m * (Py_ssize_t)sizeof(uint32_t));
    PyMem_Free(keys);
    return out;
}

/* The rows (a sequence of uint32 arrays) as views, each slot checked < size; -1 on error with
   every view taken released. */
static int row_views(PyObject *rows, Py_buffer **views_out, Py_ssize_t *n_out, Py_ssize_t size)
{
    PyObject *seq = PySequence_Fast(rows, "rows must be a sequence of uint32 arrays");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Py_buffer *views = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Py_buffer));
    if (views == NULL) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t i = 0;
    for (; i < n; i++) {
        if (get_view(PySequence_Fast_GET_ITEM(seq, i), &views[i], 'I', 4, 0, "a row of slots") < 0)
            break;
        const uint32_t *s = views[i].buf;
        Py_ssize_t k = 0, m = views[i].shape[0];
        while (k < m && (Py_ssize_t)s[k] < size)
            k++;
        if (k < m) {
            PyErr_Format(PyExc_ValueError, "row %zd has slot %u, outside the %zd weights", i, s[k], size);
            PyBuffer_Release(&views[i]);
            break;
        }
    }
    Py_DECREF(seq);
    if (i < n) {
        while (i-- > 0)
            PyBuffer_Release(&views[i]);
        PyMem_Free(views);
        return -1;
    }
    *views_out = views;
    *n_out = n;
    return 0;
}

static void release_rows(Py_buffer *views, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++)
        PyBuffer_Release(&views[i]);
    PyMem_Free(views);
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
    Py_buffer *views = NULL;
    Py_ssize_t n = 0;
    if (row_views(rows, &views, &n, w.shape[0]) < 0) {
        PyBuffer_Release(&w);
        PyBuffer_Release(&t);
        return NULL;
    }
    PyObject *out = NULL;
    if (t.shape[0] != n) {
        PyErr_Format(PyExc_ValueError, "steps: %zd rows but %zd targets", n, t.shape[0]);
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    if (out == NULL)
        goto done;
    double *z_out = (double *)PyBytes_AS_STRING(out);
    float *wv = w.buf;
    const double *target = t.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        const uint32_t *s = views[i].buf;
        Py_ssize_t m = views[i].shape[0];
        double z = row_sum(wv, s, m);
        double p = z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
        float g = (float)(rate * (target[i] - p));
        for (Py_ssize_t k = 0; k < m; k++)
            wv[s[k]] += g;
        z_out[i] = z;
    }
    Py_END_ALLOW_THREADS
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
    Py_buffer *views = NULL;
    Py_ssize_t n = 0;
    if (row_views(rows, &views, &n, w.shape[0]) < 0) {
        PyBuffer_Release(&w);
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    if (out != NULL) {
        double *z = (double *)PyBytes_AS_STRING(out);
        const float *wv = w.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n; i++)
            z[i] = row_sum(wv, views[i].buf, views[i].shape[0]);
        Py_END_ALLOW_THREADS
    }
    release_rows(views, n);
    PyBuffer_Release(&w);
    return out;
}

static PyMethodDef methods[] = {
    {"slots", slots, METH_VARARGS, "slots(data, n_bytes, bits) -> bytes: distinct 4-gram slots, ascending uint32"},
    {"steps", steps, METH_VARARGS, "steps(weights, rows, targets, rate) -> bytes: float64 log-odds before each step"},
    {"scores", scores, METH_VARARGS, "scores(weights, rows) -> bytes: float64 sums of each row's weights"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "spamkit.gramloops",
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
