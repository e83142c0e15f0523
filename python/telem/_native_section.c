/* _native_section.c - telem.section: the Python face of telem.h's
 * section API (telem_section_begin/end, and telem_section_begin_gpu with
 * a stream), as a context manager and a decorator.  Part of the
 * telem._native module (_native.h).
 */
#include "_native.h"

#include <structmember.h>

#include <telem/telem.h>
#include <telem/telem_error.h>

/* telem.section(name): a context manager (one `with` at a time per object:
 * entering an open one raises RuntimeError) and a decorator whose wrapper
 * opens a section of its own per call (so it is reentrant and safe across
 * threads).  The wrapper is a C callable (vectorcall) that binds as a
 * method and carries functools.update_wrapper's attributes. */

typedef struct {
    PyObject_HEAD
    PyObject *name;               /* str */
    const char *cname;            /* its UTF-8 */
    telem_section_t h;
    int open;
    int gpu;                      /* a stream was given */
    void *stream;                 /* that CUDA stream (NULL: default) */
} s_section_t;

typedef struct {
    PyObject_HEAD
    PyObject *func;
    PyObject *name;
    const char *cname;
    PyObject *dict;
    vectorcallfunc vectorcall;
    int gpu;
    void *stream;
} s_sfunc_t;

static PyTypeObject s_section_type;
static PyTypeObject s_sfunc_type;

/* Ends h; an end's error is raised unless an exception is already on its
 * way (`pending`). */
static int
s_section_end(telem_section_t *h, int pending)
{
    int rc = telem_section_end(h);
    if (rc >= 0 || rc == TELEM_EFULL || pending)
        return 0;
    tn_raise(rc, "section");
    return -1;
}

/* Begins a section, with its device time when a stream was given. */
static telem_section_t
s_begin(const char *cname, int gpu, void *stream)
{
    return gpu ? telem_section_begin_gpu(cname, stream)
               : telem_section_begin(cname);
}

/* The stream argument: None (no device time), an int (a CUDA stream's
 * address as torch.cuda.Stream.cuda_stream gives it; 0 is the default
 * stream) or an object with an int attribute cuda_stream.  0 or -1. */
static int
s_stream(PyObject *obj, int *gpu, void **stream)
{
    *gpu = 0;
    *stream = NULL;
    if (!obj || obj == Py_None)
        return 0;
    PyObject *v = NULL;
    if (!PyLong_Check(obj) && PyObject_HasAttrString(obj, "cuda_stream"))
        obj = v = PyObject_GetAttrString(obj, "cuda_stream");
    if (!obj || !PyLong_Check(obj) || PyBool_Check(obj)) {
        if (obj)
            PyErr_Format(PyExc_TypeError, "section stream must be None, an "
                         "int or have cuda_stream, not %.100s",
                         Py_TYPE(obj)->tp_name);
        Py_XDECREF(v);
        return -1;
    }
    unsigned long long addr = PyLong_AsUnsignedLongLong(obj);
    Py_XDECREF(v);
    if (PyErr_Occurred())
        return -1;
    *gpu = 1;
    *stream = (void *) (uintptr_t) addr;
    return 0;
}

static PyObject *
s_section_make(PyTypeObject *type, PyObject *name, PyObject *stream)
{
    const char *cname = tn_str(name, "section name");
    if (!cname)
        return NULL;
    int gpu;
    void *sp;
    if (s_stream(stream, &gpu, &sp))
        return NULL;
    size_t len = strlen(cname);
    if (len == 0 || len > TN_NAME_MAX)
        return tn_raise(TELEM_EINVAL, "section name (1-255 bytes)");
    s_section_t *self = (s_section_t *) type->tp_alloc(type, 0);
    if (!self)
        return NULL;
    Py_INCREF(name);
    self->name = name;
    self->cname = cname;
    self->gpu = gpu;
    self->stream = sp;
    return (PyObject *) self;
}

static PyObject *
s_section_vnew(PyObject *type, PyObject *const *args, size_t nargsf,
               PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    static const char *const names[] = { "name", "stream" };
    PyObject *a[2];
    if (tn_args("section", args, nargs, kwnames, names, 2, 1, a))
        return NULL;
    return s_section_make((PyTypeObject *) type, a[0], a[1]);
}

static PyObject *
s_section_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    static char *names[] = { "name", "stream", NULL };
    PyObject *name, *stream = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:section", names, &name,
                                     &stream))
        return NULL;
    return s_section_make(type, name, stream);
}

static void
s_section_dealloc(s_section_t *self)
{
    Py_XDECREF(self->name);
    Py_TYPE(self)->tp_free((PyObject *) self);
}

static PyObject *
s_section_enter(s_section_t *self, PyObject *unused)
{
    (void) unused;
    if (self->open) {
        PyErr_Format(PyExc_RuntimeError, "section '%s' is already open: "
                     "use one telem.section object per `with`", self->cname);
        return NULL;
    }
    self->h = s_begin(self->cname, self->gpu, self->stream);
    self->open = 1;
    Py_INCREF(self);
    return (PyObject *) self;
}

static PyObject *
s_section_exit(s_section_t *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (!self->open) {
        PyErr_Format(PyExc_RuntimeError, "section '%s' is not open",
                     self->cname);
        return NULL;
    }
    self->open = 0;
    int pending = nargs > 0 && args[0] != Py_None;
    if (s_section_end(&self->h, pending))
        return NULL;
    Py_RETURN_FALSE;
}

static PyObject *
s_sfunc_call(PyObject *callable, PyObject *const *args, size_t nargsf,
             PyObject *kwnames)
{
    s_sfunc_t *self = (s_sfunc_t *) callable;
    telem_section_t h = s_begin(self->cname, self->gpu, self->stream);
    PyObject *r = PyObject_Vectorcall(self->func, args, nargsf, kwnames);
    if (s_section_end(&h, r == NULL)) {
        Py_XDECREF(r);
        return NULL;
    }
    return r;
}

/* section(name)(func): the decorator. */
static PyObject *
s_section_call(s_section_t *self, PyObject *args, PyObject *kw)
{
    PyObject *func;
    if (kw && PyDict_GET_SIZE(kw)) {
        PyErr_SetString(PyExc_TypeError, "section(...)(func) takes no "
                        "keywords");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O:section", &func))
        return NULL;
    if (!PyCallable_Check(func)) {
        PyErr_Format(PyExc_TypeError, "section(...) decorates a callable, "
                     "not %.100s", Py_TYPE(func)->tp_name);
        return NULL;
    }
    s_sfunc_t *w = PyObject_GC_New(s_sfunc_t, &s_sfunc_type);
    if (!w)
        return NULL;
    Py_INCREF(func);
    Py_INCREF(self->name);
    w->func = func;
    w->name = self->name;
    w->cname = self->cname;
    w->dict = NULL;
    w->vectorcall = s_sfunc_call;
    w->gpu = self->gpu;
    w->stream = self->stream;
    PyObject_GC_Track(w);
    PyObject *ft = PyImport_ImportModule("functools");
    PyObject *r = ft ? PyObject_CallMethod(ft, "update_wrapper", "OO",
                                           (PyObject *) w, func)
                     : NULL;
    Py_XDECREF(ft);
    if (!r) {
        Py_DECREF(w);
        return NULL;
    }
    Py_DECREF(r);
    return (PyObject *) w;
}

static PyObject *
s_section_get_step(s_section_t *self, void *unused)
{
    (void) unused;
    int64_t step = telem_section_step(self->cname);
    if (step < 0)
        return tn_raise((int) step, "section.step");
    return PyLong_FromLongLong(step);
}

static int
s_section_set_step(s_section_t *self, PyObject *value, void *unused)
{
    (void) unused;
    if (!value) {
        PyErr_SetString(PyExc_AttributeError, "section.step cannot be "
                        "deleted");
        return -1;
    }
    if (!PyLong_Check(value) || PyBool_Check(value)) {
        PyErr_Format(PyExc_TypeError, "step must be int, not %.100s",
                     Py_TYPE(value)->tp_name);
        return -1;
    }
    int overflow;
    long long step = PyLong_AsLongLongAndOverflow(value, &overflow);
    int rc = overflow ? TELEM_EINVAL : telem_section_set_step(self->cname, step);
    if (rc) {
        tn_raise(rc, "section.step");
        return -1;
    }
    return 0;
}

static PyObject *
s_section_repr(s_section_t *self)
{
    return PyUnicode_FromFormat("telem.section(%R)", self->name);
}

static PyMethodDef s_section_methods[] = {
    { "__enter__", (PyCFunction) s_section_enter, METH_NOARGS,
      "Begins the section." },
    { "__exit__", (PyCFunction) (void (*)(void)) s_section_exit,
      METH_FASTCALL, "Ends the section: records its duration and step." },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef s_section_getset[] = {
    { "step", (getter) s_section_get_step, (setter) s_section_set_step,
      "The step the next end of this name records; set it to resume "
      "counting from a step.", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyMemberDef s_section_members[] = {
    { "name", T_OBJECT, offsetof(s_section_t, name), READONLY,
      "The section's name." },
    { NULL, 0, 0, 0, NULL },
};

static PyTypeObject s_section_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "telem.section",
    .tp_basicsize = sizeof(s_section_t),
    .tp_dealloc = (destructor) s_section_dealloc,
    .tp_repr = (reprfunc) s_section_repr,
    .tp_call = (ternaryfunc) s_section_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "section(name, stream=None): times a named region of the "
              "program.\n\n"
              "    with telem.section(\"step\"):\n"
              "        ...\n"
              "    @telem.section(\"step\")\n"
              "    def train_step(batch): ...\n\n"
              "Each end records telem_section_seconds and telem_section_step "
              "(tags section, rank).  With a CUDA stream (an int address, 0 "
              "for the default stream, or an object with cuda_stream such "
              "as torch.cuda.current_stream()) the section also records "
              "the device time between its begin and end on that stream "
              "as telem_section_gpu_seconds, read once it has completed, "
              "never waited for; where CUDA is not loaded it is a plain "
              "section.",
    .tp_methods = s_section_methods,
    .tp_getset = s_section_getset,
    .tp_members = s_section_members,
    .tp_new = s_section_new,
    .tp_vectorcall = s_section_vnew,
};

static int
s_sfunc_traverse(s_sfunc_t *self, visitproc visit, void *arg)
{
    Py_VISIT(self->func);
    Py_VISIT(self->name);
    Py_VISIT(self->dict);
    return 0;
}

static int
s_sfunc_clear(s_sfunc_t *self)
{
    Py_CLEAR(self->func);
    Py_CLEAR(self->dict);
    /* name stays: cname points into it until the object is freed */
    return 0;
}

static void
s_sfunc_dealloc(s_sfunc_t *self)
{
    PyObject_GC_UnTrack(self);
    s_sfunc_clear(self);
    Py_CLEAR(self->name);
    PyObject_GC_Del(self);
}

static PyObject *
s_sfunc_get(PyObject *self, PyObject *obj, PyObject *type)
{
    (void) type;
    if (!obj || obj == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, obj);
}

static PyObject *
s_sfunc_repr(s_sfunc_t *self)
{
    return PyUnicode_FromFormat("<telem.section(%R) of %R>", self->name,
                                self->func);
}

static PyGetSetDef s_sfunc_getset[] = {
    { "__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL,
      NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject s_sfunc_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "telem.sectioned",
    .tp_basicsize = sizeof(s_sfunc_t),
    .tp_dealloc = (destructor) s_sfunc_dealloc,
    .tp_vectorcall_offset = offsetof(s_sfunc_t, vectorcall),
    .tp_repr = (reprfunc) s_sfunc_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC
                | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A function whose every call is a telem section.",
    .tp_traverse = (traverseproc) s_sfunc_traverse,
    .tp_clear = (inquiry) s_sfunc_clear,
    .tp_descr_get = s_sfunc_get,
    .tp_getset = s_sfunc_getset,
    .tp_dictoffset = offsetof(s_sfunc_t, dict),
};

int
tn_section_add(PyObject *m)
{
    if (PyType_Ready(&s_section_type) < 0 || PyType_Ready(&s_sfunc_type) < 0)
        return -1;
    Py_INCREF(&s_section_type);
    if (PyModule_AddObject(m, "section", (PyObject *) &s_section_type) < 0) {
        Py_DECREF(&s_section_type);
        return -1;
    }
    return 0;
}
