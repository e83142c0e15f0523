/* _native.h - what the files of telem._native share: raising telem's
 * errors and converting arguments (_native_util.c), and adding the
 * section types to the module (_native_section.c).  Internal to the
 * module.
 */
#ifndef TELEM_PY_NATIVE_H
#define TELEM_PY_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define TN_NAME_MAX 255           /* bytes of a metric or section name */

/* Raises the exception telem.errors.make_error() gives for a negative
 * telem code; returns NULL. */
PyObject *tn_raise(int code, const char *what);

/* Fills out[0..n) from positional args and keywords named names[]
 * (absent ones NULL); the first `required` must be given.  0 or -1 with
 * TypeError set. */
int tn_args(const char *fn, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames, const char *const *names, Py_ssize_t n,
            Py_ssize_t required, PyObject **out);

/* A str argument as UTF-8 (valid while the str lives); NULL with
 * TypeError, or TelemInvalid for an embedded NUL. */
const char *tn_str(PyObject *o, const char *what);

/* Readies the section types and adds telem.section to module m: 0, or -1
 * with an exception set. */
int tn_section_add(PyObject *m);

#endif
