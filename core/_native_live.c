/* lazyx.core._native, part two: the live registry and the lazy handle in C (and, at the end,
runtime.maybe_cut's compare and NumPy's LazyArray construction: CutCheck, Wrapper).

Every traced op of every frontend makes one handle (core/runtime.py's LazyHandle), and a
pending one registers in its thread's live set; every cut reads that set back in
registration order. In Python, the handle's __init__ and the set's add were about 0.35 us of
each op (a third of NumPy's per-op cost beyond its node), and reading back the set of a W1
step 8 us of its cut.

core/runtime.py's _OrderedWeakSet and _PyHandleBase stay the reference: LiveSet and
HandleBase below keep the same registry semantics, and LAZYX_NATIVE=0 uses only those
(tests/core/test_live_order.py and tests/core/test_native_live.py run under both).

* LiveSet: the registered handles in registration order, as an array of borrowed pointers.
  A handle knows its set and its place there, so registering it again is one compare, and a
  dying handle takes itself out (its dealloc): no dictionary, no weak reference per handle.
  The Python set holds weak references and drops dead ones when it is read, because a
  weakref callback per short-lived value cost more than the cut; in C that bookkeeping is
  a store. The array is compacted when it is read (at a cut) or when it fills up.
* HandleBase: a `node` slot and weak references. A handle whose node is not a `data` leaf
  registers in `type(handle)._thread_state.live` (the runtime's per-thread state: the class
  attribute, not a C global, so two copies of lazyx imported under two package names each
  keep their own registry). A handle is in one set at a time: one written by two threads
  is cut by the last one to write it (the Python set would list it in both).
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

static PyObject *s_op, *s_data, *s_live, *s_add, *s_thread_state, *s_handle_slot,
    *s_next_cut;

/* ---------------------------------------------------------------- LiveSet */

typedef struct LiveSetObject LiveSetObject;

typedef struct {
    PyObject_HEAD
    PyObject *node;
    PyObject *weakreflist;
    LiveSetObject *registry;  /* the live set holding this handle (a reference), or NULL */
    Py_ssize_t index;         /* its position there */
} HandleObject;

struct LiveSetObject {
    PyObject_HEAD
    /* handles in registration order, borrowed: a handle leaves as it dies (NULL: left) */
    HandleObject **items;
    Py_ssize_t n, cap, holes;
};

static PyTypeObject LiveSetType, HandleType;

static void liveset_compact(LiveSetObject *self) {
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < self->n; i++) {
        HandleObject *h = self->items[i];
        if (h != NULL) {
            h->index = j;
            self->items[j++] = h;
        }
    }
    self->n = j;
    self->holes = 0;
}

/* Take `h` out of its live set (its node stays what it is: only the registration goes). */
static void unregister(HandleObject *h) {
    LiveSetObject *set = h->registry;
    if (set == NULL) return;
    set->items[h->index] = NULL;
    set->holes++;
    h->registry = NULL;
    Py_DECREF(set);
}

static int liveset_add(LiveSetObject *self, HandleObject *h) {
    if (h->registry == self) return 0;  /* registered already: it keeps its place */
    unregister(h);  /* (registered by another thread: the last one to write it cuts it) */
    if (self->n == self->cap) {
        if (self->n && self->holes * 2 >= self->n) {
            liveset_compact(self);
        } else {
            Py_ssize_t cap = self->cap ? self->cap * 2 : 64;
            HandleObject **items = PyMem_Realloc(self->items, cap * sizeof(HandleObject *));
            if (items == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            self->items = items;
            self->cap = cap;
        }
    }
    h->index = self->n;
    self->items[self->n++] = h;
    h->registry = (LiveSetObject *)Py_NewRef((PyObject *)self);
    return 0;
}

static HandleObject *as_handle(PyObject *obj) {
    if (!PyObject_TypeCheck(obj, &HandleType)) {
        PyErr_Format(PyExc_TypeError, "LiveSet holds lazy handles, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return (HandleObject *)obj;
}

static PyObject *LiveSet_add(LiveSetObject *self, PyObject *obj) {
    HandleObject *h = as_handle(obj);
    if (h == NULL || liveset_add(self, h) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *LiveSet_discard(LiveSetObject *self, PyObject *obj) {
    HandleObject *h = as_handle(obj);
    if (h == NULL) return NULL;
    if (h->registry == self) unregister(h);
    Py_RETURN_NONE;
}

static PyObject *LiveSet_surely_empty(LiveSetObject *self, PyObject *unused) {
    return PyBool_FromLong(self->n == self->holes);
}

static PyObject *LiveSet_iter(LiveSetObject *self) {
    /* The list is made before the set is compacted and read: making it may run the garbage
       collector, and with it finalizers (any Python code, a sync among it), which can take
       handles out of the set or add new ones. Appending afterwards allocates no object, so
       nothing runs between the compaction and the last read. */
    PyObject *list = PyList_New(0), *it;
    if (list == NULL) return NULL;
    liveset_compact(self);
    for (Py_ssize_t i = 0; i < self->n; i++) {
        HandleObject *h = self->items[i];
        /* A handle with no reference left is being deallocated: CPython's trashcan defers
           the dealloc of an object freed deep in a nested structure (a long list, a
           traceback's frames) until the outermost dealloc returns, and Python code (a
           finalizer) may run meanwhile. Handing it out would revive it, and it would be
           freed twice. Its dealloc takes it out of the set. */
        if (Py_REFCNT(h) == 0) continue;
        if (PyList_Append(list, (PyObject *)h) < 0) {
            Py_DECREF(list);
            return NULL;
        }
    }
    it = PyObject_GetIter(list);
    Py_DECREF(list);
    return it;
}

static Py_ssize_t LiveSet_len(LiveSetObject *self) {
    return self->n - self->holes;
}

static PyObject *LiveSet_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    if ((kwargs != NULL && PyDict_GET_SIZE(kwargs)) || PyTuple_GET_SIZE(args)) {
        PyErr_SetString(PyExc_TypeError, "LiveSet() takes no arguments");
        return NULL;
    }
    return type->tp_alloc(type, 0);  /* (zeroed: no items yet) */
}

static void LiveSet_dealloc(LiveSetObject *self) {
    /* each registered handle holds a reference to its set: none is left by now */
    PyMem_Free(self->items);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef LiveSet_methods[] = {
    {"add", (PyCFunction)LiveSet_add, METH_O,
     "Register a handle (at the end; one registered already keeps its place)."},
    {"discard", (PyCFunction)LiveSet_discard, METH_O, "Forget a handle."},
    {"surely_empty", (PyCFunction)LiveSet_surely_empty, METH_NOARGS,
     "True when no live handle is registered."},
    {NULL}
};

static PySequenceMethods LiveSet_as_sequence = {.sq_length = (lenfunc)LiveSet_len};

static PyTypeObject LiveSetType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazyx.core._native.LiveSet",
    .tp_doc = "Live pending handles in registration order (runtime._OrderedWeakSet in C).",
    .tp_basicsize = sizeof(LiveSetObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = LiveSet_new,
    .tp_dealloc = (destructor)LiveSet_dealloc,
    .tp_iter = (getiterfunc)LiveSet_iter,
    .tp_as_sequence = &LiveSet_as_sequence,
    .tp_methods = LiveSet_methods,
};

/* ---------------------------------------------------------------- HandleBase */

/* 1 if `node` is pending (its op is not "data"), 0 if not, -1 on error. */
static int is_pending(PyObject *node) {
    PyObject *op = PyObject_GetAttr(node, s_op);
    if (op == NULL) return -1;
    int pending = op != s_data && !(PyUnicode_Check(op) && PyUnicode_Compare(op, s_data) == 0);
    Py_DECREF(op);
    return pending;
}

/* Register `self` in its class's thread state's live set if `node` is pending. */
static int register_if_pending(HandleObject *self, PyObject *node) {
    int pending = is_pending(node);
    if (pending <= 0) return pending;
    PyObject *state = PyObject_GetAttr((PyObject *)Py_TYPE(self), s_thread_state), *live;
    if (state == NULL) return -1;
    live = PyObject_GetAttr(state, s_live);
    Py_DECREF(state);
    if (live == NULL) return -1;
    int r;
    if (Py_IS_TYPE(live, &LiveSetType)) {
        r = liveset_add((LiveSetObject *)live, self);
    } else {  /* the Python registry (a test swaps it) */
        PyObject *res = PyObject_CallMethodOneArg(live, s_add, (PyObject *)self);
        r = res == NULL ? -1 : 0;
        Py_XDECREF(res);
    }
    Py_DECREF(live);
    return r;
}

/* Point the handle at `node`, registering it if the node is pending: construction and set. */
static int bind(HandleObject *self, PyObject *node) {
    Py_XSETREF(self->node, Py_NewRef(node));
    return register_if_pending(self, node);
}

static int Handle_init(HandleObject *self, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"node", NULL};
    PyObject *node;
    if (kwargs == NULL && PyTuple_GET_SIZE(args) == 1) {
        node = PyTuple_GET_ITEM(args, 0);
    } else if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O:LazyHandle", kwlist, &node)) {
        return -1;
    }
    return bind(self, node);
}

/* handle_type(node) (new reference): for a HandleBase subclass that keeps HandleBase's
   construction, what its tp_new and Handle_init do, without the type call's argument tuple;
   the C dispatchers make one per traced op. */
PyObject *lazyx_new_handle(PyObject *handle_type, PyObject *node) {
    if (!PyType_Check(handle_type) ||
            !PyType_IsSubtype((PyTypeObject *)handle_type, &HandleType) ||
            ((PyTypeObject *)handle_type)->tp_init != (initproc)Handle_init ||
            ((PyTypeObject *)handle_type)->tp_new != PyType_GenericNew)
        return PyObject_CallOneArg(handle_type, node);
    PyTypeObject *type = (PyTypeObject *)handle_type;
    HandleObject *handle = (HandleObject *)type->tp_alloc(type, 0);
    if (handle == NULL) return NULL;
    if (bind(handle, node) < 0) {
        Py_DECREF(handle);
        return NULL;
    }
    return (PyObject *)handle;
}

static PyObject *Handle_set(HandleObject *self, PyObject *node) {
    if (bind(self, node) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *Handle_pending(HandleObject *self, void *closure) {
    if (self->node == NULL) {
        PyErr_SetString(PyExc_AttributeError, "node");
        return NULL;
    }
    int pending = is_pending(self->node);
    return pending < 0 ? NULL : PyBool_FromLong(pending);
}

static PyObject *Handle_reduce(HandleObject *self, PyObject *unused) {
    if (self->node == NULL) {
        PyErr_SetString(PyExc_AttributeError, "node");
        return NULL;
    }
    return Py_BuildValue("O(O)", (PyObject *)Py_TYPE(self), self->node);
}

static int Handle_traverse(HandleObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->node);  /* (a Python subclass's traverse visits its type) */
    return 0;
}

static int Handle_clear(HandleObject *self) {
    /* A handle the garbage collector clears has no node left, so it is pending no more: it
       leaves its live set here, not only at dealloc. (An object that survives its tp_clear --
       torch keeps a tensor's Python object alive while its C++ tensor lives -- would otherwise
       stay registered, and the next sync would read a handle without a node.) */
    unregister(self);
    Py_CLEAR(self->node);
    return 0;
}

static void Handle_dealloc(HandleObject *self) {
    /* (a Python subclass's dealloc calls this one, then releases its heap type itself) */
    PyObject_GC_UnTrack(self);
    /* a dead handle leaves its live set now, not at the next cut; and before its weak
       references' callbacks run Python code that might read the set */
    unregister(self);
    if (self->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject *)self);
    Handle_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef Handle_members[] = {
    {"node", T_OBJECT_EX, offsetof(HandleObject, node), 0,
     "The IR node: pending work, or a data leaf holding the value."},
    {NULL}
};

static PyGetSetDef Handle_getset[] = {
    {"pending", (getter)Handle_pending, NULL, "Whether the node is not (yet) a data leaf.", NULL},
    {NULL}
};

static PyMethodDef Handle_methods[] = {
    {"set", (PyCFunction)Handle_set, METH_O,
     "Rebind (in-place ops); a pending node registers the handle for the next sync."},
    {"__reduce__", (PyCFunction)Handle_reduce, METH_NOARGS, NULL},
    {NULL}
};

static PyTypeObject HandleType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazyx.core._native.HandleBase",
    .tp_doc = "runtime.LazyHandle's fields and construction in C (see core/runtime.py).",
    .tp_basicsize = sizeof(HandleObject),
    .tp_weaklistoffset = offsetof(HandleObject, weakreflist),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Handle_init,
    .tp_dealloc = (destructor)Handle_dealloc,
    .tp_traverse = (traverseproc)Handle_traverse,
    .tp_clear = (inquiry)Handle_clear,
    .tp_members = Handle_members,
    .tp_getset = Handle_getset,
    .tp_methods = Handle_methods,
};

/* ---------------------------------------------------------------- Wrapper

A frontend's array class whose __init__ only gives it a handle (frontends/numpy's LazyArray:
`self.__lazyx_handle__ = LazyHandle(node)`): Wrapper(cls, handle_type)(node) makes the same
object without running a Python __init__, a frame per traced op (5 % of NumPy's W4 step). */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *cls;          /* the array class (its instances: object.__new__ + the slot) */
    PyTypeObject *handle_type;  /* runtime.LazyHandle, a HandleBase subclass */
    PyObject *slot;             /* cls's __lazyx_handle__ descriptor */
} WrapperObject;

static PyObject *Wrapper_call(WrapperObject *self, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "wrap(node) takes one node");
        return NULL;
    }
    PyObject *handle = lazyx_new_handle((PyObject *)self->handle_type, args[0]);
    if (handle == NULL) return NULL;
    PyObject *array = self->cls->tp_alloc(self->cls, 0);
    if (array != NULL && Py_TYPE(self->slot)->tp_descr_set(self->slot, array, handle) < 0)
        Py_CLEAR(array);
    Py_DECREF(handle);
    return array;
}

static PyObject *Wrapper_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"cls", "handle_type", NULL};
    PyTypeObject *cls, *handle_type;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!:Wrapper", names, &PyType_Type, &cls,
                                     &PyType_Type, &handle_type))
        return NULL;
    if (!PyType_IsSubtype(handle_type, &HandleType)) {
        PyErr_SetString(PyExc_TypeError, "Wrapper: handle_type must subclass HandleBase");
        return NULL;
    }
    PyObject *slot = PyDict_GetItemWithError(cls->tp_dict, s_handle_slot);  /* borrowed */
    if (slot == NULL || Py_TYPE(slot)->tp_descr_set == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "Wrapper: cls has no __lazyx_handle__ slot");
        return NULL;
    }
    WrapperObject *self = (WrapperObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = (vectorcallfunc)Wrapper_call;
    self->cls = (PyTypeObject *)Py_NewRef(cls);
    self->handle_type = (PyTypeObject *)Py_NewRef(handle_type);
    self->slot = Py_NewRef(slot);
    return (PyObject *)self;
}

static int Wrapper_traverse(WrapperObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->cls);
    Py_VISIT(self->handle_type);
    Py_VISIT(self->slot);
    return 0;
}

static int Wrapper_clear(WrapperObject *self) {
    Py_CLEAR(self->cls);
    Py_CLEAR(self->handle_type);
    Py_CLEAR(self->slot);
    return 0;
}

static void Wrapper_dealloc(WrapperObject *self) {
    PyObject_GC_UnTrack(self);
    Wrapper_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject WrapperType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazyx.core._native.Wrapper",
    .tp_doc = "Wrapper(cls, handle_type)(node): cls(node) for an array class whose __init__ "
              "only sets __lazyx_handle__ = handle_type(node).",
    .tp_basicsize = sizeof(WrapperObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(WrapperObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = Wrapper_new,
    .tp_traverse = (traverseproc)Wrapper_traverse,
    .tp_clear = (inquiry)Wrapper_clear,
    .tp_dealloc = (destructor)Wrapper_dealloc,
};

/* ---------------------------------------------------------------- CutCheck

runtime.maybe_cut, which every frontend op calls first: `ir.CREATED[0] > next_cut` of this
thread's state, and only then the cut itself (a Python function). As a Python function the
compare cost a frame per op, 2 % of NumPy's W4 step. */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *created;       /* ir.CREATED: [nodes made so far] */
    PyObject *thread_state;  /* runtime._thread: its next_cut, per thread */
    PyObject *cut;           /* () -> None: cut everything pending, cause "node_cap" */
} CutCheckObject;

static PyObject *CutCheck_call(CutCheckObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) || kwnames != NULL) {
        PyErr_SetString(PyExc_TypeError, "maybe_cut() takes no arguments");
        return NULL;
    }
    if (!PyList_Check(self->created) || PyList_GET_SIZE(self->created) != 1) {
        PyErr_SetString(PyExc_TypeError, "lazyx: CREATED is not [n]");
        return NULL;
    }
    PyObject *next = PyObject_GetAttr(self->thread_state, s_next_cut);
    if (next == NULL) return NULL;
    int due = PyObject_RichCompareBool(PyList_GET_ITEM(self->created, 0), next, Py_GT);
    Py_DECREF(next);
    if (due < 0) return NULL;
    if (due) return PyObject_CallNoArgs(self->cut);
    Py_RETURN_NONE;
}

static PyObject *CutCheck_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"created", "thread_state", "cut", NULL};
    PyObject *created, *thread_state, *cut;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!OO:CutCheck", names, &PyList_Type,
                                     &created, &thread_state, &cut))
        return NULL;
    CutCheckObject *self = (CutCheckObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = (vectorcallfunc)CutCheck_call;
    self->created = Py_NewRef(created);
    self->thread_state = Py_NewRef(thread_state);
    self->cut = Py_NewRef(cut);
    return (PyObject *)self;
}

static int CutCheck_traverse(CutCheckObject *self, visitproc visit, void *arg) {
    Py_VISIT(self->created);
    Py_VISIT(self->thread_state);
    Py_VISIT(self->cut);
    return 0;
}

static int CutCheck_clear(CutCheckObject *self) {
    Py_CLEAR(self->created);
    Py_CLEAR(self->thread_state);
    Py_CLEAR(self->cut);
    return 0;
}

static void CutCheck_dealloc(CutCheckObject *self) {
    PyObject_GC_UnTrack(self);
    CutCheck_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject CutCheckType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazyx.core._native.CutCheck",
    .tp_doc = "CutCheck(created, thread_state, cut): runtime.maybe_cut in C.",
    .tp_basicsize = sizeof(CutCheckObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(CutCheckObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = CutCheck_new,
    .tp_traverse = (traverseproc)CutCheck_traverse,
    .tp_clear = (inquiry)CutCheck_clear,
    .tp_dealloc = (destructor)CutCheck_dealloc,
};

/* Called by _native.c's module init: add LiveSet, HandleBase, Wrapper and CutCheck to `m`. */
int lazyx_live_init(PyObject *m) {
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_op, "op"}, {&s_data, "data"}, {&s_live, "live"}, {&s_add, "add"},
        {&s_thread_state, "_thread_state"}, {&s_next_cut, "next_cut"},
        {&s_handle_slot, "__lazyx_handle__"}};
    for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
        if ((*names[j].slot = PyUnicode_InternFromString(names[j].text)) == NULL) return -1;
    }
    if (PyType_Ready(&LiveSetType) < 0 || PyType_Ready(&HandleType) < 0 ||
            PyType_Ready(&CutCheckType) < 0 || PyType_Ready(&WrapperType) < 0)
        return -1;
    if (PyModule_AddObjectRef(m, "LiveSet", (PyObject *)&LiveSetType) < 0 ||
            PyModule_AddObjectRef(m, "HandleBase", (PyObject *)&HandleType) < 0 ||
            PyModule_AddObjectRef(m, "CutCheck", (PyObject *)&CutCheckType) < 0 ||
            PyModule_AddObjectRef(m, "Wrapper", (PyObject *)&WrapperType) < 0)
        return -1;
    return 0;
}
