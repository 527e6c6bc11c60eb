/* spamkit.common.speedups: spamkit's hot loops in C, one extension built from one source per area,
 * each next to the Python it speeds up (setup.py lists them):
 *
 *   spamkit/parse/entities.c     html.unescape, the base64 alphabet count
 *   spamkit/parse/html.c         HTML to text, a start tag's attributes
 *   spamkit/parse/headers.c      header fields, MIME parameters
 *   spamkit/text/words.c         the default word tokenizer
 *   spamkit/text/mailtokens.c    the mail analyzer's URL pieces, hosts, relays, field words, digit shapes
 *   spamkit/corpus/tar.c         tar headers, reads that keep the GIL
 *   spamkit/features/columns.c   hashing trick, a vocabulary's columns and counts, CSR renumbering
 *   spamkit/features/numbering.c a worker's numbering of terms (the Numbering type)
 *   spamkit/features/terms.c     a vocabulary's BLAKE2b keys and sorted order
 *   spamkit/models/loops.c       online logistic steps, Fisher's clue sums, naive Bayes' sums
 *   spamkit/models/context.c     the byte context models' tables
 *
 * This file holds what they share (spamkit/common/speedups.h declares it): the loop in parts on
 * helper threads, the buffer checks, and the module that gathers every area's functions.
 * Each function is the translation of a Python definition that stays, is used where the
 * extension was not built (or with SPAMKIT_PURE_PYTHON=1), and is compared with it by the
 * tests; setup.py builds every source with -ffp-contract=off: no fused multiply-add, so each
 * sum rounds step by step as NumPy's does.
 */
#include "speedups.h"

/* ------------------------------------------------------------------ a loop in parts, on helper threads
 *
 * The long loops over a whole training matrix or vocabulary (sort_terms, renumber_rows,
 * fisher_sums, nb_sums) run at the end of `spamkit train`, after the worker processes are done,
 * when this process is the only one working. Their iterations are independent (a row, a range of
 * terms), so they are cut into parts that run at once: part 0 on the calling thread, the others
 * on helper threads made for the call and joined before it returns (no thread outlives it, so a
 * later fork is safe: spamkit.common.processes). A part touches plain memory only, never a Python
 * object or the C API; the caller holds whatever keeps that memory alive. Each part computes
 * exactly what the single loop computes for its iterations, so the results are the same bits
 * whatever the number of parts. The number of parts is the CPUs this process may run on
 * (sched_getaffinity: a run pinned to one CPU makes no helper), at most MAX_PARTS, and only
 * as many as leave each part at least the caller's minimum of work (a thread costs ~50 us). */
/* (MAX_PARTS, ROWS_PART_NNZ and part_fn: speedups.h) */

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
SK_HIDDEN int sk_parts_for(Py_ssize_t work, Py_ssize_t least)
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
SK_HIDDEN void sk_run_parts(part_fn fn, void *arg, int parts)
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

/* loop_parts(work, least) -> int: sk_parts_for, for tests (how many parts a loop is cut into here) */
static PyObject *loop_parts(PyObject *self, PyObject *args)
{
    Py_ssize_t work, least;
    if (!PyArg_ParseTuple(args, "nn:loop_parts", &work, &least))
        return NULL;
    return PyLong_FromLong(sk_parts_for(work, least));
}

/* The rows [*lo, *hi) of part `part` of `parts` of a CSR matrix: cut where the non-zeros before
   the row reach part/parts of all of them (indptr of int64, or int32 when `narrow`). */
SK_HIDDEN void sk_row_part(const void *indptr, int narrow, Py_ssize_t n_rows, int part, int parts,
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

/* ------------------------------------------------------------------ logistic steps */


SK_HIDDEN int sk_get_buffer(PyObject *o, Py_buffer *view, const char *format, Py_ssize_t itemsize, int writable,
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
SK_HIDDEN int sk_get_index_buffer(PyObject *o, Py_buffer *view, int *narrow)
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
SK_HIDDEN int sk_csr_fits(const long long *ptr, Py_ssize_t n_rows, const void *idx, int narrow, Py_ssize_t nnz,
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

/* PyMem_Realloc(p, size), or NULL with MemoryError set (p is then left as it was) */
SK_HIDDEN void *sk_realloc(void *p, size_t size)
{
    void *q = PyMem_Realloc(p, size);
    if (q == NULL)
        PyErr_NoMemory();
    return q;
}

/* sk_get_buffer for each of the n views, all or none: 0, or -1 with the error set and the
   views already taken released */
SK_HIDDEN int sk_get_views(const SkView *views, int n)
{
    for (int i = 0; i < n; i++) {
        const SkView *v = &views[i];
        if (sk_get_buffer(v->o, v->view, v->format, v->itemsize, v->writable, v->what) < 0) {
            while (i-- > 0)
                PyBuffer_Release(views[i].view);
            return -1;
        }
    }
    return 0;
}

/* releases each view of a NULL-terminated list; a view never acquired (obj NULL: zero-initialised,
   or left so by a failed sk_get_buffer) is skipped by PyBuffer_Release */
SK_HIDDEN void sk_release_views(Py_buffer *view, ...)
{
    va_list more;
    va_start(more, view);
    for (; view != NULL; view = va_arg(more, Py_buffer *))
        PyBuffer_Release(view);
    va_end(more);
}

/* The end of a function that checked its inputs as it went: None, or (bad) NULL with a
   ValueError saying message. */
SK_HIDDEN PyObject *sk_none_unless(int bad, const char *message)
{
    if (bad) {
        PyErr_SetString(PyExc_ValueError, message);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The str of the ASCII text buf[:len], the same object as the last time that text was asked for
   while it still holds its slot (field names: two dozen a message, nearly all of them met
   before; HTML attribute names), so that its hash is taken once and the lookups by name (get,
   the mail tokens' "header:" names, the wanted attributes) find it by identity. Direct-mapped by an FNV-1a hash; texts longer than
   FIELD_CACHE_MAX_LEN are made fresh. */
#define FIELD_CACHE_SIZE 2048
#define FIELD_CACHE_MAX_LEN 40
static PyObject *field_cache[FIELD_CACHE_SIZE];

SK_HIDDEN PyObject *sk_cached_ascii(const char *buf, Py_ssize_t len)
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

static PyMethodDef methods[] = {
    {"loop_parts", loop_parts, METH_VARARGS,
     "loop_parts(work, least) -> int\n\n"
     "How many parts (threads) a loop of work units is cut into here, each of at least least units."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "spamkit.common.speedups",
    "Compiled inner loops of spamkit (optional: pure-Python equivalents are used without them).",
    -1, methods
};

PyMODINIT_FUNC PyInit_speedups(void)
{
    for (int c = 0; c < 256; c++)
        sk_latin1_alnum[c] = (unsigned char)Py_UNICODE_ISALNUM((Py_UCS4)c);
    if (PyType_Ready(&sk_NumberingType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyMethodDef *areas[] = {sk_parse_entities_methods, sk_parse_html_methods, sk_parse_headers_methods, sk_text_words_methods, sk_text_mailtokens_methods, sk_corpus_tar_methods, sk_features_columns_methods, sk_features_numbering_methods, sk_features_terms_methods, sk_models_loops_methods, sk_models_context_methods, sk_filterfile_values_methods};
    for (size_t k = 0; k < sizeof(areas) / sizeof(areas[0]); k++)
        if (PyModule_AddFunctions(m, areas[k]) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    Py_INCREF(&sk_NumberingType);
    if (PyModule_AddObject(m, "Numbering", (PyObject *)&sk_NumberingType) < 0) {
        Py_DECREF(&sk_NumberingType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
