/* spamkit/common/speedups.h: what the sources of the spamkit.common.speedups extension share (spamkit/common/speedups.c
 * defines it; each area's source includes this file). */
#ifndef SPAMKIT_SPEEDUPS_H
#define SPAMKIT_SPEEDUPS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#if !defined(_WIN32)
#include <pthread.h>
#include <sched.h>
#define HAVE_HELPER_THREADS 1
#endif

#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)0)
#endif

/* symbols the sources share, not exported from the extension */
#if defined(__GNUC__)
#define SK_HIDDEN __attribute__((visibility("hidden")))
#else
#define SK_HIDDEN
#endif

/* a loop in parts on helper threads (speedups.c) */
#define MAX_PARTS 4
/* the non-zeros a part of a row loop is given at least (fisher_sums, nb_sums, renumber_rows) */
#define ROWS_PART_NNZ 100000
typedef void (*part_fn)(void *arg, int part, int parts);

/* helpers one area defines and another uses */
SK_HIDDEN int sk_get_buffer(PyObject *o, Py_buffer *view, const char *format, Py_ssize_t itemsize, int writable, const char *what);
SK_HIDDEN int sk_get_index_buffer(PyObject *o, Py_buffer *view, int *narrow);
SK_HIDDEN int sk_csr_fits(const long long *ptr, Py_ssize_t n_rows, const void *idx, int narrow, Py_ssize_t nnz, Py_ssize_t n_cols);
SK_HIDDEN void sk_release_views(Py_buffer *view, ...);
/* one buffer for sk_get_views: the object, where its view goes, and sk_get_buffer's checks */
typedef struct {
    PyObject *o;
    Py_buffer *view;
    const char *format;
    Py_ssize_t itemsize;
    int writable;
    const char *what;
} SkView;
SK_HIDDEN int sk_get_views(const SkView *views, int n);
SK_HIDDEN void *sk_realloc(void *p, size_t size);
SK_HIDDEN PyObject *sk_none_unless(int bad, const char *message);
SK_HIDDEN void sk_row_part(const void *indptr, int narrow, Py_ssize_t n_rows, int part, int parts, Py_ssize_t *lo, Py_ssize_t *hi);
SK_HIDDEN int sk_parts_for(Py_ssize_t work, Py_ssize_t least);
SK_HIDDEN void sk_run_parts(part_fn fn, void *arg, int parts);
SK_HIDDEN PyObject *sk_cached_ascii(const char *buf, Py_ssize_t len);
SK_HIDDEN int sk_ascii_letter(Py_UCS4 c);
SK_HIDDEN int sk_ascii_space(Py_UCS1 c);
SK_HIDDEN int sk_str_pair(PyObject *item, PyObject **name, PyObject **value, const char *message);
SK_HIDDEN void sk_ascii_strip(const Py_UCS1 *d, Py_ssize_t *a, Py_ssize_t *b);
SK_HIDDEN char *sk_ascii_lowered(const Py_UCS1 *d, Py_ssize_t a, Py_ssize_t b, char *small, size_t small_size);
SK_HIDDEN PyObject *sk_literal_and(const char *lit, PyObject *s, Py_ssize_t a, Py_ssize_t b, const char *suffix);
SK_HIDDEN extern unsigned char sk_latin1_alnum[256];
SK_HIDDEN int sk_is_decimal(Py_UCS4 c);
SK_HIDDEN int sk_words_into(PyObject *out, PyObject *text, Py_ssize_t max_len, PyObject *prefix, PyObject *long_token);
SK_HIDDEN const char *sk_utf8_of(PyObject *t, Py_ssize_t *len);
SK_HIDDEN extern PyTypeObject sk_NumberingType;

/* every area's functions, gathered by PyInit_speedups */
SK_HIDDEN extern PyMethodDef sk_parse_entities_methods[];
SK_HIDDEN extern PyMethodDef sk_parse_html_methods[];
SK_HIDDEN extern PyMethodDef sk_parse_headers_methods[];
SK_HIDDEN extern PyMethodDef sk_text_words_methods[];
SK_HIDDEN extern PyMethodDef sk_text_mailtokens_methods[];
SK_HIDDEN extern PyMethodDef sk_corpus_tar_methods[];
SK_HIDDEN extern PyMethodDef sk_features_columns_methods[];
SK_HIDDEN extern PyMethodDef sk_features_numbering_methods[];
SK_HIDDEN extern PyMethodDef sk_features_terms_methods[];
SK_HIDDEN extern PyMethodDef sk_models_loops_methods[];
SK_HIDDEN extern PyMethodDef sk_models_context_methods[];
SK_HIDDEN extern PyMethodDef sk_filterfile_values_methods[];

#endif
