/* spamkit.scoring.chisquare: Fisher combining's chi-square tails for many rows at once.
 *
 * The definition is spamkit/scoring/__init__.py (log_gamma_q_and_p, fisher_log_probabilities):
 * the same steps in the same order, so that the two agree to 1e-12 (Python's own lgamma and the
 * C library's differ in the last bits; tests/test_scoring.py). One function:
 *
 *   fisher_tails(n, log_f, log_1mf, out_c0, out_c1) -> None
 *
 * n: int64 clue counts; log_f, log_1mf: float64 sums of ln f and ln (1 - f) over each row's
 * clues; out_c0, out_c1: float64, written with log P(c0) and log P(c1) of each row. Every
 * argument is a C-contiguous buffer of one length (NumPy arrays or array.array).
 *
 * Q(n, m) = e^-m sum_{i<n} m^i / i! is the chi-square survival function with 2n degrees of
 * freedom at 2m (Abramowitz & Stegun 26.4.21) and P = 1 - Q. Whichever of the two is below
 * one half is summed as a series of positive terms in log space (no cancellation, no
 * underflow); the other is log1p of minus it. Fisher (1932): P(c1) = (Q(n, m_h) + P(n, m_s)) / 2,
 * P(c0) = (P(n, m_h) + Q(n, m_s)) / 2, with m_h = -sum ln f and m_s = -sum ln (1 - f).
 *
 * No Python object is made or kept: the buffers are borrowed for the call and released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* series terms below e^-45 of the largest are beneath a double's precision */
#define NEGLIGIBLE 45.0
/* the most terms of P's series summed past n */
#define TAIL_TERMS 100000

static const double LOG2 = 0.69314718055994530942;

/* log Q(n, m) and log P(n, m), n >= 1 */
static void log_gamma_q_and_p(int64_t n, double m, double *log_q_out, double *log_p_out)
{
    if (!(m > 0.0)) {
        *log_q_out = 0.0;
        *log_p_out = -INFINITY;
        return;
    }
    if (isinf(m)) {
        *log_q_out = -INFINITY;
        *log_p_out = 0.0;
        return;
    }
    const double negligible = exp(-NEGLIGIBLE);
    double log_m = log(m);
    int64_t mode = n - 1;
    if (m < (double)mode)
        mode = (int64_t)m;
    double top = (double)mode * log_m - lgamma((double)mode + 1.0);
    double total = 1.0, term = 1.0;
    for (int64_t i = mode; i > 0; i--) {              /* down: term_{i-1} = term_i i / m */
        term *= (double)i / m;
        if (term < negligible)
            break;
        total += term;
    }
    term = 1.0;
    for (int64_t i = mode + 1; i < n; i++) {          /* up: term_i = term_{i-1} m / i */
        term *= m / (double)i;
        if (term < negligible)
            break;
        total += term;
    }
    double log_q = -m + top + log(total);
    if (log_q < -LOG2) {
        *log_q_out = log_q;
        *log_p_out = log1p(-exp(log_q));
        return;
    }
    double first = (double)n * log_m - lgamma((double)n + 1.0);
    total = 1.0;
    term = 1.0;
    for (int64_t i = n + 1; i < n + TAIL_TERMS; i++) {
        term *= m / (double)i;
        if (term < negligible)
            break;
        total += term;
    }
    double log_p = -m + first + log(total);
    *log_q_out = log1p(-exp(log_p));
    *log_p_out = log_p;
}

/* log(e^a + e^b) */
static double log_add(double a, double b)
{
    double top = a > b ? a : b, low = a > b ? b : a;
    if (top == -INFINITY)
        return top;
    return top + log1p(exp(low - top));
}

/* one C-contiguous buffer of `count` items of `size` bytes in the format `format` */
static int get_buffer(PyObject *obj, Py_buffer *view, int writable, const char *formats, Py_ssize_t size,
                      const char *what)
{
    if (PyObject_GetBuffer(obj, view, (writable ? PyBUF_WRITABLE : 0) | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@')
        f++;
    if (view->itemsize != size || strlen(f) != 1 || !strchr(formats, *f) || view->ndim > 1) {
        PyErr_Format(PyExc_TypeError, "fisher_tails: %s must be a one-dimensional buffer of %zd-byte %s",
                     what, size, size == 8 && strchr(formats, 'd') ? "floats" : "integers");
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *fisher_tails(PyObject *self, PyObject *args)
{
    PyObject *objs[5];
    if (!PyArg_ParseTuple(args, "OOOOO:fisher_tails", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4]))
        return NULL;
    static const char *what[5] = {"n", "log_f", "log_1mf", "out_c0", "out_c1"};
    Py_buffer views[5];
    int got = 0;
    for (; got < 5; got++)
        if (get_buffer(objs[got], &views[got], got >= 3, got == 0 ? "qlL" : "d", 8, what[got]) < 0)
            break;
    if (got == 5) {
        Py_ssize_t rows = views[0].len / 8;
        int same = 1;
        for (int k = 1; k < 5; k++)
            same &= views[k].len / 8 == rows;
        if (!same) {
            PyErr_SetString(PyExc_ValueError, "fisher_tails: the sums and the outputs differ in length");
        } else {
            const int64_t *n = views[0].buf;
            const double *log_f = views[1].buf, *log_1mf = views[2].buf;
            double *out_c0 = views[3].buf, *out_c1 = views[4].buf;
            Py_BEGIN_ALLOW_THREADS
            for (Py_ssize_t r = 0; r < rows; r++) {
                if (n[r] <= 0) {
                    out_c0[r] = out_c1[r] = -LOG2;
                    continue;
                }
                double q_h, p_h, q_s, p_s;
                log_gamma_q_and_p(n[r], -log_f[r], &q_h, &p_h);
                log_gamma_q_and_p(n[r], -log_1mf[r], &q_s, &p_s);
                out_c0[r] = log_add(p_h, q_s) - LOG2;
                out_c1[r] = log_add(q_h, p_s) - LOG2;
            }
            Py_END_ALLOW_THREADS
        }
    }
    for (int k = 0; k < got; k++)
        PyBuffer_Release(&views[k]);
    if (got < 5 || PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"fisher_tails", fisher_tails, METH_VARARGS,
     "fisher_tails(n, log_f, log_1mf, out_c0, out_c1) -> None\n\n"
     "Fisher combining's (log P(c0), log P(c1)) of every row from its clue count and log sums\n"
     "(spamkit.scoring.fisher_log_probabilities in C)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "spamkit.scoring.chisquare",
                                    "Fisher combining's chi-square tails (spamkit.scoring).", -1, methods};

PyMODINIT_FUNC PyInit_chisquare(void)
{
    return PyModule_Create(&module);
}
