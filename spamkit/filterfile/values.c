/* spamkit.common.speedups, a filter file's numbers summed up in one pass (spamkit.filterfile, for
 * spamkit.mail.leanarrays: pipe mode's checks of every array it reads).
 *
 * One source of the extension spamkit.common.speedups (spamkit/common/speedups.c assembles it); what the
 * function computes and the Python definition it is tested against are said above it. */
#include "speedups.h"

#include <math.h>
#include <string.h>

/* float_summary(values) -> (all_finite, smallest, total) for a one-dimensional buffer of float64
   ('d') or float32 ('f'): whether every value is a finite number, the smallest value that is not a
   NaN (+inf when there is none), and the sum in order from the first value, each value widened to
   a double -- what Python 3.11's sum(values) gives, and what spamkit.filterfile.manifest.value_problem
   takes (tests/test_lean.py compares the three results with Python's on arrays with NaNs,
   infinities, negative zeros and sums that overflow). */
static PyObject *float_summary(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_buffer view = {0};
    if (PyObject_GetBuffer(arg, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    const char *f = view.format ? view.format : "";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    int wide = strcmp(f, "d") == 0 && view.itemsize == 8, narrow = strcmp(f, "f") == 0 && view.itemsize == 4;
    if (view.ndim != 1 || (!wide && !narrow)) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "float_summary: values must be a one-dimensional array of format 'd' or 'f'");
        return NULL;
    }
    Py_ssize_t n = view.shape[0];
    int finite = 1;
    double smallest = INFINITY, total = 0.0;
    Py_BEGIN_ALLOW_THREADS
    /* the values are read by memcpy: a filter file's arrays are views of the file's bytes at
       whatever offset the zip put them, not aligned to their type (a plain load would be
       undefined behaviour; the compiler makes the memcpy one unaligned load) */
    const char *at = view.buf;
    if (wide) {
        for (Py_ssize_t i = 0; i < n; i++) {
            double x;
            memcpy(&x, at + 8 * i, sizeof x);
            finite &= isfinite(x) != 0;
            if (x < smallest)
                smallest = x;
            total += x;
        }
    } else {
        for (Py_ssize_t i = 0; i < n; i++) {
            float y;
            memcpy(&y, at + 4 * i, sizeof y);
            double x = (double)y;
            finite &= isfinite(x) != 0;
            if (x < smallest)
                smallest = x;
            total += x;
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return Py_BuildValue("(Ndd)", PyBool_FromLong(finite), smallest, total);
}


SK_HIDDEN PyMethodDef sk_filterfile_values_methods[] = {
    {"float_summary", float_summary, METH_O,
     "float_summary(values) -> (all_finite, smallest, total)\n\n"
     "Of a float64 or float32 buffer, in one pass: every value finite, the smallest (NaNs aside), the sum in order."},
    {NULL, NULL, 0, NULL}
};
