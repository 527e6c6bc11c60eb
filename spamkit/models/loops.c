/* spamkit.common.speedups, the models' row loops: online logistic steps, Fisher's clue sums, naive Bayes' sums (spamkit.models).
 *
 * One source of the extension spamkit.common.speedups (spamkit/common/speedups.c assembles it); what each
 * function computes and the Python definition it is tested against are said above it. */
#include "speedups.h"

/* spamkit.models.logistic.OnlineLogistic._steps: one gradient step per row of a CSR matrix,
   in row order, each seeing the weights the previous one left:
       z = clip(b + sum_j w_j x_j, -limit, limit);  g = sign * rate * weight_i * (y_i - 1/(1+e^-z))
       w_j += g x_j (the row's columns);  b += g
   A row of weight 0 is skipped (its step would add zeros). Returns the new b; w is updated in place. */
static PyObject *logistic_steps(PyObject *self, PyObject *args)
{
    PyObject *o_indptr, *o_indices, *o_data, *o_w, *o_codes, *o_weights;
    double b, rate, sign, limit;
    if (!PyArg_ParseTuple(args, "OOOOdOOddd:logistic_steps", &o_indptr, &o_indices, &o_data, &o_w, &b,
                          &o_codes, &o_weights, &rate, &sign, &limit))
        return NULL;
    Py_buffer indptr = {0}, indices = {0}, data = {0}, w = {0}, codes = {0}, weights = {0};
    int narrow;
    if (sk_get_buffer(o_indptr, &indptr, "q", 8, 0, "indptr") < 0 || sk_get_index_buffer(o_indices, &indices, &narrow) < 0
            || sk_get_buffer(o_data, &data, "d", 8, 0, "data") < 0 || sk_get_buffer(o_w, &w, "d", 8, 1, "w") < 0
            || sk_get_buffer(o_codes, &codes, "d", 8, 0, "codes") < 0
            || sk_get_buffer(o_weights, &weights, "d", 8, 0, "weights") < 0) {
        sk_release_views(&indptr, &indices, &data, &w, &codes, &weights, NULL);
        return NULL;
    }
    const long long *ptr = indptr.buf;
    const int32_t *col32 = narrow ? indices.buf : NULL;
    const long long *col64 = narrow ? NULL : indices.buf;
#define COL(k) (narrow ? (long long)col32[k] : col64[k])
    const double *val = data.buf, *y = codes.buf, *sw = weights.buf;
    double *wv = w.buf;
    Py_ssize_t n_rows = indptr.shape[0] - 1, nnz = indices.shape[0], n_cols = w.shape[0];
    /* indices checked once, before any step */
    int bad = n_rows < 0 || codes.shape[0] < n_rows || weights.shape[0] < n_rows || data.shape[0] != nnz
              || !sk_csr_fits(ptr, n_rows, indices.buf, narrow, nnz, n_cols);
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < n_rows; i++) {
            if (sw[i] == 0.0)
                continue;                    /* a step of weight 0 changes nothing: skipped */
            double dot = 0.0;
            for (long long k = ptr[i]; k < ptr[i + 1]; k++)
                dot += wv[COL(k)] * val[k];
            double z = b + dot;
            z = z < -limit ? -limit : (z > limit ? limit : z);
            double g = sign * rate * sw[i] * (y[i] - 1.0 / (1.0 + exp(-z)));
            for (long long k = ptr[i]; k < ptr[i + 1]; k++)
                wv[COL(k)] += g * val[k];
            b += g;
        }
        Py_END_ALLOW_THREADS
    }
#undef COL
    sk_release_views(&indptr, &indices, &data, &w, &codes, &weights, NULL);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "logistic_steps: the matrix, weights and labels do not fit together");
        return NULL;
    }
    return PyFloat_FromDouble(b);
}

/* ------------------------------------------------------------------ Fisher and NB row sums */

/* A CSR matrix's rows as the row loops read them: indptr (int64), the columns (int32 when
   `narrow`, else int64) and the number of rows; rows_part gives a part of the threads its rows. */
typedef struct {
    const long long *ptr;
    const int32_t *c32;
    const long long *c64;
    int narrow;
    Py_ssize_t n_rows;
} Rows;

static inline long long row_column(const Rows *r, long long k)
{
    return r->narrow ? (long long)r->c32[k] : r->c64[k];
}

static Rows rows_of(const long long *ptr, const void *indices, int narrow, Py_ssize_t n_rows)
{
    Rows r = {ptr, indices, indices, narrow, n_rows < 0 ? 0 : n_rows};
    return r;
}

typedef struct {
    double dev;
    long long col;
    Py_ssize_t pos;
} Candidate;

/* strongest first; ties: lower column, then earlier entry (NumPy's stable sorts in _clues) */
static int stronger(const void *a, const void *b)
{
    const Candidate *x = a, *y = b;
    if (x->dev != y->dev)
        return x->dev > y->dev ? -1 : 1;
    if (x->col != y->col)
        return x->col < y->col ? -1 : 1;
    return x->pos < y->pos ? -1 : (x->pos > y->pos);
}

/* Rearranges a[0 .. n-1] so that its first k items are the k strongest (stronger() is a total
   order: positions differ), in no particular order: Hoare's FIND (quickselect, median-of-three
   pivot), linear on average where sorting every candidate cost n log n comparisons through a
   function pointer. The same set as the first k of the sorted array, so the same clues. */
static void select_strongest(Candidate *a, Py_ssize_t n, Py_ssize_t k)
{
    Py_ssize_t lo = 0, hi = n - 1, target = k - 1;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        Candidate t;
        if (stronger(&a[mid], &a[lo]) < 0) { t = a[mid]; a[mid] = a[lo]; a[lo] = t; }
        if (stronger(&a[hi], &a[lo]) < 0) { t = a[hi]; a[hi] = a[lo]; a[lo] = t; }
        if (stronger(&a[hi], &a[mid]) < 0) { t = a[hi]; a[hi] = a[mid]; a[mid] = t; }
        Candidate pivot = a[mid];
        Py_ssize_t i = lo, j = hi;
        while (i <= j) {
            while (stronger(&a[i], &pivot) < 0)
                i++;
            while (stronger(&pivot, &a[j]) < 0)
                j--;
            if (i <= j) {
                t = a[i]; a[i] = a[j]; a[j] = t;
                i++;
                j--;
            }
        }
        if (target <= j)
            hi = j;
        else if (target >= i)
            lo = i;
        else
            break;
    }
}

/* spamkit.models.robinson.RobinsonFisher.clue_sums: for each row of a CSR matrix of token
   presence, Robinson's f(w) = (s x + n p) / (s + n) of each column (p = b / (b + g), b and g
   the column's share of the spam and of the ham messages; x where there is no evidence),
   its clues (|f - 1/2| >= min_dev; past max_clues > 0 the strongest, ties by lower column),
   and out[3i .. 3i+2] = (number of clues, sum of ln f, sum of ln(1 - f)) over the clues in
   the row's order, f clipped to [1e-300, 1 - 1e-16]. The same arithmetic in the same order
   as RobinsonFisher._clues and the bincounts of its caller (tests/test_robinson.py). */
typedef struct {
    Rows rows;
    const double *hc, *sc;
    double n_ham, n_spam, s, x, min_dev;
    Py_ssize_t max_clues, longest;
    double *out, *f;                              /* f: `longest` doubles per part */
    char *clue;                                   /* `longest` per part */
    Candidate *cand;                              /* `longest` per part */
} FisherJob;

/* One thread's part of fisher_sums: its rows, with its own `longest`-long scratch rows f,
   clue and cand. */
static void fisher_part(void *arg, int part, int parts)
{
    FisherJob *J = arg;
    Py_ssize_t lo, hi;
    const long long *ptr = J->rows.ptr;
    sk_row_part(ptr, 0, J->rows.n_rows, part, parts, &lo, &hi);
    double *f = J->f + (size_t)part * J->longest;
    char *clue = J->clue + (size_t)part * J->longest;
    Candidate *cand = J->cand + (size_t)part * J->longest;
    const double n_ham = J->n_ham, n_spam = J->n_spam, s = J->s, x = J->x, min_dev = J->min_dev;
    const Py_ssize_t max_clues = J->max_clues;
    for (Py_ssize_t i = lo; i < hi; i++) {
        long long start = ptr[i], len = ptr[i + 1] - ptr[i];
        Py_ssize_t n_clues = 0;
        for (long long k = 0; k < len; k++) {
            long long j = row_column(&J->rows, start + k);
            double h = J->hc[j], sp = J->sc[j];
            double b = n_spam > 0 ? sp / n_spam : 0.0;
            double g = n_ham > 0 ? h / n_ham : 0.0;
            double p = b + g > 0 ? b / (b + g) : x;
            double n = h + sp;
            double den = s + n;
            double fk = den > 0 ? (s * x + n * p) / den : x;
            f[k] = fk;
            clue[k] = fabs(fk - 0.5) >= min_dev;
            n_clues += clue[k];
        }
        if (max_clues > 0 && n_clues > max_clues) {
            Py_ssize_t m = 0;
            for (long long k = 0; k < len; k++)
                if (clue[k]) {
                    cand[m].dev = fabs(f[k] - 0.5);
                    cand[m].col = row_column(&J->rows, start + k);
                    cand[m].pos = (Py_ssize_t)k;
                    m++;
                    clue[k] = 0;
                }
            select_strongest(cand, m, max_clues);
            for (Py_ssize_t q = 0; q < max_clues; q++)
                clue[cand[q].pos] = 1;
            n_clues = max_clues;
        }
        double log_f = 0.0, log_1mf = 0.0;
        for (long long k = 0; k < len; k++)
            if (clue[k]) {
                double fc = f[k] < 1e-300 ? 1e-300 : (f[k] > 1 - 1e-16 ? 1 - 1e-16 : f[k]);
                log_f += log(fc);
                log_1mf += log1p(-fc);
            }
        J->out[3 * i] = (double)n_clues;
        J->out[3 * i + 1] = log_f;
        J->out[3 * i + 2] = log_1mf;
    }
}

static PyObject *fisher_sums(PyObject *self, PyObject *args)
{
    PyObject *o_indptr, *o_indices, *o_ham, *o_spam, *o_out;
    double n_ham, n_spam, s, x, min_dev;
    Py_ssize_t max_clues;
    if (!PyArg_ParseTuple(args, "OOOOdddddnO:fisher_sums", &o_indptr, &o_indices, &o_ham, &o_spam, &n_ham, &n_spam,
                          &s, &x, &min_dev, &max_clues, &o_out))
        return NULL;
    Py_buffer indptr = {0}, indices = {0}, ham = {0}, spam = {0}, out = {0};
    int narrow;
    if (sk_get_buffer(o_indptr, &indptr, "q", 8, 0, "indptr") < 0 || sk_get_index_buffer(o_indices, &indices, &narrow) < 0
            || sk_get_buffer(o_ham, &ham, "d", 8, 0, "ham") < 0 || sk_get_buffer(o_spam, &spam, "d", 8, 0, "spam") < 0
            || sk_get_buffer(o_out, &out, "d", 8, 1, "out") < 0) {
        sk_release_views(&indptr, &indices, &ham, &spam, &out, NULL);
        return NULL;
    }
    const long long *ptr = indptr.buf;
    Py_ssize_t n_rows = indptr.shape[0] - 1, nnz = indices.shape[0], n_cols = ham.shape[0];
    int bad = spam.shape[0] != n_cols || out.shape[0] != 3 * (n_rows < 0 ? 0 : n_rows)
              || !sk_csr_fits(ptr, n_rows, indices.buf, narrow, nnz, n_cols);
    Py_ssize_t longest = 0;
    for (Py_ssize_t i = 0; !bad && i < n_rows; i++)
        if (ptr[i + 1] - ptr[i] > longest)
            longest = (Py_ssize_t)(ptr[i + 1] - ptr[i]);
    int parts = bad ? 1 : sk_parts_for(nnz, ROWS_PART_NNZ);
    FisherJob job = {rows_of(ptr, indices.buf, narrow, n_rows), ham.buf, spam.buf, n_ham, n_spam, s, x, min_dev,
                     max_clues, longest, out.buf, NULL, NULL, NULL};
    if (!bad && longest) {
        size_t room = (size_t)parts * (size_t)longest;
        job.f = PyMem_Malloc(room * sizeof(double));
        job.clue = PyMem_Malloc(room);
        job.cand = PyMem_Malloc(room * sizeof(Candidate));
        if (job.f == NULL || job.clue == NULL || job.cand == NULL) {
            PyMem_Free(job.f); PyMem_Free(job.clue); PyMem_Free(job.cand);
            sk_release_views(&indptr, &indices, &ham, &spam, &out, NULL);
            return PyErr_NoMemory();
        }
    }
    if (!bad) {
        Py_BEGIN_ALLOW_THREADS
        sk_run_parts(fisher_part, &job, parts);
        Py_END_ALLOW_THREADS
    }
    PyMem_Free(job.f); PyMem_Free(job.clue); PyMem_Free(job.cand);
    sk_release_views(&indptr, &indices, &ham, &spam, &out, NULL);
    return sk_none_unless(bad, "fisher_sums: the matrix, counts and output do not fit together");
}

/* spamkit.models.stack.FisherNBStack._nb_log_odds: for each row of a CSR matrix, out[i] =
   sum over its entries, in order, of x_k [(ln(spam_j + a) - den1) - (ln(ham_j + a) - den0)]
   (multinomial NB's log-odds without its prior), as np.bincount sums the weights. */
typedef struct {
    Rows rows;
    const double *hc, *sc, *val;
    double a, den0, den1;
    Py_ssize_t n_cols;
    double *out;
    double *weight;                               /* n_cols per part, or NULL: no memo */
    unsigned char *known;                         /* n_cols per part */
} NbJob;

/* One thread's part of nb_sums: its rows' sums, each column's weight computed once in the
   part's memo (weight, known) where there is one. */
static void nb_part(void *arg, int part, int parts)
{
    NbJob *J = arg;
    Py_ssize_t lo, hi;
    const long long *ptr = J->rows.ptr;
    sk_row_part(ptr, 0, J->rows.n_rows, part, parts, &lo, &hi);
    double *weight = J->weight != NULL ? J->weight + (size_t)part * J->n_cols : NULL;
    unsigned char *known = J->weight != NULL ? J->known + (size_t)part * J->n_cols : NULL;
    const double a = J->a, den0 = J->den0, den1 = J->den1;
    for (Py_ssize_t i = lo; i < hi; i++) {
        double z = 0.0;
        for (long long k = ptr[i]; k < ptr[i + 1]; k++) {
            long long j = row_column(&J->rows, k);
            double w;
            if (weight != NULL && known[j]) {
                w = weight[j];
            } else {
                w = (log(J->sc[j] + a) - den1) - (log(J->hc[j] + a) - den0);
                if (weight != NULL) {
                    weight[j] = w;
                    known[j] = 1;
                }
            }
            z += w * J->val[k];
        }
        J->out[i] = z;
    }
}

static PyObject *nb_sums(PyObject *self, PyObject *args)
{
    PyObject *o_indptr, *o_indices, *o_data, *o_ham, *o_spam, *o_out;
    double a, den0, den1;
    if (!PyArg_ParseTuple(args, "OOOOOdddO:nb_sums", &o_indptr, &o_indices, &o_data, &o_ham, &o_spam, &a, &den0,
                          &den1, &o_out))
        return NULL;
    Py_buffer indptr = {0}, indices = {0}, data = {0}, ham = {0}, spam = {0}, out = {0};
    int narrow;
    if (sk_get_buffer(o_indptr, &indptr, "q", 8, 0, "indptr") < 0 || sk_get_index_buffer(o_indices, &indices, &narrow) < 0
            || sk_get_buffer(o_data, &data, "d", 8, 0, "data") < 0 || sk_get_buffer(o_ham, &ham, "d", 8, 0, "ham") < 0
            || sk_get_buffer(o_spam, &spam, "d", 8, 0, "spam") < 0 || sk_get_buffer(o_out, &out, "d", 8, 1, "out") < 0) {
        sk_release_views(&indptr, &indices, &data, &ham, &spam, &out, NULL);
        return NULL;
    }
    const long long *ptr = indptr.buf;
    Py_ssize_t n_rows = indptr.shape[0] - 1, nnz = indices.shape[0], n_cols = ham.shape[0];
    int bad = spam.shape[0] != n_cols || data.shape[0] != nnz || out.shape[0] != (n_rows < 0 ? 0 : n_rows)
              || !sk_csr_fits(ptr, n_rows, indices.buf, narrow, nnz, n_cols);
    if (!bad) {
        int parts = sk_parts_for(nnz, ROWS_PART_NNZ);
        NbJob job = {rows_of(ptr, indices.buf, narrow, n_rows), ham.buf, spam.buf, data.buf, a, den0, den1, n_cols,
                     out.buf, NULL, NULL};
        /* each column's weight once per part, where the rows hold many entries per column (a
           fold of training messages: the same numbers, two logarithms per column instead of
           per entry) */
        if (nnz >= n_cols / 4 && n_cols > 0) {
            job.weight = PyMem_Malloc((size_t)parts * (size_t)n_cols * sizeof(double));
            job.known = job.weight != NULL ? PyMem_Calloc((size_t)parts * (size_t)n_cols, 1) : NULL;
            if (job.known == NULL) {
                PyMem_Free(job.weight);
                job.weight = NULL;
            }
        }
        Py_BEGIN_ALLOW_THREADS
        sk_run_parts(nb_part, &job, parts);
        Py_END_ALLOW_THREADS
        PyMem_Free(job.weight);
        PyMem_Free(job.known);
    }
    sk_release_views(&indptr, &indices, &data, &ham, &spam, &out, NULL);
    return sk_none_unless(bad, "nb_sums: the matrix, counts and output do not fit together");
}


SK_HIDDEN PyMethodDef sk_models_loops_methods[] = {
    {"logistic_steps", logistic_steps, METH_VARARGS,
     "logistic_steps(indptr, indices, data, w, b, codes, weights, rate, sign, limit) -> b\n\n"
     "spamkit.models.logistic.OnlineLogistic's gradient steps, one per CSR row in order; w updated in place."},
    {"fisher_sums", fisher_sums, METH_VARARGS,
     "fisher_sums(indptr, indices, ham, spam, n_ham, n_spam, s, x, min_dev, max_clues, out) -> None\n\n"
     "Per CSR row: (clues, sum ln f, sum ln(1 - f)) of Robinson/Fisher into out (3 per row)."},
    {"nb_sums", nb_sums, METH_VARARGS,
     "nb_sums(indptr, indices, data, ham, spam, alpha, den0, den1, out) -> None\n\n"
     "Per CSR row: multinomial NB's log-odds without the prior, into out."},
    {NULL, NULL, 0, NULL}
};
