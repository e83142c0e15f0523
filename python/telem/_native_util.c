/* _native_util.c - what the files of telem._native share (_native.h):
 * raising telem's error for a code, and reading arguments.
 */
#include "_native.h"

#include <string.h>

#include <telem/telem_error.h>

static PyObject *s_make_error;    /* telem.errors.make_error */

/* Raises telem's exception for `code` (negative); returns NULL. */
PyObject *
tn_raise(int code, const char *what)
{
    if (!s_make_error) {
        PyObject *m = PyImport_ImportModule("telem.errors");
        if (!m)
            return NULL;
        s_make_error = PyObject_GetAttrString(m, "make_error");
        Py_DECREF(m);
        if (!s_make_error)
            return NULL;
    }
    PyObject *exc = PyObject_CallFunction(s_make_error, "iss", code,
                                          telem_strerror(code), what);
    if (exc) {
        PyErr_SetObject((PyObject *) Py_TYPE(exc), exc);
        Py_DECREF(exc);
    }
    return NULL;
}

/* Fills out[0..n) from positional args and keywords named names[]; absent
 * ones stay NULL.  `required` leading ones must be given. */
int
tn_args(const char *fn, PyObject *const *args, Py_ssize_t nargs,
       PyObject *kwnames, const char *const *names, Py_ssize_t n,
       Py_ssize_t required, PyObject **out)
{
    if (nargs > n) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %zd arguments "
                     "(%zd given)", fn, n, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        out[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        if (!key)
            return -1;
        Py_ssize_t i = 0;
        while (i < n && strcmp(key, names[i]) != 0)
            i++;
        if (i == n) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword "
                         "argument '%s'", fn, key);
            return -1;
        }
        if (out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for "
                         "argument '%s'", fn, key);
            return -1;
        }
        out[i] = args[nargs + k];
    }
    for (Py_ssize_t i = 0; i < required; i++)
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument "
                         "'%s'", fn, names[i]);
            return -1;
        }
    return 0;
}

/* A str argument as UTF-8 (CPython's cached copy, valid while the str
 * lives).  TypeError for another type; TelemInvalid for an embedded NUL
 * (libtelem checks length and emptiness itself). */
const char *
tn_str(PyObject *o, const char *what)
{
    if (!PyUnicode_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be str, not %.100s", what,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(o, &len);
    if (s && (Py_ssize_t) strlen(s) != len) {
        tn_raise(TELEM_EINVAL, what);
        return NULL;
    }
    return s;
}

