/* lazyx.core._native, part 4: the torch frontend's dispatcher for plain float arithmetic.

`x + 1.0`, `x * y`, `torch.tanh(x)`, `w.t()`, `g.detach()` on float32/float64 lazy tensors
are most of what a model's elementwise and training code dispatches, and each went through
frontends/torch/tensor.py's general dispatcher: about 6.5 us of Python above torch's own
4.5 us per op. For exactly these calls the general path's result is known in advance --
torch's meta kernel gives the operand's dtype (a Python number never promotes a float
tensor), and the lowering is one builder applied to the operands' nodes (a number becoming a
splat param) -- so this C path builds the same node and the same LazyTensor directly.

`FastDispatch` is LazyTensor.__torch_dispatch__ (a classmethod). It takes the fast path only
for an op in its routes (`FAST_ROUTES`, registered beside each lowering, and only where no
value check or special handler exists), outside any lowering (depth 0) and outside
torch.compile's capture, with no keyword arguments, a LazyTensor first operand of a float
dtype, and a second operand (binary ops) that is a LazyTensor of the same shape and dtype, a
float, or an int of at most 2**53 in magnitude. A route's builder keeps the operand's dtype;
it may give None to decline operands it does not cover (`t` of a 3-d tensor, which torch
refuses). Everything else goes to the Python dispatcher, which stays the reference:
tests/frontends/torch/test_fast_dispatch.py checks both give the same graphs, values and
source lines.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>  /* offsetof */

int lazyx_op_line_enter(PyObject *op_line);  /* core/_native_lines.c */
int lazyx_op_line_exit(PyObject *op_line);

/* The objects a FastDispatch is given, in its constructor's order (tensor.use_fast_dispatch):
   slow          tensor.dispatch(func, args, kwargs): the general path
   tables        (VALUE_CHECKS, SPECIAL, LOWERINGS): they decide the routes
   refresh       () -> routes, made again when the tables' sizes change
   state         tensor._state: depth, capturing
   op_line       source.OP_LINE
   maybe_cut     runtime.maybe_cut
   lazy_type     LazyTensor
   handle_type   runtime.LazyHandle
   torch_dtypes  IR dtype -> torch dtype: the dtypes taken here
   param         ir.param(value, dtype, shape)
   hosts         ir._HOSTS: (number, dtype) -> its shared host scalar
   new_node      ir.new_node
   splat         ir._SPLAT: a splat param's attributes
   make_wrapper  torch.Tensor._make_wrapper_subclass
   globals       tensor.py's globals, for DEVICE (set once torch knows it)
   The struct, the GC's traversal and clearing and the constructor are made from this list. */
#define GIVEN_FIELDS(X) X(slow) X(tables) X(refresh) X(state) X(op_line) X(maybe_cut) \
    X(lazy_type) X(handle_type) X(torch_dtypes) X(param) X(hosts) X(new_node) X(splat) \
    X(make_wrapper) X(globals)

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
#define DECLARE_FIELD(name) PyObject *name;
    GIVEN_FIELDS(DECLARE_FIELD)
    PyObject *routes;        /* OpOverload -> (arity, builder) */
    Py_ssize_t size;         /* the tables' total size when the routes were made */
} FastObject;

static PyObject *s_depth, *s_capturing, *s_handle, *s_node, *s_dtype, *s_shape, *s_device,
    *s_param, *empty_tuple, *wrapper_kwnames;

#define MAX_EXACT_INT (1LL << 53)

/* The general dispatcher, as __torch_dispatch__ calls it: dispatch(func, args, kwargs or {}). */
static PyObject *slow(FastObject *self, PyObject *func, PyObject *args, PyObject *kwargs) {
    PyObject *empty = NULL, *result;
    if (kwargs == NULL || kwargs == Py_None) {
        if ((empty = PyDict_New()) == NULL) return NULL;
        kwargs = empty;
    }
    PyObject *call[3] = {func, args, kwargs};
    result = PyObject_Vectorcall(self->slow, call, 3, NULL);
    Py_XDECREF(empty);
    return result;
}

/* Whether attribute `name` of `obj` is true (-1: error). */
static int attr_true(PyObject *obj, PyObject *name) {
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL) return -1;
    int truth = PyObject_IsTrue(value);
    Py_DECREF(value);
    return truth;
}

/* A LazyTensor's node (new reference). */
static PyObject *node_of(PyObject *tensor) {
    PyObject *handle = PyObject_GetAttr(tensor, s_handle), *node;
    if (handle == NULL) return NULL;
    node = PyObject_GetAttr(handle, s_node);
    Py_DECREF(handle);
    return node;
}

/* A Python number the general path would make the same param of: a float, or an int that a
   float dtype holds exactly (bool is an int subclass: not exact, so it goes the general way). */
static int plain_number(PyObject *x) {
    if (PyFloat_CheckExact(x)) return 1;
    if (!PyLong_CheckExact(x)) return 0;
    int overflow;
    long long v = PyLong_AsLongLongAndOverflow(x, &overflow);
    if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    return !overflow && v <= MAX_EXACT_INT && v >= -MAX_EXACT_INT;
}

/* ir.param(y, dtype, shape): made here when the number's host scalar is already shared (what
   ir.param does then), else by ir.param itself. */
static PyObject *splat_param(FastObject *self, PyObject *y, PyObject *dtype, PyObject *shape) {
    PyObject *host = NULL;
    if (PyTuple_GET_SIZE(shape)) {
        PyObject *key = PyTuple_Pack(2, y, dtype);
        if (key == NULL) return NULL;
        host = PyDict_GetItemWithError(self->hosts, key);  /* borrowed */
        Py_DECREF(key);
        if (host == NULL && PyErr_Occurred()) return NULL;
    }
    if (host == NULL) {
        PyObject *param_args[3] = {y, dtype, shape};
        return PyObject_Vectorcall(self->param, param_args, 3, NULL);
    }
    PyObject *node_args[6] = {s_param, empty_tuple, self->splat, shape, dtype, host};
    return PyObject_Vectorcall(self->new_node, node_args, 6, NULL);
}

/* The fast path proper, once the call qualified: 0 with *out set, 1 when the route declined
   the operands (its builder gave None: nothing was made), or -1 with an error. */
static int build(FastObject *self, PyObject *builder, PyObject *xn, PyObject *y, PyObject *yn,
                 PyObject *shape, PyObject *dtype, PyObject *torch_dtype, PyObject **out) {
    PyObject *b = NULL, *node = NULL, *node_shape = NULL, *handle = NULL, *tensor = NULL, *cut;
    int status = -1;
    *out = NULL;
    if (lazyx_op_line_enter(self->op_line) < 0) return -1;
    /* as the general path does inside its op line: past the node cap, cut first */
    if ((cut = PyObject_CallNoArgs(self->maybe_cut)) == NULL) goto done;
    Py_DECREF(cut);
    if (y == NULL) {
        node = PyObject_CallOneArg(builder, xn);
    } else {
        if (yn != NULL) {
            b = Py_NewRef(yn);
        } else if ((b = splat_param(self, y, dtype, shape)) == NULL) {
            goto done;
        }
        PyObject *operands[2] = {xn, b};
        node = PyObject_Vectorcall(builder, operands, 2, NULL);
    }
    if (node == NULL) goto done;
    if (node == Py_None) {  /* the route declines these operands: the general path takes them */
        status = 1;
        goto done;
    }
    /* a route keeps its operand's dtype; its shape is the node's (a transpose's is not x's) */
    PyObject *got_dtype = PyObject_GetAttr(node, s_dtype);
    if (got_dtype == NULL) goto done;
    int same = PyObject_RichCompareBool(got_dtype, dtype, Py_EQ);
    Py_DECREF(got_dtype);
    if (same < 0) goto done;
    if (!same) {
        PyErr_Format(PyExc_AssertionError, "lazyx: the fast route of %R made a node of another "
                     "dtype than its operand's", builder);
        goto done;
    }
    if ((node_shape = PyObject_GetAttr(node, s_shape)) == NULL) goto done;
    if ((handle = PyObject_CallOneArg(self->handle_type, node)) == NULL) goto done;
    PyObject *device = PyDict_GetItemWithError(self->globals, s_device);
    if (device == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "lazyx: no DEVICE yet");
        goto done;
    }
    Py_INCREF(device);
    PyObject *wrapper_args[4] = {self->lazy_type, node_shape, torch_dtype, device};
    tensor = PyObject_Vectorcall(self->make_wrapper, wrapper_args, 2, wrapper_kwnames);
    Py_DECREF(device);
    if (tensor == NULL || PyObject_SetAttr(tensor, s_handle, handle) < 0) goto done;
    *out = Py_NewRef(tensor);
    status = 0;
done:
    Py_XDECREF(b); Py_XDECREF(node); Py_XDECREF(node_shape); Py_XDECREF(handle);
    Py_XDECREF(tensor);
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);  /* (the op's error, kept across the exit) */
    if (lazyx_op_line_exit(self->op_line) < 0 && status >= 0) {
        Py_CLEAR(*out);
        status = -1;
    }
    if (type != NULL) {
        if (status == -1 && PyErr_Occurred()) PyErr_Clear();
        PyErr_Restore(type, value, traceback);
    }
    return status;
}

/* __torch_dispatch__(cls, func, types, args=(), kwargs=None) */
static PyObject *fast_call(FastObject *self, PyObject *const *argv, size_t nargsf,
                           PyObject *kwnames) {
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL || nargs < 3 || nargs > 5) {
        PyErr_SetString(PyExc_TypeError, "__torch_dispatch__(cls, func, types, args=(), "
                        "kwargs=None) takes its arguments by position here");
        return NULL;
    }
    PyObject *func = argv[1];
    PyObject *args = nargs > 3 ? argv[3] : NULL, *kwargs = nargs > 4 ? argv[4] : NULL;
    PyObject *empty_args = NULL, *result = NULL;
    PyObject *xn = NULL, *yn = NULL, *shape = NULL, *dtype = NULL;
    if (args == NULL) {
        if ((empty_args = PyTuple_New(0)) == NULL) return NULL;
        args = empty_args;
    }
    if (!PyTuple_CheckExact(args) ||
            (kwargs != NULL && kwargs != Py_None && (!PyDict_Check(kwargs) || PyDict_GET_SIZE(kwargs))))
        goto general;
    /* a value check, special handler or lowering registered since (an aten module imported
       late, a test's stand-in) may take an op off its route: made again, as tensor._route is */
    Py_ssize_t size = 0;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(self->tables); j++)
        size += PyDict_GET_SIZE(PyTuple_GET_ITEM(self->tables, j));
    if (size != self->size) {
        PyObject *routes = PyObject_CallNoArgs(self->refresh);
        if (routes == NULL) goto done;
        if (!PyDict_Check(routes)) {
            Py_DECREF(routes);
            PyErr_SetString(PyExc_TypeError, "lazyx: refresh() must return a dict");
            goto done;
        }
        Py_SETREF(self->routes, routes);
        self->size = size;
    }
    PyObject *route = PyDict_GetItemWithError(self->routes, func);  /* borrowed */
    if (route == NULL) {
        if (PyErr_Occurred()) goto done;
        goto general;
    }
    Py_ssize_t arity = PyTuple_GET_SIZE(route) == 2 ?
        PyLong_AsSsize_t(PyTuple_GET_ITEM(route, 0)) : -1;
    if (arity < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "lazyx: a fast route is (arity, builder)");
        goto done;
    }
    if (PyTuple_GET_SIZE(args) != arity || (arity != 1 && arity != 2)) goto general;
    PyObject *x = PyTuple_GET_ITEM(args, 0), *y = arity == 2 ? PyTuple_GET_ITEM(args, 1) : NULL;
    if ((PyObject *)Py_TYPE(x) != self->lazy_type) goto general;
    int busy = attr_true(self->state, s_depth);  /* inside a lowering: raw, general */
    if (busy == 0) busy = attr_true(self->state, s_capturing);
    if (busy < 0) goto done;
    if (busy) goto general;
    if ((xn = node_of(x)) == NULL || (shape = PyObject_GetAttr(xn, s_shape)) == NULL ||
            (dtype = PyObject_GetAttr(xn, s_dtype)) == NULL)
        goto done;
    PyObject *torch_dtype = PyDict_GetItemWithError(self->torch_dtypes, dtype);  /* borrowed */
    if (torch_dtype == NULL) {
        if (PyErr_Occurred()) goto done;
        goto general;
    }
    if (y != NULL) {
        if ((PyObject *)Py_TYPE(y) == self->lazy_type) {
            if ((yn = node_of(y)) == NULL) goto done;
            PyObject *y_shape = PyObject_GetAttr(yn, s_shape), *y_dtype;
            if (y_shape == NULL) goto done;
            y_dtype = PyObject_GetAttr(yn, s_dtype);
            int same = y_dtype == NULL ? -1 : PyObject_RichCompareBool(y_shape, shape, Py_EQ);
            if (same == 1) same = PyObject_RichCompareBool(y_dtype, dtype, Py_EQ);
            Py_DECREF(y_shape);
            Py_XDECREF(y_dtype);
            if (same < 0) goto done;
            if (!same) goto general;
        } else if (!plain_number(y)) {
            goto general;
        }
    }
    Py_INCREF(route);  /* (a cut inside may run code that remakes the routes) */
    int built = build(self, PyTuple_GET_ITEM(route, 1), xn, y, yn, shape, dtype, torch_dtype,
                      &result);
    Py_DECREF(route);
    if (built != 1) goto done;
general:
    result = slow(self, func, args, kwargs);
done:
    Py_XDECREF(empty_args); Py_XDECREF(xn); Py_XDECREF(yn); Py_XDECREF(shape);
    Py_XDECREF(dtype);
    return result;
}

static PyObject *Fast_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
#define NAME_OF(name) #name,
    static char *names[] = {GIVEN_FIELDS(NAME_OF) NULL};
#define ONE(name) + 1
    PyObject *v[0 GIVEN_FIELDS(ONE)];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!OOOOO!OO!OO!OOOO!:FastDispatch", names,
            &v[0], &PyTuple_Type, &v[1], &v[2], &v[3], &v[4], &v[5], &PyType_Type, &v[6],
            &v[7], &PyDict_Type, &v[8], &v[9], &PyDict_Type, &v[10], &v[11], &v[12], &v[13],
            &PyDict_Type, &v[14]))
        return NULL;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(v[1]); j++) {
        if (!PyDict_Check(PyTuple_GET_ITEM(v[1], j))) {
            PyErr_SetString(PyExc_TypeError, "FastDispatch: tables must be dicts");
            return NULL;
        }
    }
    FastObject *self = (FastObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = (vectorcallfunc)fast_call;
    int j = 0;
#define TAKE_FIELD(name) self->name = Py_NewRef(v[j++]);
    GIVEN_FIELDS(TAKE_FIELD)
    self->routes = PyDict_New();  /* made at the first call: size -1 never matches */
    self->size = -1;
    if (self->routes == NULL) { Py_DECREF(self); return NULL; }
    return (PyObject *)self;
}

static int Fast_traverse(FastObject *self, visitproc visit, void *arg) {
#define VISIT_FIELD(name) Py_VISIT(self->name);
    GIVEN_FIELDS(VISIT_FIELD)
    Py_VISIT(self->routes);
    return 0;
}

static int Fast_clear(FastObject *self) {
#define CLEAR_FIELD(name) Py_CLEAR(self->name);
    GIVEN_FIELDS(CLEAR_FIELD)
    Py_CLEAR(self->routes);
    return 0;
}

static void Fast_dealloc(FastObject *self) {
    PyObject_GC_UnTrack(self);
    Fast_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject FastType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazyx.core._native.FastDispatch",
    .tp_doc = "FastDispatch(...): LazyTensor.__torch_dispatch__ with a C path for plain float "
              "arithmetic (frontends/torch/_native_dispatch.c).",
    .tp_basicsize = sizeof(FastObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(FastObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_new = Fast_new,
    .tp_traverse = (traverseproc)Fast_traverse,
    .tp_clear = (inquiry)Fast_clear,
    .tp_dealloc = (destructor)Fast_dealloc,
};

int lazyx_dispatch_init(PyObject *m) {
    if (PyType_Ready(&FastType) < 0) return -1;
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_depth, "depth"}, {&s_capturing, "capturing"}, {&s_handle, "_lazyx_handle"},
        {&s_node, "node"}, {&s_dtype, "dtype"}, {&s_shape, "shape"}, {&s_device, "DEVICE"},
        {&s_param, "param"}};
    for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
        if ((*names[j].slot = PyUnicode_InternFromString(names[j].text)) == NULL) return -1;
    }
    if ((wrapper_kwnames = Py_BuildValue("(ss)", "dtype", "device")) == NULL ||
            (empty_tuple = PyTuple_New(0)) == NULL)
        return -1;
    return PyModule_AddObjectRef(m, "FastDispatch", (PyObject *)&FastType);
}
