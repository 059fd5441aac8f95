/* lazyx.core._native, part 3: the user's line of the frontend op now running (source.py's
op_line and CURRENT, in C).

`with source.OP_LINE:` runs around every frontend op: the user's line is found once, as the op
begins (the first frame outward that is neither lazyx's nor a framework's), and every node and
sync the op makes reads it from source.CURRENT. Same rules as source.op_line and user_line,
with source.py's own verdict cache and ENABLED switch (read through its globals).

CURRENT is per thread. source.py's pure-Python path uses a threading.local, whose attribute
reads and writes cost 0.25 us of every op (five of them per op, two more per node). Here
CURRENT is a `ThreadLines`: each thread's depth and line sit in a C struct, kept in the thread
state's dict and found again through the thread's unique id, so a read is a compare and a
field. Python still reads and writes `CURRENT.depth` and `CURRENT.line` as attributes.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>   /* PyFrame_GetBack: not in Python.h before 3.11 */

/* One thread's state: the depth of nested frontend ops, and the outermost one's line. */
typedef struct {
    PyObject_HEAD
    long depth;
    PyObject *line;
} LinesObject;

static void Lines_dealloc(LinesObject *self) {
    Py_XDECREF(self->line);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject LinesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazyx.core._native._Lines",
    .tp_basicsize = sizeof(LinesObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)Lines_dealloc,
};

/* source.CURRENT: the calling thread's LinesObject, found through the thread state's dict
   under `key`; the last thread's is kept with its id (ids are never reused, addresses are). */
typedef struct {
    PyObject_HEAD
    PyObject *key;
    uint64_t last_thread;
    LinesObject *last;
} ThreadLinesObject;

static PyTypeObject ThreadLinesType;

static LinesObject *lines_of(ThreadLinesObject *self) {  /* borrowed */
    PyThreadState *tstate = PyThreadState_Get();
    uint64_t thread = PyThreadState_GetID(tstate);
    if (self->last != NULL && self->last_thread == thread) return self->last;
    PyObject *dict = PyThreadState_GetDict();
    if (dict == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "lazyx: no thread-state dict");
        return NULL;
    }
    LinesObject *lines = (LinesObject *)PyDict_GetItemWithError(dict, self->key);
    if (lines == NULL) {
        if (PyErr_Occurred()) return NULL;
        lines = PyObject_New(LinesObject, &LinesType);
        if (lines == NULL) return NULL;
        lines->depth = 0;
        lines->line = Py_NewRef(Py_None);
        int status = PyDict_SetItem(dict, self->key, (PyObject *)lines);
        Py_DECREF(lines);  /* the thread's dict holds it */
        if (status < 0) return NULL;
    }
    Py_XSETREF(self->last, (LinesObject *)Py_NewRef(lines));
    self->last_thread = thread;
    return lines;
}

/* For core/_native.c's node builder: this thread's depth and (new reference) line in
   `current`, source.CURRENT, whichever kind it is (a test may swap in a threading.local). */
int lazyx_current_line(PyObject *current, long *depth, PyObject **line) {
    if (Py_IS_TYPE(current, &ThreadLinesType)) {
        LinesObject *lines = lines_of((ThreadLinesObject *)current);
        if (lines == NULL) return -1;
        *depth = lines->depth;
        *line = Py_NewRef(lines->line);
        return 0;
    }
    static PyObject *s_depth, *s_line;
    if (s_depth == NULL && ((s_depth = PyUnicode_InternFromString("depth")) == NULL ||
                            (s_line = PyUnicode_InternFromString("line")) == NULL))
        return -1;
    PyObject *value = PyObject_GetAttr(current, s_depth);
    if (value == NULL) return -1;
    *depth = PyLong_AsLong(value);
    Py_DECREF(value);
    if (*depth == -1 && PyErr_Occurred()) return -1;
    *line = PyObject_GetAttr(current, s_line);
    return *line == NULL ? -1 : 0;
}

static PyObject *ThreadLines_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if (!PyArg_ParseTuple(args, ":ThreadLines")) return NULL;
    ThreadLinesObject *self = (ThreadLinesObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    /* a key of this object's own: two ThreadLines (two imports of lazyx) never share state */
    self->key = PyUnicode_FromFormat("lazyx.ThreadLines.%p", (void *)self);
    if (self->key == NULL) { Py_DECREF(self); return NULL; }
    return (PyObject *)self;
}

static void ThreadLines_dealloc(ThreadLinesObject *self) {
    Py_XDECREF(self->key);
    Py_XDECREF(self->last);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *get_depth(ThreadLinesObject *self, void *unused) {
    LinesObject *lines = lines_of(self);
    return lines == NULL ? NULL : PyLong_FromLong(lines->depth);
}

static int set_depth(ThreadLinesObject *self, PyObject *value, void *unused) {
    LinesObject *lines = lines_of(self);
    if (lines == NULL) return -1;
    if (value == NULL) { PyErr_SetString(PyExc_AttributeError, "depth cannot be deleted"); return -1; }
    long depth = PyLong_AsLong(value);
    if (depth == -1 && PyErr_Occurred()) return -1;
    lines->depth = depth;
    return 0;
}

static PyObject *get_line(ThreadLinesObject *self, void *unused) {
    LinesObject *lines = lines_of(self);
    return lines == NULL ? NULL : Py_NewRef(lines->line);
}

static int set_line(ThreadLinesObject *self, PyObject *value, void *unused) {
    LinesObject *lines = lines_of(self);
    if (lines == NULL) return -1;
    Py_XSETREF(lines->line, Py_NewRef(value == NULL ? Py_None : value));
    return 0;
}

static PyGetSetDef ThreadLines_getset[] = {
    {"depth", (getter)get_depth, (setter)set_depth,
     "nested frontend ops running in this thread (0: none)", NULL},
    {"line", (getter)get_line, (setter)set_line,
     "(filename, lineno) of the user's call that began the outermost one, or None", NULL},
    {NULL}
};

static PyTypeObject ThreadLinesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazyx.core._native.ThreadLines",
    .tp_doc = "ThreadLines(): source.CURRENT in C, each thread's op depth and user line.",
    .tp_basicsize = sizeof(ThreadLinesObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = ThreadLines_new,
    .tp_dealloc = (destructor)ThreadLines_dealloc,
    .tp_getset = ThreadLines_getset,
};

/* ---------------------------------------------------------------- OP_LINE */

typedef struct {
    PyObject_HEAD
    PyObject *G;  /* core/source.py's globals */
} OpLineObject;

static PyObject *s_current, *s_verdicts, *s_is_internal, *s_enabled;

PyObject *lazyx_global(PyObject *G, PyObject *name);  /* core/_native.c: a module global */

/* A frame's (filename, lineno), remembered by (code object, last instruction): CPython finds a
   line number by scanning the code's line table from its start on every call, about 5 % of a
   tiny op's tracing. Entries hold their code objects, so an address is never reused while it
   is cached; a colliding entry is replaced. */
#define LINE_SLOTS 256
static struct { PyCodeObject *code; int lasti; PyObject *line; } line_cache[LINE_SLOTS];

static int last_instruction(PyFrameObject *frame) {
#if PY_VERSION_HEX >= 0x030B0000
    return PyFrame_GetLasti(frame);
#else
    return frame->f_lasti;
#endif
}

static PyObject *frame_line(PyFrameObject *frame, PyCodeObject *code) {
    int lasti = last_instruction(frame);
    size_t slot = (((size_t)code >> 4) ^ (size_t)lasti * 2654435761u) % LINE_SLOTS;
    if (lasti >= 0 && line_cache[slot].code == code && line_cache[slot].lasti == lasti)
        return Py_NewRef(line_cache[slot].line);
    PyObject *line = Py_BuildValue("(Oi)", code->co_filename, PyFrame_GetLineNumber(frame));
    if (line == NULL || lasti < 0) return line;
    Py_XSETREF(line_cache[slot].line, Py_NewRef(line));
    Py_XSETREF(line_cache[slot].code, (PyCodeObject *)Py_NewRef(code));
    line_cache[slot].lasti = lasti;
    return line;
}

/* user_line() for the frame that is running `with`: (filename, lineno), or None. */
static PyObject *users_line(PyObject *G) {
    PyObject *enabled = lazyx_global(G, s_enabled), *verdicts, *is_internal;
    if (enabled == NULL) return NULL;
    int on = PyObject_IsTrue(enabled);
    if (on <= 0) return on < 0 ? NULL : Py_NewRef(Py_None);
    if ((verdicts = lazyx_global(G, s_verdicts)) == NULL ||
            (is_internal = lazyx_global(G, s_is_internal)) == NULL)
        return NULL;
    PyFrameObject *frame = PyEval_GetFrame();  /* borrowed: the caller's (C has no frame) */
    Py_XINCREF(frame);
    while (frame != NULL) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        PyObject *filename = code->co_filename, *verdict;
        int internal;
        verdict = PyDict_Check(verdicts) ? PyDict_GetItemWithError(verdicts, filename) : NULL;
        if (verdict != NULL) {
            internal = PyObject_IsTrue(verdict);
        } else if (PyErr_Occurred()) {
            internal = -1;
        } else {
            verdict = PyObject_CallOneArg(is_internal, filename);
            internal = verdict == NULL ? -1 : PyObject_IsTrue(verdict);
            Py_XDECREF(verdict);
        }
        if (internal <= 0) {
            PyObject *line = internal < 0 ? NULL : frame_line(frame, code);
            Py_DECREF(code);
            Py_DECREF(frame);
            return line;
        }
        Py_DECREF(code);
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    Py_RETURN_NONE;
}

/* `with OP_LINE:` entered (delta 1) or left (delta -1): this thread's depth moves by delta,
   and an op the user called (depth 0 as it begins) gets its line first; nested ops keep the
   outermost line, and an exception inside the op goes on. CURRENT is a ThreadLines, or
   anything with `depth` and `line` attributes (a test's swap for the threading.local). */
static PyObject *step(OpLineObject *self, long delta) {
    PyObject *current = lazyx_global(self->G, s_current), *line;
    if (current == NULL) return NULL;
    if (Py_IS_TYPE(current, &ThreadLinesType)) {
        LinesObject *lines = lines_of((ThreadLinesObject *)current);
        if (lines == NULL) return NULL;
        if (delta > 0 && !lines->depth) {
            if ((line = users_line(self->G)) == NULL) return NULL;
            Py_XSETREF(lines->line, line);
        }
        lines->depth += delta;
        Py_RETURN_NONE;
    }
    long depth;
    if (lazyx_current_line(current, &depth, &line) < 0) return NULL;
    Py_DECREF(line);
    if (delta > 0 && !depth) {
        if ((line = users_line(self->G)) == NULL) return NULL;
        int status = PyObject_SetAttrString(current, "line", line);
        Py_DECREF(line);
        if (status < 0) return NULL;
    }
    PyObject *value = PyLong_FromLong(depth + delta);
    if (value == NULL) return NULL;
    int status = PyObject_SetAttrString(current, "depth", value);
    Py_DECREF(value);
    return status < 0 ? NULL : Py_NewRef(Py_None);
}

static PyObject *OpLine_enter(OpLineObject *self, PyObject *unused) {
    return step(self, 1);
}

static PyObject *OpLine_exit(OpLineObject *self, PyObject *const *args, Py_ssize_t nargs) {
    return step(self, -1);
}

static PyTypeObject OpLineType;

/* `with op_line:` for C callers (frontends/torch/_native_dispatch.c): 0, or -1 on error. */
int lazyx_op_line_enter(PyObject *op_line) {
    PyObject *r = Py_IS_TYPE(op_line, &OpLineType) ? step((OpLineObject *)op_line, 1) :
        PyObject_CallMethod(op_line, "__enter__", NULL);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

int lazyx_op_line_exit(PyObject *op_line) {
    PyObject *r = Py_IS_TYPE(op_line, &OpLineType) ? step((OpLineObject *)op_line, -1) :
        PyObject_CallMethod(op_line, "__exit__", "OOO", Py_None, Py_None, Py_None);
    if (r == NULL) return -1;
    Py_DECREF(r);
    return 0;
}

static PyObject *OpLine_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *G;
    if (!PyArg_ParseTuple(args, "O!:OpLine", &PyDict_Type, &G)) return NULL;
    OpLineObject *self = (OpLineObject *)type->tp_alloc(type, 0);
    if (self != NULL) self->G = Py_NewRef(G);
    return (PyObject *)self;
}

static void OpLine_dealloc(OpLineObject *self) {
    Py_XDECREF(self->G);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef OpLine_methods[] = {
    {"__enter__", (PyCFunction)OpLine_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))OpLine_exit, METH_FASTCALL, NULL},
    {NULL}
};

static PyTypeObject OpLineType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazyx.core._native.OpLine",
    .tp_doc = "OpLine(source.py's globals): source.op_line in C.",
    .tp_basicsize = sizeof(OpLineObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = OpLine_new,
    .tp_dealloc = (destructor)OpLine_dealloc,
    .tp_methods = OpLine_methods,
};

int lazyx_lines_init(PyObject *m) {
    if (PyType_Ready(&LinesType) < 0 || PyType_Ready(&ThreadLinesType) < 0 ||
            PyType_Ready(&OpLineType) < 0)
        return -1;
    if ((s_current = PyUnicode_InternFromString("CURRENT")) == NULL ||
            (s_verdicts = PyUnicode_InternFromString("_verdicts")) == NULL ||
            (s_is_internal = PyUnicode_InternFromString("_is_internal")) == NULL ||
            (s_enabled = PyUnicode_InternFromString("ENABLED")) == NULL)
        return -1;
    if (PyModule_AddObjectRef(m, "ThreadLines", (PyObject *)&ThreadLinesType) < 0 ||
            PyModule_AddObjectRef(m, "OpLine", (PyObject *)&OpLineType) < 0)
        return -1;
    return 0;
}
