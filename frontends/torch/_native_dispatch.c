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
#include <math.h>    /* signbit, isnan */
#include <stddef.h>  /* offsetof */

int lazyx_op_line_enter(PyObject *op_line);  /* core/_native_lines.c */
PyObject *lazyx_new_handle(PyObject *handle_type, PyObject *node);  /* core/_native_live.c */
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
   recording     core/capture.py's _active ([n]): n > 0 while some thread traces a lazyx.compile
                 step, whose hooks on ir.param must see every number: then Python only
   recipes       frontends/torch/recipes.py's RECIPES: key -> recipe (or None: not stampable)
   generation    ir.LOCALS_GENERATION ([n]): recipes hold interned entries of generation n
   simple_types  the non-builtin argument types a recipe key takes by value (torch.dtype, ...)
   default_dtype torch.get_default_dtype: a float number's param dtype, so part of every key
   created       ir.CREATED ([n]): a node-cap cut before a stamp gives its operands new nodes
   readers       tensor.READY_READS: op -> reader(x), a read of one computed value (x.item())
                 answered before any route or recipe; None from it: the general path
   The struct, the GC's traversal and clearing and the constructor are made from this list. */
#define GIVEN_FIELDS(X) X(slow) X(tables) X(refresh) X(state) X(op_line) X(maybe_cut) \
    X(lazy_type) X(handle_type) X(torch_dtypes) X(param) X(hosts) X(new_node) X(splat) \
    X(make_wrapper) X(globals) X(recording) X(recipes) X(generation) X(simple_types) \
    X(default_dtype) X(created) X(readers)

#define ROUTE_SLOTS 64

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
#define DECLARE_FIELD(name) PyObject *name;
    GIVEN_FIELDS(DECLARE_FIELD)
    PyObject *routes;        /* OpOverload -> (arity, builder) */
    /* routes' lookups by the op's address: an OpOverload's hash is a Python method, 0.1 us
       of every call. Each slot holds its op (so the address stays its own) and its route,
       or NULL for an op off the routes; emptied whenever the routes are made again. */
    struct { PyObject *func, *route; } route_slots[ROUTE_SLOTS];
    Py_ssize_t size;         /* the tables' total size when the routes were made */
    PyObject *recipes_generation;  /* LOCALS_GENERATION[0] when the recipes were checked */
    /* (shape, dtype) -> a splat param's interned entry (local, stable hash, op key), so that
       new_node need not intern the same structure again for every number (0.2 us of an
       `x * 0.5`); of the interning generation params_generation, as the recipes are */
    PyObject *param_entries, *params_generation;
} FastObject;

static PyObject *s_depth, *s_capturing, *s_handle, *s_node, *s_dtype, *s_shape, *s_device,
    *s_param, *s_local, *s_inputs, *s_order, *s_hash, *s_neg_zero, *empty_tuple, *wrapper_kwnames,
    *long_zero;

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

/* Empty `table`, a table of interned entries, if the interning generation changed since
   `*seen` (ir.LOCALS_GENERATION: an emptied interning table's entries must not be given
   again); *seen becomes the current one. 1: the table was current, 0: it is emptied now,
   -1: an error. */
static int follow_generation(FastObject *self, PyObject **seen, PyObject *table) {
    PyObject *generation = PyList_Check(self->generation) && PyList_GET_SIZE(self->generation) ?
        PyList_GET_ITEM(self->generation, 0) : NULL;
    if (generation == NULL) {
        PyErr_SetString(PyExc_TypeError, "lazyx: LOCALS_GENERATION is not [n]");
        return -1;
    }
    if (generation == *seen) return 1;  /* (an int object per change) */
    int same = *seen == NULL ? 0 : PyObject_RichCompareBool(generation, *seen, Py_EQ);
    if (same < 0) return -1;
    Py_XSETREF(*seen, Py_NewRef(generation));
    if (!same) PyDict_Clear(table);
    return same;
}

/* self->param_entries (borrowed), of the current interning generation; NULL with an error. */
static PyObject *param_entries(FastObject *self) {
    if (follow_generation(self, &self->params_generation, self->param_entries) < 0) return NULL;
    return self->param_entries;
}

/* ir.param(y, dtype, shape): made here when the number's host scalar is already shared (what
   ir.param does then), else by ir.param itself. */
static PyObject *splat_param(FastObject *self, PyObject *y, PyObject *dtype, PyObject *shape) {
    PyObject *host = NULL;
    /* -0.0 == 0.0 as a key: ir.param keeps negative zero's host apart, so it decides */
    int negative_zero = PyFloat_CheckExact(y) && PyFloat_AS_DOUBLE(y) == 0.0 &&
        signbit(PyFloat_AS_DOUBLE(y));
    if (PyTuple_GET_SIZE(shape) && !negative_zero) {
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
    PyObject *entries = param_entries(self), *key, *entry, *node;
    if (entries == NULL) return NULL;
    if ((key = PyTuple_Pack(2, shape, dtype)) == NULL) return NULL;
    entry = PyDict_GetItemWithError(entries, key);  /* borrowed */
    if (entry == NULL && PyErr_Occurred()) { Py_DECREF(key); return NULL; }
    /* (source False: the user's line, as new_node finds it when not given) */
    PyObject *node_args[9] = {s_param, empty_tuple, self->splat, shape, dtype, host, long_zero,
                              Py_False, entry};
    node = PyObject_Vectorcall(self->new_node, node_args, entry != NULL ? 9 : 6, NULL);
    if (node != NULL && entry == NULL) {  /* a leaf's entry: its local id, hash and order */
        PyObject *local = PyObject_GetAttr(node, s_local), *hash = PyObject_GetAttr(node, s_hash),
            *order = PyObject_GetAttr(node, s_order);
        entry = local && hash && order ? PyTuple_Pack(3, local, hash, order) : NULL;
        Py_XDECREF(local); Py_XDECREF(hash); Py_XDECREF(order);
        if (entry == NULL || PyDict_SetItem(entries, key, entry) < 0) Py_CLEAR(node);
        Py_XDECREF(entry);
    }
    Py_DECREF(key);
    return node;
}

/* A new LazyTensor of `node` (tensor.from_node), or NULL with an error. */
static PyObject *wrap(FastObject *self, PyObject *node, PyObject *torch_dtype) {
    PyObject *node_shape = NULL, *handle = NULL, *tensor = NULL, *device;
    if ((node_shape = PyObject_GetAttr(node, s_shape)) == NULL) return NULL;
    if ((handle = lazyx_new_handle(self->handle_type, node)) == NULL) goto done;
    if ((device = PyDict_GetItemWithError(self->globals, s_device)) == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "lazyx: no DEVICE yet");
        goto done;
    }
    Py_INCREF(device);
    PyObject *wrapper_args[4] = {self->lazy_type, node_shape, torch_dtype, device};
    tensor = PyObject_Vectorcall(self->make_wrapper, wrapper_args, 2, wrapper_kwnames);
    Py_DECREF(device);
    if (tensor != NULL && PyObject_SetAttr(tensor, s_handle, handle) < 0) Py_CLEAR(tensor);
done:
    Py_XDECREF(node_shape); Py_XDECREF(handle);
    return tensor;
}

/* What the general path does around every user op: enter its op line, then (past the node
   cap) cut first. 0, or -1 with an error and the line left again. */
static int op_begin(FastObject *self) {
    if (lazyx_op_line_enter(self->op_line) < 0) return -1;
    PyObject *cut = PyObject_CallNoArgs(self->maybe_cut);  /* C too: runtime's CutCheck */
    if (cut != NULL) {
        Py_DECREF(cut);
        return 0;
    }
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (lazyx_op_line_exit(self->op_line) < 0) PyErr_Clear();
    PyErr_Restore(type, value, traceback);
    return -1;
}

/* Leave the op line; `status` -1 keeps the op's error, which outranks the exit's. */
static int op_end(FastObject *self, int status, PyObject **out) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
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

/* A routed call, once it qualified: 0 with *out set, 1 when the route declined the operands
   (its builder gave None: nothing was made), or -1 with an error. The operands' nodes are read
   after the node cap's cut, which gives them new ones. */
static int build(FastObject *self, PyObject *builder, PyObject *x, PyObject *y,
                 PyObject *shape, PyObject *dtype, PyObject *torch_dtype, PyObject **out) {
    PyObject *xn = NULL, *b = NULL, *node = NULL;
    int status = -1;
    *out = NULL;
    if (op_begin(self) < 0) return -1;
    if ((xn = node_of(x)) == NULL) goto done;
    if (y == NULL) {
        node = PyObject_CallOneArg(builder, xn);
    } else {
        if ((PyObject *)Py_TYPE(y) == self->lazy_type) {
            if ((b = node_of(y)) == NULL) goto done;
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
    if ((*out = wrap(self, node, torch_dtype)) == NULL) goto done;
    status = 0;
done:
    Py_XDECREF(xn); Py_XDECREF(b); Py_XDECREF(node);
    return op_end(self, status, out);
}

/* ---------------------------------------------------------------- recipes

A call off the routes whose signature was lowered before is stamped from that lowering's
recipe (frontends/torch/recipes.py records them): the nodes it made, each named by op,
attributes, types and interned entry, with inputs that are the call's operand nodes or
earlier nodes of the recipe. The key holds everything the lowering and torch's meta kernel
could read of the call: the op, torch's default dtype, every argument by value, and each
lazy operand's interned structure (op, attributes, shape, dtype) with its first input's --
what ops.SIMPLIFY looks at -- and which earlier operand it repeats. */

#define NOT_SIMPLE 1  /* key_item: an argument no key can hold (a CPU tensor, a callable) */

/* One argument's part of a key (new reference); its lazy operands' nodes go to `nodes`. NULL
   with *why == NOT_SIMPLE and no error, or NULL with an error. */
static PyObject *key_item(FastObject *self, PyObject *x, PyObject *nodes, int depth, int *why) {
    PyTypeObject *t = Py_TYPE(x);
    if ((PyObject *)t == self->lazy_type) {
        PyObject *node = node_of(x), *local = NULL, *inputs = NULL, *below = NULL, *item = NULL;
        if (node == NULL) return NULL;
        Py_ssize_t n = PyList_GET_SIZE(nodes), first = n;
        for (Py_ssize_t j = 0; j < n; j++) {
            if (PyList_GET_ITEM(nodes, j) == node) { first = j; break; }
        }
        if (PyList_Append(nodes, node) < 0) goto lazy_done;
        if ((local = PyObject_GetAttr(node, s_local)) == NULL ||
                (inputs = PyObject_GetAttr(node, s_inputs)) == NULL)
            goto lazy_done;
        if (!PyTuple_Check(inputs)) {
            PyErr_SetString(PyExc_TypeError, "lazyx: node inputs must be a tuple");
            goto lazy_done;
        }
        below = PyTuple_GET_SIZE(inputs) ?
            PyObject_GetAttr(PyTuple_GET_ITEM(inputs, 0), s_local) : Py_NewRef(Py_None);
        if (below != NULL) item = Py_BuildValue("(OOn)", local, below, first);
    lazy_done:
        Py_DECREF(node); Py_XDECREF(local); Py_XDECREF(inputs); Py_XDECREF(below);
        return item;
    }
    if (x == Py_None) return Py_NewRef(Py_None);
    if (t == &PyFloat_Type) {  /* (-0.0 == 0.0, yet its param differs) */
        double v = PyFloat_AS_DOUBLE(x);
        if (isnan(v)) {  /* (nan != nan: no key would ever be found again) */
            *why = NOT_SIMPLE;
            return NULL;
        }
        return PyTuple_Pack(2, (PyObject *)t, v == 0.0 && signbit(v) ? s_neg_zero : x);
    }
    if (t == &PyLong_Type || t == &PyBool_Type || t == &PyUnicode_Type)
        return PyTuple_Pack(2, (PyObject *)t, x);  /* (1, 1.0 and True promote differently) */
    if ((t == &PyTuple_Type || t == &PyList_Type) && depth == 0) {  /* sizes, dims, tensors */
        Py_ssize_t n = PySequence_Fast_GET_SIZE(x);
        PyObject **items = PySequence_Fast_ITEMS(x);
        PyObject *key = PyTuple_New(n + 1);
        if (key == NULL) return NULL;
        PyTuple_SET_ITEM(key, 0, Py_NewRef((PyObject *)t));
        for (Py_ssize_t j = 0; j < n; j++) {
            PyObject *part = key_item(self, items[j], nodes, depth + 1, why);
            if (part == NULL) { Py_DECREF(key); return NULL; }
            PyTuple_SET_ITEM(key, j + 1, part);
        }
        return key;
    }
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(self->simple_types); j++) {
        if ((PyObject *)t == PyTuple_GET_ITEM(self->simple_types, j))
            return PyTuple_Pack(2, (PyObject *)t, x);
    }
    *why = NOT_SIMPLE;
    return NULL;
}

/* A call's recipe key and its lazy operands' nodes (new references), or NULL: with an error,
   or (*why == NOT_SIMPLE) for a call no key can hold. */
static PyObject *recipe_key(FastObject *self, PyObject *func, PyObject *args, PyObject *kwargs,
                            PyObject **nodes, int *why) {
    Py_ssize_t n = PyTuple_GET_SIZE(args), nkw = kwargs ? PyDict_GET_SIZE(kwargs) : 0;
    PyObject *key = NULL, *default_dtype = NULL;
    *why = 0;
    if ((*nodes = PyList_New(0)) == NULL) return NULL;
    if ((default_dtype = PyObject_CallNoArgs(self->default_dtype)) == NULL) goto fail;
    if ((key = PyTuple_New(2 + n + nkw)) == NULL) goto fail;
    PyTuple_SET_ITEM(key, 0, Py_NewRef(func));
    PyTuple_SET_ITEM(key, 1, default_dtype);
    default_dtype = NULL;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *part = key_item(self, PyTuple_GET_ITEM(args, j), *nodes, 0, why);
        if (part == NULL) goto fail;
        PyTuple_SET_ITEM(key, 2 + j, part);
    }
    Py_ssize_t pos = 0, j = 2 + n;
    PyObject *name, *value;
    while (nkw && PyDict_Next(kwargs, &pos, &name, &value)) {
        PyObject *part = key_item(self, value, *nodes, 0, why), *pair;
        if (part == NULL) goto fail;
        pair = PyTuple_Pack(2, name, part);
        Py_DECREF(part);
        if (pair == NULL) goto fail;
        PyTuple_SET_ITEM(key, j++, pair);
    }
    if (PyList_GET_SIZE(*nodes) == 0) {  /* a factory: the general path makes it */
        *why = NOT_SIMPLE;
        goto fail;
    }
    return key;
fail:
    Py_XDECREF(key); Py_XDECREF(default_dtype); Py_CLEAR(*nodes);
    return NULL;
}

/* A node of the recipe: a call operand (ref -k-1), an earlier made node (ref j), or operand
   k's first input (ref (k,): a simplifier looked through the operand, as the key records).
   Borrowed, or NULL with an error. */
static PyObject *ref_node(PyObject *ref, PyObject *nodes, PyObject **made, Py_ssize_t count) {
    if (PyTuple_Check(ref) && PyTuple_GET_SIZE(ref) == 1) {
        Py_ssize_t k = PyLong_AsSsize_t(PyTuple_GET_ITEM(ref, 0));
        if (k == -1 && PyErr_Occurred()) return NULL;
        if (k >= 0 && k < PyList_GET_SIZE(nodes)) {
            PyObject *inputs = PyObject_GetAttr(PyList_GET_ITEM(nodes, k), s_inputs), *below;
            if (inputs == NULL) return NULL;
            /* (borrowed: the operand's inputs tuple, which the operand keeps, holds it) */
            below = PyTuple_Check(inputs) && PyTuple_GET_SIZE(inputs) ?
                PyTuple_GET_ITEM(inputs, 0) : NULL;
            Py_DECREF(inputs);
            if (below != NULL) return below;
        }
        PyErr_SetString(PyExc_ValueError, "lazyx: a recipe names an operand input it lacks");
        return NULL;
    }
    Py_ssize_t r = PyLong_AsSsize_t(ref);
    if (r == -1 && PyErr_Occurred()) return NULL;
    if (r < 0 && -r - 1 < PyList_GET_SIZE(nodes)) return PyList_GET_ITEM(nodes, -r - 1);
    if (r >= 0 && r < count) return made[r];
    PyErr_SetString(PyExc_ValueError, "lazyx: a recipe names a node it does not have");
    return NULL;
}

/* Stamp `recipe` = (entries, outputs, form) on the operands' `nodes`: 0 with *out set, 1 when
   the node cap cut first (the operands have new nodes, which the key did not see: nothing was
   made, and the general path takes the call), or -1 with an error.
   entry  (op, refs, attrs, shape, dtype, value, interned entry, commutative)
   output (ref, torch dtype), or None where the lowering gave None
   form   0: one tensor; 1: a tuple of outputs; 2: a list of them */
static int stamp(FastObject *self, PyObject *recipe, PyObject *nodes, PyObject *check,
                 PyObject *func, PyObject *args, PyObject *kwargs, PyObject **out) {
    PyObject *entries, *outputs, **made = NULL, *result = NULL;
    Py_ssize_t count = 0, form;
    int status = -1;
    *out = NULL;
    if (!PyTuple_Check(recipe) || PyTuple_GET_SIZE(recipe) != 3 ||
            !PyTuple_Check(entries = PyTuple_GET_ITEM(recipe, 0)) ||
            !PyTuple_Check(outputs = PyTuple_GET_ITEM(recipe, 1)) ||
            ((form = PyLong_AsSsize_t(PyTuple_GET_ITEM(recipe, 2))) == -1 && PyErr_Occurred())) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "lazyx: a malformed recipe");
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(entries);
    if (n && (made = PyMem_Calloc(n, sizeof(PyObject *))) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_INCREF(recipe);  /* (a cut below may run code that empties the recipes) */
    PyObject *created = PyList_Check(self->created) && PyList_GET_SIZE(self->created) ?
        Py_NewRef(PyList_GET_ITEM(self->created, 0)) : NULL;
    if (created == NULL) {
        PyErr_SetString(PyExc_TypeError, "lazyx: CREATED is not [n]");
        goto free;
    }
    int begun = op_begin(self);
    int cut = begun == 0 && PyList_GET_ITEM(self->created, 0) != created;
    Py_DECREF(created);
    if (begun < 0) goto free;
    if (cut) {
        status = 1;
        goto done;
    }
    if (check != NULL) {  /* the op's value check (bounds.py), as the general path runs it */
        PyObject *empty = kwargs == NULL ? PyDict_New() : NULL, *checked;
        if (kwargs == NULL && empty == NULL) goto done;
        PyObject *call[3] = {func, args, kwargs == NULL ? empty : kwargs};
        checked = PyObject_Vectorcall(check, call, 3, NULL);
        Py_XDECREF(empty);
        if (checked == NULL) goto done;
        Py_DECREF(checked);
    }
    for (; count < n; count++) {
        PyObject *e = PyTuple_GET_ITEM(entries, count), *refs, *inputs;
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) != 8 ||
                !PyTuple_Check(refs = PyTuple_GET_ITEM(e, 1))) {
            PyErr_SetString(PyExc_TypeError, "lazyx: a malformed recipe entry");
            goto done;
        }
        Py_ssize_t k = PyTuple_GET_SIZE(refs);
        if ((inputs = PyTuple_New(k)) == NULL) goto done;
        for (Py_ssize_t i = 0; i < k; i++) {
            PyObject *input = ref_node(PyTuple_GET_ITEM(refs, i), nodes, made, count);
            if (input == NULL) { Py_DECREF(inputs); goto done; }
            PyTuple_SET_ITEM(inputs, i, Py_NewRef(input));
        }
        /* a commutative op's operands in ops.primitive's canonical order */
        if (k >= 2 && PyObject_IsTrue(PyTuple_GET_ITEM(e, 7))) {
            PyObject *a = PyObject_GetAttr(PyTuple_GET_ITEM(inputs, 0), s_order), *b = NULL;
            int swap = a == NULL ? -1 : 0;
            if (a != NULL && (b = PyObject_GetAttr(PyTuple_GET_ITEM(inputs, 1), s_order)) != NULL)
                swap = PyObject_RichCompareBool(a, b, Py_GT);
            else
                swap = -1;
            Py_XDECREF(a); Py_XDECREF(b);
            if (swap < 0) { Py_DECREF(inputs); goto done; }
            if (swap) {
                PyObject *first = PyTuple_GET_ITEM(inputs, 0);
                PyTuple_SET_ITEM(inputs, 0, PyTuple_GET_ITEM(inputs, 1));
                PyTuple_SET_ITEM(inputs, 1, first);
            }
        }
        PyObject *call[9] = {PyTuple_GET_ITEM(e, 0), inputs, PyTuple_GET_ITEM(e, 2),
                             PyTuple_GET_ITEM(e, 3), PyTuple_GET_ITEM(e, 4),
                             PyTuple_GET_ITEM(e, 5), long_zero, Py_True, PyTuple_GET_ITEM(e, 6)};
        made[count] = PyObject_Vectorcall(self->new_node, call, 9, NULL);
        Py_DECREF(inputs);
        if (made[count] == NULL) goto done;
    }
    Py_ssize_t m = PyTuple_GET_SIZE(outputs);
    if (form == 0 && m != 1) {
        PyErr_SetString(PyExc_TypeError, "lazyx: a one-tensor recipe with several outputs");
        goto done;
    }
    if ((result = PyTuple_New(m)) == NULL) goto done;
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *o = PyTuple_GET_ITEM(outputs, i), *tensor, *node;
        if (o == Py_None) {
            PyTuple_SET_ITEM(result, i, Py_NewRef(Py_None));
            continue;
        }
        if (!PyTuple_Check(o) || PyTuple_GET_SIZE(o) != 2) {
            PyErr_SetString(PyExc_TypeError, "lazyx: a malformed recipe output");
            goto done;
        }
        if ((node = ref_node(PyTuple_GET_ITEM(o, 0), nodes, made, count)) == NULL ||
                (tensor = wrap(self, node, PyTuple_GET_ITEM(o, 1))) == NULL)
            goto done;
        PyTuple_SET_ITEM(result, i, tensor);
    }
    if (form == 0) {
        *out = Py_NewRef(PyTuple_GET_ITEM(result, 0));
    } else if (form == 2) {
        *out = PySequence_List(result);
        if (*out == NULL) goto done;
    } else {
        *out = Py_NewRef(result);
    }
    status = 0;
done:
    status = op_end(self, status, out);
free:
    for (Py_ssize_t i = 0; i < count; i++) Py_XDECREF(made[i]);
    PyMem_Free(made);
    Py_XDECREF(result);
    Py_DECREF(recipe);
    return status;
}

/* The recipe for this call (borrowed), or NULL: none (no error), or an error. */
static PyObject *find_recipe(FastObject *self, PyObject *func, PyObject *args,
                             PyObject *kwargs, PyObject **nodes) {
    *nodes = NULL;
    if (!PyDict_GET_SIZE(self->recipes)) return NULL;
    /* interned entries of an emptied table must not be stamped again (ir.LOCALS_GENERATION) */
    int current = follow_generation(self, &self->recipes_generation, self->recipes);
    if (current <= 0) return NULL;  /* (emptied: no recipe, no error) */
    int why;
    PyObject *key = recipe_key(self, func, args, kwargs, nodes, &why);
    if (key == NULL) return NULL;
    PyObject *recipe = PyDict_GetItemWithError(self->recipes, key);  /* borrowed */
    Py_DECREF(key);
    if (recipe == Py_None) recipe = NULL;  /* recorded as not stampable */
    if (recipe == NULL) Py_CLEAR(*nodes);
    return recipe;
}

/* FastDispatch.recipe_key(func, args, kwargs): (key, operand nodes), or None for a call no
   key holds -- what recipes.py records under, made by the code that looks it up. */
static PyObject *Fast_recipe_key(FastObject *self, PyObject *const *argv, Py_ssize_t nargs) {
    if (nargs != 3 || !PyTuple_Check(argv[1]) || !PyDict_Check(argv[2])) {
        PyErr_SetString(PyExc_TypeError, "recipe_key(func, args: tuple, kwargs: dict)");
        return NULL;
    }
    PyObject *nodes;
    int why;
    PyObject *key = recipe_key(self, argv[0], argv[1], argv[2], &nodes, &why);
    if (key == NULL) {
        if (PyErr_Occurred()) return NULL;
        Py_RETURN_NONE;
    }
    PyObject *pair = PyTuple_Pack(2, key, nodes);
    Py_DECREF(key);
    Py_DECREF(nodes);
    return pair;
}

static void forget_routes(FastObject *self) {
    for (int j = 0; j < ROUTE_SLOTS; j++) {
        Py_CLEAR(self->route_slots[j].func);
        Py_CLEAR(self->route_slots[j].route);
    }
}

/* func's route (borrowed), or NULL: off the routes (*error 0) or an error (*error 1). */
static PyObject *route_of(FastObject *self, PyObject *func, int *error) {
    size_t j = ((size_t)func >> 4) % ROUTE_SLOTS;
    *error = 0;
    if (self->route_slots[j].func == func) return self->route_slots[j].route;
    PyObject *route = PyDict_GetItemWithError(self->routes, func);
    if (route == NULL && PyErr_Occurred()) {
        *error = 1;
        return NULL;
    }
    Py_XSETREF(self->route_slots[j].route, Py_XNewRef(route));
    Py_XSETREF(self->route_slots[j].func, Py_NewRef(func));
    return route;
}

/* Whether this call must take the general path whatever its op: inside a lowering (depth >
   0: raw tensors), during torch.compile's capture, or while lazyx.compile traces (its hooks
   link every number param to the step's arguments). 1, 0, or -1 with an error. */
static int busy(FastObject *self) {
    PyObject *active = PyList_Check(self->recording) && PyList_GET_SIZE(self->recording) ?
        PyList_GET_ITEM(self->recording, 0) : NULL;
    if (active == NULL) {
        PyErr_SetString(PyExc_TypeError, "lazyx: capture._active is not [n]");
        return -1;
    }
    int tracing = PyObject_IsTrue(active);
    if (tracing != 0) return tracing;
    int inside = attr_true(self->state, s_depth);
    if (inside == 0) inside = attr_true(self->state, s_capturing);
    return inside;
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
    PyObject *empty_args = NULL, *result = NULL, *xn = NULL, *shape = NULL, *dtype = NULL;
    PyObject *nodes = NULL;
    if (args == NULL) {
        if ((empty_args = PyTuple_New(0)) == NULL) return NULL;
        args = empty_args;
    }
    if (kwargs == Py_None) kwargs = NULL;
    if (!PyTuple_CheckExact(args) || (kwargs != NULL && !PyDict_Check(kwargs))) goto general;
    /* a value check, special handler or lowering registered since (an aten module imported
       late, a test's stand-in) may take an op off its route: made again, as tensor._route is;
       and a recipe recorded under the old tables may no longer be the op's lowering */
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
        forget_routes(self);
        PyDict_Clear(self->recipes);
        self->size = size;
    }
    int taken = busy(self);
    if (taken < 0) goto done;
    if (taken) goto general;
    PyObject *reader = PyDict_GetItemWithError(self->readers, func);  /* borrowed */
    if (reader != NULL) {  /* x.item(): answered here when its value is computed */
        if (PyTuple_GET_SIZE(args) != 1 || (kwargs != NULL && PyDict_GET_SIZE(kwargs)))
            goto general;
        PyObject *value = PyObject_CallOneArg(reader, PyTuple_GET_ITEM(args, 0));
        if (value == NULL) goto done;
        if (value != Py_None) {
            result = value;
            goto done;
        }
        Py_DECREF(value);
        goto general;
    }
    if (PyErr_Occurred()) goto done;
    int error;
    PyObject *route = route_of(self, func, &error);  /* borrowed */
    if (route == NULL) {
        if (error) goto done;
        goto recipe;
    }
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) goto recipe;
    Py_ssize_t arity = PyTuple_GET_SIZE(route) == 2 ?
        PyLong_AsSsize_t(PyTuple_GET_ITEM(route, 0)) : -1;
    if (arity < 0) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "lazyx: a fast route is (arity, builder)");
        goto done;
    }
    if (PyTuple_GET_SIZE(args) != arity || (arity != 1 && arity != 2)) goto recipe;
    PyObject *x = PyTuple_GET_ITEM(args, 0), *y = arity == 2 ? PyTuple_GET_ITEM(args, 1) : NULL;
    if ((PyObject *)Py_TYPE(x) != self->lazy_type) goto recipe;
    if ((xn = node_of(x)) == NULL || (shape = PyObject_GetAttr(xn, s_shape)) == NULL ||
            (dtype = PyObject_GetAttr(xn, s_dtype)) == NULL)
        goto done;
    PyObject *torch_dtype = PyDict_GetItemWithError(self->torch_dtypes, dtype);  /* borrowed */
    if (torch_dtype == NULL) {
        if (PyErr_Occurred()) goto done;
        goto recipe;
    }
    if (y != NULL) {
        if ((PyObject *)Py_TYPE(y) == self->lazy_type) {
            PyObject *yn = node_of(y), *y_shape = NULL, *y_dtype = NULL;
            int same = -1;
            if (yn != NULL && (y_shape = PyObject_GetAttr(yn, s_shape)) != NULL &&
                    (y_dtype = PyObject_GetAttr(yn, s_dtype)) != NULL) {
                same = PyObject_RichCompareBool(y_shape, shape, Py_EQ);
                if (same == 1) same = PyObject_RichCompareBool(y_dtype, dtype, Py_EQ);
            }
            Py_XDECREF(yn); Py_XDECREF(y_shape); Py_XDECREF(y_dtype);
            if (same < 0) goto done;
            if (!same) goto recipe;
        } else if (!plain_number(y)) {
            goto recipe;
        }
    }
    Py_INCREF(route);  /* (a cut inside may run code that remakes the routes) */
    int built = build(self, PyTuple_GET_ITEM(route, 1), x, y, shape, dtype, torch_dtype,
                      &result);
    Py_DECREF(route);
    if (built != 1) goto done;
recipe:  /* off the routes: a call lowered before is stamped from its recipe */
    {
        PyObject *recipe = find_recipe(self, func, args, kwargs, &nodes), *check = NULL;
        if (recipe != NULL) {
            check = PyDict_GetItemWithError(PyTuple_GET_ITEM(self->tables, 0), func);
            if (check == NULL && PyErr_Occurred()) goto done;
            if (stamp(self, recipe, nodes, check, func, args, kwargs, &result) != 1) goto done;
        } else if (PyErr_Occurred()) {
            goto done;
        }
    }
general:
    result = slow(self, func, args, kwargs);
done:
    Py_XDECREF(empty_args); Py_XDECREF(xn); Py_XDECREF(shape); Py_XDECREF(dtype);
    Py_XDECREF(nodes);
    return result;
}

static PyObject *Fast_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
#define NAME_OF(name) #name,
    static char *names[] = {GIVEN_FIELDS(NAME_OF) NULL};
#define ONE(name) + 1
    PyObject *v[0 GIVEN_FIELDS(ONE)];
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!OOOOO!OO!OO!OOOO!O!O!O!O!OO!O!:FastDispatch",
            names, &v[0], &PyTuple_Type, &v[1], &v[2], &v[3], &v[4], &v[5], &PyType_Type,
            &v[6], &v[7], &PyDict_Type, &v[8], &v[9], &PyDict_Type, &v[10], &v[11], &v[12],
            &v[13], &PyDict_Type, &v[14], &PyList_Type, &v[15], &PyDict_Type, &v[16],
            &PyList_Type, &v[17], &PyTuple_Type, &v[18], &v[19], &PyList_Type, &v[20],
            &PyDict_Type, &v[21]))
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
    self->param_entries = PyDict_New();
    self->size = -1;
    if (PyList_GET_SIZE(self->generation))  /* the recipes' generation: the current one */
        self->recipes_generation = Py_NewRef(PyList_GET_ITEM(self->generation, 0));
    if (self->routes == NULL || self->param_entries == NULL) { Py_DECREF(self); return NULL; }
    return (PyObject *)self;
}

static int Fast_traverse(FastObject *self, visitproc visit, void *arg) {
#define VISIT_FIELD(name) Py_VISIT(self->name);
    GIVEN_FIELDS(VISIT_FIELD)
    Py_VISIT(self->routes);
    Py_VISIT(self->recipes_generation);
    Py_VISIT(self->param_entries);
    Py_VISIT(self->params_generation);
    for (int j = 0; j < ROUTE_SLOTS; j++) {
        Py_VISIT(self->route_slots[j].func);
        Py_VISIT(self->route_slots[j].route);
    }
    return 0;
}

static int Fast_clear(FastObject *self) {
#define CLEAR_FIELD(name) Py_CLEAR(self->name);
    GIVEN_FIELDS(CLEAR_FIELD)
    Py_CLEAR(self->routes);
    Py_CLEAR(self->recipes_generation);
    Py_CLEAR(self->param_entries);
    Py_CLEAR(self->params_generation);
    forget_routes(self);
    return 0;
}

static void Fast_dealloc(FastObject *self) {
    PyObject_GC_UnTrack(self);
    Fast_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The error pending in this thread, taken out of the interpreter and returned normalized
   (with its traceback), else None: frontends/torch/hooks.DeviceGuard.type_ calls it while
   autograd unwinds a Python error. One C call, under the GIL from fetch to return: the
   ctypes PyErr_Fetch it replaces wrote into buffers shared by every thread, which another
   thread's backward could overwrite before they were read. Called with an error set, it
   returns with none, so CPython accepts its result. */
static PyObject *Fast_take_pending_error(PyObject *unused, PyObject *noargs) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (type == NULL) Py_RETURN_NONE;
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL && value != NULL) PyException_SetTraceback(value, traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    if (value == NULL) Py_RETURN_NONE;
    return value;
}

static PyMethodDef Fast_methods[] = {
    {"recipe_key", (PyCFunction)(void (*)(void))Fast_recipe_key, METH_FASTCALL,
     "recipe_key(func, args, kwargs): (key, operand nodes) of a call, or None"},
    {"take_pending_error", (PyCFunction)Fast_take_pending_error, METH_NOARGS | METH_STATIC,
     "take_pending_error(): this thread's pending exception, cleared, or None"},
    {NULL}
};

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
    .tp_methods = Fast_methods,
};

int lazyx_dispatch_init(PyObject *m) {
    if (PyType_Ready(&FastType) < 0) return -1;
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_depth, "depth"}, {&s_capturing, "capturing"}, {&s_handle, "_lazyx_handle"},
        {&s_node, "node"}, {&s_dtype, "dtype"}, {&s_shape, "shape"}, {&s_device, "DEVICE"},
        {&s_param, "param"}, {&s_local, "local"}, {&s_inputs, "inputs"}, {&s_order, "order"},
        {&s_hash, "hash"}, {&s_neg_zero, "-0.0"}};
    for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
        if ((*names[j].slot = PyUnicode_InternFromString(names[j].text)) == NULL) return -1;
    }
    if ((wrapper_kwnames = Py_BuildValue("(ss)", "dtype", "device")) == NULL ||
            (empty_tuple = PyTuple_New(0)) == NULL || (long_zero = PyLong_FromLong(0)) == NULL)
        return -1;
    return PyModule_AddObjectRef(m, "FastDispatch", (PyObject *)&FastType);
}
