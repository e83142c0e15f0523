/* _native.c - telem._native: the Python binding of libtelem's metrics and
 * section API (telem.h).
 *
 * A thin layer: every call converts its arguments and calls libtelem,
 * which this module links (it carries no copy of telem's C code).  The
 * hot calls (add_data, the section context manager) are METH_FASTCALL /
 * vectorcall and do no allocation of their own: a name's UTF-8 text is the
 * one CPython caches in the str object.
 *
 * Errors.  A negative telem code becomes the exception
 * telem.errors.make_error(code, telem_strerror(code), what) gives
 * (TelemInvalid, a ValueError, for TELEM_EINVAL).  Wrong Python types are
 * TypeError.  A sample dropped because the queue is full (TELEM_EFULL) or
 * skipped by the level is not an error: the call returns False and
 * telem_stats() counts it.
 *
 * The GIL is released only around calls that may wait (flush, finalize)
 * and around long batches; everything else is a few hundred ns.
 *
 * The section types (telem.section and its decorated functions) are in
 * _native_section.c; the helpers both files use, in _native_util.c
 * (declared in _native.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <telem/telem.h>
#include <telem/telem_error.h>

#include "_native.h"

#define S_TAGS_MAX 8
#define S_BATCH_NOGIL 4096        /* batches this long run without the GIL */

/* The result of a recording call: True queued, False skipped (level) or
 * dropped (queue full), else the exception. */
static PyObject *
s_result(int rc, const char *what)
{
    if (rc == 0)
        Py_RETURN_TRUE;
    if (rc == 1 || rc == TELEM_EFULL)
        Py_RETURN_FALSE;
    return tn_raise(rc, what);
}

/* ---- arguments ------------------------------------------------------------ */

/* A float argument (int and float accepted, bool refused). */
static int
s_double(PyObject *o, const char *what, double *out)
{
    if (PyFloat_CheckExact(o)) {
        *out = PyFloat_AS_DOUBLE(o);
        return 0;
    }
    if (PyBool_Check(o) || !(PyFloat_Check(o) || PyLong_Check(o))) {
        PyErr_Format(PyExc_TypeError, "%s must be a number, not %.100s",
                     what, Py_TYPE(o)->tp_name);
        return -1;
    }
    *out = PyFloat_AsDouble(o);
    if (*out == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();           /* an int too large for a double */
        tn_raise(TELEM_EINVAL, what);
        return -1;
    }
    return 0;
}

static int
s_int(PyObject *o, const char *what, int *out)
{
    if (!PyLong_Check(o) || PyBool_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be int, not %.100s", what,
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    int overflow;
    long v = PyLong_AsLongAndOverflow(o, &overflow);
    if (overflow || v < INT_MIN || v > INT_MAX) {
        tn_raise(TELEM_EINVAL, what);
        return -1;
    }
    *out = (int) v;
    return 0;
}

/* A timestamp: None = now (0), float = seconds since the epoch, int =
 * nanoseconds since the epoch.  Must be after the epoch. */
static int
s_ts(PyObject *o, int64_t *out)
{
    *out = 0;
    if (!o || o == Py_None)
        return 0;
    if (PyFloat_Check(o)) {
        double s = PyFloat_AS_DOUBLE(o);
        if (!(s > 0 && s < 9.2e9)) {
            tn_raise(TELEM_EINVAL, "ts");
            return -1;
        }
        *out = (int64_t) llround(s * 1e9);
        return 0;
    }
    if (PyLong_Check(o) && !PyBool_Check(o)) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (overflow || v <= 0) {
            tn_raise(TELEM_EINVAL, "ts");
            return -1;
        }
        *out = v;
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "ts must be None, float seconds or int "
                 "nanoseconds, not %.100s", Py_TYPE(o)->tp_name);
    return -1;
}

/* tags: None or a dict of str to str, at most S_TAGS_MAX items, into
 * kv[2 * n].  The strings belong to the dict's objects. */
static int
s_tags(PyObject *o, const char **kv, int *n)
{
    *n = 0;
    if (!o || o == Py_None)
        return 0;
    if (!PyDict_Check(o)) {
        PyErr_Format(PyExc_TypeError, "tags must be a dict of str to str, "
                     "not %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
    if (PyDict_GET_SIZE(o) > S_TAGS_MAX) {
        tn_raise(TELEM_EINVAL, "tags (at most 8)");
        return -1;
    }
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(o, &pos, &k, &v)) {
        if (!(kv[2 * *n] = tn_str(k, "tag key"))
            || !(kv[2 * *n + 1] = tn_str(v, "tag value")))
            return -1;
        (*n)++;
    }
    return 0;
}

/* ---- module functions ------------------------------------------------------ */

static PyObject *
s_add_data(PyObject *mod, PyObject *const *args, Py_ssize_t nargs,
           PyObject *kwnames)
{
    (void) mod;
    static const char *const names[] = { "name", "value", "ts", "level",
                                         "tags" };
    PyObject *a[5];
    const char *name, *kv[2 * S_TAGS_MAX];
    double value;
    int64_t ts;
    int level = 1, ntags;
    if (!kwnames && nargs == 2) {            /* the common call */
        a[0] = args[0];
        a[1] = args[1];
        a[2] = a[3] = a[4] = NULL;
    } else if (tn_args("add_data", args, nargs, kwnames, names, 5, 2, a)) {
        return NULL;
    }
    if (!(name = tn_str(a[0], "name")) || s_double(a[1], "value", &value)
        || s_ts(a[2], &ts) || (a[3] && s_int(a[3], "level", &level))
        || s_tags(a[4], kv, &ntags))
        return NULL;
    int rc = ntags ? telem_add_data_tagv(name, value, ts, level, ntags, kv)
                   : telem_add_data(name, value, ts, level);
    return s_result(rc, "add_data");
}

/* A float64 view of `o`: a C-contiguous 1-D buffer of format 'd', else
 * a copy of any sequence of numbers.  *owned is the copy to free. */
typedef struct {
    Py_buffer view;
    int have_view;
    void *owned;
    Py_ssize_t n;
} s_array_t;

static void
s_array_release(s_array_t *a)
{
    if (a->have_view)
        PyBuffer_Release(&a->view);
    PyMem_Free(a->owned);
    a->have_view = 0;
    a->owned = NULL;
}

static int
s_fmt_is(const char *fmt, const char *const *ok)
{
    if (!fmt)
        fmt = "B";
    if (*fmt == '@' || *fmt == '=' || *fmt == '<')
        fmt++;
    for (; *ok; ok++)
        if (strcmp(fmt, *ok) == 0)
            return 1;
    return 0;
}

/* values: float64.  Buffers of another format are refused (TypeError);
 * sequences are converted element by element. */
static int
s_values(PyObject *o, s_array_t *a, const double **out)
{
    static const char *const d[] = { "d", NULL };
    memset(a, 0, sizeof *a);
    if (PyObject_CheckBuffer(o)) {
        if (PyObject_GetBuffer(o, &a->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT))
            return -1;
        a->have_view = 1;
        if (a->view.ndim > 1 || !s_fmt_is(a->view.format, d)) {
            PyErr_Format(PyExc_TypeError, "values: a buffer of float64 "
                         "('d'), one dimension; got format '%s', %d "
                         "dimensions", a->view.format ? a->view.format : "B",
                         a->view.ndim);
            return -1;
        }
        a->n = a->view.len / (Py_ssize_t) sizeof(double);
        *out = a->view.buf;
        return 0;
    }
    PyObject *seq = PySequence_Fast(o, "values must be a buffer of float64 "
                                    "or a sequence of numbers");
    if (!seq)
        return -1;
    a->n = PySequence_Fast_GET_SIZE(seq);
    double *v = PyMem_Malloc((size_t) (a->n ? a->n : 1) * sizeof *v);
    a->owned = v;
    int rc = v ? 0 : (PyErr_NoMemory(), -1);
    for (Py_ssize_t i = 0; rc == 0 && i < a->n; i++)
        rc = s_double(PySequence_Fast_GET_ITEM(seq, i), "values[i]", &v[i]);
    Py_DECREF(seq);
    *out = v;
    return rc;
}

/* times: int64 nanoseconds or float64 seconds, as a buffer or a sequence;
 * converted to int64 ns, each after the epoch. */
static int
s_times(PyObject *o, Py_ssize_t n, s_array_t *a, const int64_t **out)
{
    static const char *const q[] = { "q", "l", NULL };
    static const char *const d[] = { "d", NULL };
    memset(a, 0, sizeof *a);
    int64_t *t = PyMem_Malloc((size_t) (n ? n : 1) * sizeof *t);
    if (!t) {
        PyErr_NoMemory();
        return -1;
    }
    a->owned = t;
    *out = t;
    if (PyObject_CheckBuffer(o)) {
        if (PyObject_GetBuffer(o, &a->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT))
            return -1;
        a->have_view = 1;
        int is_ns = s_fmt_is(a->view.format, q) && a->view.itemsize == 8;
        if (a->view.ndim > 1 || !(is_ns || s_fmt_is(a->view.format, d))) {
            PyErr_Format(PyExc_TypeError, "times: a buffer of int64 ns or "
                         "float64 s, one dimension; got format '%s'",
                         a->view.format ? a->view.format : "B");
            return -1;
        }
        if (a->view.len / 8 != n) {
            tn_raise(TELEM_EINVAL, "times (not as many as values)");
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            if (is_ns) {
                t[i] = ((const int64_t *) a->view.buf)[i];
            } else {
                double s = ((const double *) a->view.buf)[i];
                t[i] = s > 0 && s < 9.2e9 ? (int64_t) llround(s * 1e9) : -1;
            }
            if (t[i] <= 0) {
                tn_raise(TELEM_EINVAL, "times (each after the epoch)");
                return -1;
            }
        }
        return 0;
    }
    PyObject *seq = PySequence_Fast(o, "times must be a buffer or a sequence "
                                    "of int ns or float s");
    if (!seq)
        return -1;
    int rc = 0;
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        tn_raise(TELEM_EINVAL, "times (not as many as values)");
        rc = -1;
    }
    for (Py_ssize_t i = 0; rc == 0 && i < n; i++) {
        PyObject *x = PySequence_Fast_GET_ITEM(seq, i);
        if (x == Py_None) {
            PyErr_SetString(PyExc_TypeError, "times: None is not a time");
            rc = -1;
        } else {
            rc = s_ts(x, &t[i]);
        }
    }
    Py_DECREF(seq);
    return rc;
}

static PyObject *
s_add_data_batch(PyObject *mod, PyObject *const *args, Py_ssize_t nargs,
                 PyObject *kwnames)
{
    (void) mod;
    static const char *const names[] = { "name", "values", "times", "level",
                                         "tags" };
    PyObject *a[5];
    const char *name, *kv[2 * S_TAGS_MAX];
    int level = 1, ntags;
    if (tn_args("add_data_batch", args, nargs, kwnames, names, 5, 2, a)
        || !(name = tn_str(a[0], "name"))
        || (a[3] && s_int(a[3], "level", &level)) || s_tags(a[4], kv, &ntags))
        return NULL;
    s_array_t va, ta;
    const double *v = NULL;
    const int64_t *t = NULL;
    PyObject *ret = NULL;
    memset(&ta, 0, sizeof ta);
    if (s_values(a[1], &va, &v))
        goto out;
    if (a[2] && a[2] != Py_None && s_times(a[2], va.n, &ta, &t))
        goto out;
    for (Py_ssize_t i = 0; i < va.n; i++)
        if (!isfinite(v[i])) {
            tn_raise(TELEM_EINVAL, "values (not finite)");
            goto out;
        }
    Py_ssize_t queued = 0;
    int rc = 0;
    PyThreadState *unlocked = va.n >= S_BATCH_NOGIL ? PyEval_SaveThread()
                                                    : NULL;
    for (Py_ssize_t i = 0; i < va.n; i++) {
        rc = telem_add_data_tagv(name, v[i], t ? t[i] : 0, level, ntags, kv);
        if (rc == 0)
            queued++;
        else if (rc != 1 && rc != TELEM_EFULL)
            break;
        rc = 0;
    }
    if (unlocked)
        PyEval_RestoreThread(unlocked);
    ret = rc ? tn_raise(rc, "add_data_batch") : PyLong_FromSsize_t(queued);
out:
    s_array_release(&va);
    s_array_release(&ta);
    return ret;
}

/* counter_add / gauge_set / describe */
static PyObject *
s_push(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
       const char *fn, const char *vname, int counter)
{
    const char *const names[] = { "name", vname };
    PyObject *a[2];
    const char *name;
    double value;
    if (tn_args(fn, args, nargs, kwnames, names, 2, 2, a)
        || !(name = tn_str(a[0], "name")) || s_double(a[1], vname, &value))
        return NULL;
    return s_result(counter ? telem_counter_add(name, value)
                            : telem_gauge_set(name, value), fn);
}

static PyObject *
s_counter_add(PyObject *mod, PyObject *const *args, Py_ssize_t nargs,
              PyObject *kwnames)
{
    (void) mod;
    return s_push(args, nargs, kwnames, "counter_add", "delta", 1);
}

static PyObject *
s_gauge_set(PyObject *mod, PyObject *const *args, Py_ssize_t nargs,
            PyObject *kwnames)
{
    (void) mod;
    return s_push(args, nargs, kwnames, "gauge_set", "value", 0);
}

static PyObject *
s_describe(PyObject *mod, PyObject *const *args, Py_ssize_t nargs,
           PyObject *kwnames)
{
    (void) mod;
    static const char *const names[] = { "name", "type", "unit", "doc" };
    PyObject *a[4];
    const char *s[4] = { NULL, NULL, "", "" };
    if (tn_args("describe", args, nargs, kwnames, names, 4, 2, a))
        return NULL;
    for (int i = 0; i < 4; i++)
        if (a[i] && !(s[i] = tn_str(a[i], names[i])))
            return NULL;
    return s_result(telem_describe(s[0], s[1], s[2], s[3]), "describe");
}

/* A timeout in seconds (None: the default) as ms. */
static int
s_timeout_ms(PyObject *o, double dflt, int *ms)
{
    double s = dflt;
    if (o && o != Py_None && s_double(o, "timeout", &s))
        return -1;
    if (!(s >= 0 && s <= 86400.0)) {
        tn_raise(TELEM_EINVAL, "timeout (0 to 86400 s)");
        return -1;
    }
    *ms = (int) ceil(s * 1000.0);
    return 0;
}

static PyObject *
s_flush(PyObject *mod, PyObject *const *args, Py_ssize_t nargs,
        PyObject *kwnames)
{
    (void) mod;
    static const char *const names[] = { "timeout" };
    PyObject *a[1];
    int ms, rc;
    if (tn_args("flush", args, nargs, kwnames, names, 1, 0, a)
        || s_timeout_ms(a[0], 2.0, &ms))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = telem_flush(ms);
    Py_END_ALLOW_THREADS
    if (rc == 0)
        Py_RETURN_TRUE;
    if (rc == TELEM_ETIMEDOUT || rc == TELEM_ECONN)
        Py_RETURN_FALSE;
    return tn_raise(rc, "flush");
}

static PyObject *
s_finalize(PyObject *mod, PyObject *unused)
{
    (void) mod;
    (void) unused;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = telem_finalize();
    Py_END_ALLOW_THREADS
    if (rc == 0)
        Py_RETURN_TRUE;
    if (rc == TELEM_ETIMEDOUT || rc == TELEM_ECONN)
        Py_RETURN_FALSE;
    return tn_raise(rc, "finalize");
}

static PyObject *
s_init(PyObject *mod, PyObject *unused)
{
    (void) mod;
    (void) unused;
    int rc = telem_init();
    if (rc)
        return tn_raise(rc, "init");
    Py_RETURN_NONE;
}

static PyObject *
s_level(PyObject *mod, PyObject *unused)
{
    (void) mod;
    (void) unused;
    return PyLong_FromLong(telem_level());
}

static PyObject *
s_set_level(PyObject *mod, PyObject *arg)
{
    (void) mod;
    int level;
    if (s_int(arg, "level", &level))
        return NULL;
    int rc = telem_set_level(level);
    if (rc)
        return tn_raise(rc, "set_level");
    Py_RETURN_NONE;
}

static PyTypeObject s_stats_type;
static PyStructSequence_Field s_stats_fields[] = {
    { "queued", "samples accepted" },
    { "sent", "samples handed to ZeroMQ" },
    { "dropped", "samples lost: queue full, no telemd, errors" },
    { "filtered", "samples skipped by the level" },
    { "invalid", "calls refused as invalid" },
    { NULL, NULL },
};
static PyStructSequence_Desc s_stats_desc = {
    "telem.Stats", "libtelem's counters since init (telem_stats()).",
    s_stats_fields, 5,
};

static PyObject *
s_stats(PyObject *mod, PyObject *unused)
{
    (void) mod;
    (void) unused;
    telem_stats_t st;
    telem_stats(&st);
    PyObject *r = PyStructSequence_New(&s_stats_type);
    if (!r)
        return NULL;
    uint64_t v[5] = { st.queued, st.sent, st.dropped, st.filtered,
                      st.invalid };
    for (int i = 0; i < 5; i++) {
        PyObject *x = PyLong_FromUnsignedLongLong(v[i]);
        if (!x) {
            Py_DECREF(r);
            return NULL;
        }
        PyStructSequence_SET_ITEM(r, i, x);
    }
    return r;
}

static PyObject *
s_libtelem_path(PyObject *mod, PyObject *unused)
{
    (void) mod;
    (void) unused;
    Dl_info info;
    if (!dladdr((void *) telem_add_data, &info) || !info.dli_fname)
        return tn_raise(TELEM_ENOTFOUND, "libtelem_path");
    char *real = realpath(info.dli_fname, NULL);
    PyObject *r = PyUnicode_DecodeFSDefault(real ? real : info.dli_fname);
    free(real);
    return r;
}

static PyObject *
s_strerror(PyObject *mod, PyObject *arg)
{
    (void) mod;
    int code;
    if (s_int(arg, "code", &code))
        return NULL;
    return PyUnicode_FromString(telem_strerror(code));
}

static PyObject *
s_section_rank(PyObject *mod, PyObject *unused)
{
    (void) mod;
    (void) unused;
    return PyUnicode_FromString(telem_section_rank());
}

#define S_DOC_ADD_DATA                                                       \
    "add_data($module, /, name, value, ts=None, level=1, tags=None)\n--\n\n" \
    "Records one sample of metric `name` (1-255 bytes).  ts: None = now, a " \
    "float = seconds since the epoch, an int = nanoseconds since the "      \
    "epoch.  level 1-4.  tags: a dict of str to str, at most 8, keys host " \
    "and pid reserved.  Returns True when queued, False when the level "    \
    "skipped it or the queue was full (counted in stats()).  Never blocks; " \
    "without a telemd samples are dropped and counted.  TypeError for "     \
    "wrong types, TelemInvalid (a ValueError) for bad values, TelemError "  \
    "(ESTATE) after finalize()."
#define S_DOC_BATCH                                                          \
    "add_data_batch($module, /, name, values, times=None, level=1, "        \
    "tags=None)\n--\n\n"                                                    \
    "Records len(values) samples of `name` in one call, without Python "    \
    "work per sample.  values: a 1-D buffer of float64 (numpy array, "     \
    "array.array('d'), memoryview) or any sequence of numbers.  times: "    \
    "None (each now), or as many int64 nanoseconds or float64 seconds "     \
    "since the epoch.  Every value and time is checked before any is "      \
    "recorded.  Returns how many were queued."
#define S_DOC_COUNTER                                                        \
    "counter_add($module, /, name, delta)\n--\n\n"                          \
    "Adds delta (>= 0) to a node-wide counter; name in Prometheus syntax, " \
    "labels allowed: 'bytes_total{file=\"a\"}'.  Returns as add_data."
#define S_DOC_GAUGE                                                          \
    "gauge_set($module, /, name, value)\n--\n\n"                            \
    "Sets a per-process gauge (Prometheus-style name).  Returns as add_data."
#define S_DOC_DESCRIBE                                                       \
    "describe($module, /, name, type, unit='', doc='')\n--\n\n"             \
    "Describes a metric for listings: type 'gauge' or 'counter'."
#define S_DOC_FLUSH                                                          \
    "flush($module, /, timeout=2.0)\n--\n\n"                                \
    "Sends every queued sample and waits at most `timeout` seconds for "    \
    "telemd's confirmation.  True when confirmed, False when no telemd "    \
    "answered in time (the samples are then dropped and counted)."
#define S_DOC_FINALIZE                                                       \
    "finalize($module, /)\n--\n\n"                                          \
    "Flushes (at most $TELEM_FINALIZE_MS, default 2 s) and stops libtelem; " \
    "later calls raise TelemError(ESTATE) until init().  Returns as flush()."

static PyMethodDef s_methods[] = {
    { "add_data", (PyCFunction) (void (*)(void)) s_add_data,
      METH_FASTCALL | METH_KEYWORDS, S_DOC_ADD_DATA },
    { "add_data_batch", (PyCFunction) (void (*)(void)) s_add_data_batch,
      METH_FASTCALL | METH_KEYWORDS, S_DOC_BATCH },
    { "counter_add", (PyCFunction) (void (*)(void)) s_counter_add,
      METH_FASTCALL | METH_KEYWORDS, S_DOC_COUNTER },
    { "gauge_set", (PyCFunction) (void (*)(void)) s_gauge_set,
      METH_FASTCALL | METH_KEYWORDS, S_DOC_GAUGE },
    { "describe", (PyCFunction) (void (*)(void)) s_describe,
      METH_FASTCALL | METH_KEYWORDS, S_DOC_DESCRIBE },
    { "flush", (PyCFunction) (void (*)(void)) s_flush,
      METH_FASTCALL | METH_KEYWORDS, S_DOC_FLUSH },
    { "finalize", s_finalize, METH_NOARGS, S_DOC_FINALIZE },
    { "init", s_init, METH_NOARGS,
      "init($module, /)\n--\n\n(Re)initialises libtelem from the "
      "environment; optional, the first call does it." },
    { "level", s_level, METH_NOARGS,
      "level($module, /)\n--\n\nThe telemetry level samples are compared "
      "with (TELEM_LEVEL, 0-4)." },
    { "set_level", s_set_level, METH_O,
      "set_level($module, level, /)\n--\n\nSets the level (0-4); "
      "TelemInvalid outside." },
    { "stats", s_stats, METH_NOARGS,
      "stats($module, /)\n--\n\nlibtelem's counters: a telem.Stats "
      "(queued, sent, dropped, filtered, invalid)." },
    { "libtelem_path", s_libtelem_path, METH_NOARGS,
      "libtelem_path($module, /)\n--\n\nThe absolute path of the "
      "libtelem.so this module is linked against." },
    { "strerror", s_strerror, METH_O,
      "strerror($module, code, /)\n--\n\ntelem_strerror(code): the "
      "sentence of a telem error code." },
    { "section_rank", s_section_rank, METH_NOARGS,
      "section_rank($module, /)\n--\n\nThe rank sections are tagged "
      "with (read from the environment once)." },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef s_module = {
    PyModuleDef_HEAD_INIT, "telem._native",
    "libtelem's metrics and section API (telem.h); use the telem package.",
    -1, s_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    if (PyStructSequence_InitType2(&s_stats_type, &s_stats_desc) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&s_module);
    if (!m)
        return NULL;
    Py_INCREF(&s_stats_type);
    if (PyModule_AddObject(m, "Stats", (PyObject *) &s_stats_type) < 0
        || tn_section_add(m) < 0
        || PyModule_AddIntConstant(m, "SECTION_NAMES", TELEM_SECTION_NAMES)
        || PyModule_AddIntConstant(m, "NAME_MAX", TN_NAME_MAX)
        || PyModule_AddIntConstant(m, "TAGS_MAX", S_TAGS_MAX)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
