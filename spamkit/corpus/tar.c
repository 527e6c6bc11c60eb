/* spamkit.common.speedups, tar headers and reads that keep the GIL (spamkit.corpus.tree).
 *
 * One source of the extension spamkit.common.speedups (spamkit/common/speedups.c assembles it); what each
 * function computes and the Python definition it is tested against are said above it. */
#include "speedups.h"

/* pread_held(fd, n, offset) -> bytes: os.pread without letting go of the GIL. A small read of
   a file the page cache holds is a copy of a few kilobytes; letting go of the GIL for it, as
   os.pread does, hands the GIL to whichever thread waits for it (a process pool's feeder and
   manager threads while `spamkit train` reads), and the reading thread waits for it back
   (spamkit.corpus.tree.Spool.read_at). Short reads at the end of the file as pread gives them. */
static PyObject *pread_held(PyObject *self, PyObject *args)
{
    int fd;
    Py_ssize_t n;
    long long offset;
    if (!PyArg_ParseTuple(args, "inL:pread_held", &fd, &n, &offset))
        return NULL;
    if (n < 0 || offset < 0) {
        PyErr_SetString(PyExc_ValueError, "pread_held: negative size or offset");
        return NULL;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, n);
    if (out == NULL)
        return NULL;
    char *buf = PyBytes_AS_STRING(out);
    Py_ssize_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, buf + got, (size_t)(n - got), (off_t)(offset + got));
        if (r < 0) {
            if (errno == EINTR) {
                if (PyErr_CheckSignals() < 0) {
                    Py_DECREF(out);
                    return NULL;
                }
                continue;
            }
            Py_DECREF(out);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        if (r == 0)
            break;
        got += r;
    }
    if (got < n && _PyBytes_Resize(&out, got) < 0)
        return NULL;
    return out;
}

/* spamkit.corpus.tree.plain_tar_index's common case: the canonical headers at buf[at:],
   one after another, as long as each lies whole in buf. A header is canonical when its
   size and checksum fields are spaces, octal digits, then NULs or spaces; its checksum adds
   up (the field counted as spaces); and its type is a regular file ('0', NUL, '7'), a folder
   ('5', or NUL with a name ending in '/') of size 0, or a link/device/FIFO ('1'-'4', '6') of
   size 0 (skipped). Stops at the first header that is not, or at the end of buf; the Python
   loop reads that one (and says what it is: the end marker, or something for tarfile).
   Returns (entries, at): entries as plain_tar_index gives them (name decoded with
   `encoding` and surrogateescape, folder names without trailing slashes, the ustar prefix
   joined with "/"; the data offset is base + position in buf). */
static int tar_octal(const unsigned char *f, int n, long long *out)
{
    int i = 0;
    long long v = 0;
    int digits = 0;
    while (i < n && f[i] == ' ')
        i++;
    while (i < n && f[i] >= '0' && f[i] <= '7') {
        if (digits >= 20)
            return 0;
        v = v * 8 + (f[i] - '0');
        digits++;
        i++;
    }
    if (digits == 0)
        return 0;
    while (i < n && (f[i] == 0 || f[i] == ' '))
        i++;
    if (i != n)
        return 0;
    *out = v;
    return 1;
}

static PyObject *tar_name(const unsigned char *f, Py_ssize_t n, const char *encoding, int strip_slash)
{
    const unsigned char *end = memchr(f, 0, (size_t)n);
    Py_ssize_t len = end ? (Py_ssize_t)(end - f) : n;
    if (strip_slash)
        while (len > 0 && f[len - 1] == '/')
            len--;
    return PyUnicode_Decode((const char *)f, len, encoding, "surrogateescape");
}

static PyObject *tar_headers(PyObject *self, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t at;
    long long base;
    const char *encoding;
    if (!PyArg_ParseTuple(args, "y*nLs:tar_headers", &view, &at, &base, &encoding))
        return NULL;
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t len = view.len;
    while (at >= 0 && at + 512 <= len) {
        const unsigned char *h = buf + at;
        long long stored, size;
        if (!tar_octal(h + 148, 8, &stored) || !tar_octal(h + 124, 12, &size))
            break;
        long long sum = 256;                           /* the checksum field as eight spaces */
        for (int i = 0; i < 512; i++)
            sum += (i >= 148 && i < 156) ? 0 : h[i];
        if (sum != stored)
            break;
        unsigned char kind = h[156];
        const unsigned char *nul = memchr(h, 0, 100);
        Py_ssize_t name_len = nul ? (Py_ssize_t)(nul - h) : 100;
        if (kind == 0 && name_len > 0 && h[name_len - 1] == '/')
            kind = '5';
        int is_file = kind == '0' || kind == 0 || kind == '7';
        int is_dir = kind == '5';
        int skipped = kind == '1' || kind == '2' || kind == '3' || kind == '4' || kind == '6';
        if (!is_file && !((is_dir || skipped) && size == 0))
            break;
        if (skipped) {
            at += 512;
            continue;
        }
        PyObject *name = tar_name(h, 100, encoding, is_dir);
        if (name == NULL)
            goto fail;
        if (h[345] != 0) {
            PyObject *prefix = tar_name(h + 345, 155, encoding, 0);
            if (prefix == NULL) {
                Py_DECREF(name);
                goto fail;
            }
            PyObject *joined = PyUnicode_FromFormat("%U/%U", prefix, name);
            Py_DECREF(prefix);
            Py_DECREF(name);
            if (joined == NULL)
                goto fail;
            name = joined;
        }
        PyObject *entry = Py_BuildValue("(NOLL)", name, is_dir ? Py_True : Py_False,
                                        is_dir ? 0LL : size, base + at + 512);
        if (entry == NULL || PyList_Append(out, entry) < 0) {
            Py_XDECREF(entry);
            goto fail;
        }
        Py_DECREF(entry);
        at += is_dir ? 512 : 512 + (size + 511) / 512 * 512;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(Nn)", out, at);
fail:
    PyBuffer_Release(&view);
    Py_DECREF(out);
    return NULL;
}


SK_HIDDEN PyMethodDef sk_corpus_tar_methods[] = {
    {"tar_headers", tar_headers, METH_VARARGS, "The canonical tar headers of a block (spamkit.corpus.tree.plain_tar_index)."},
    {"pread_held", pread_held, METH_VARARGS,
     "pread_held(fd, n, offset) -> bytes\n\n"
     "os.pread without releasing the GIL (a small read from the page cache; spamkit.corpus.tree.Spool)."},
    {NULL, NULL, 0, NULL}
};
