/* lazyx.core._native: what every traced op pays for, in C.

1. Building an IR node (core/ir.py's _PyNodeBase.__init__): keying it (local id, interned
   expression id, stable hash, commutative order) and numbering its leaves -- most of what
   tracing one user op cost through the NumPy frontend, and a large share through torch's
   and TF's.
2. Finding the user's line as a frontend op begins (core/source.py's op_line and CURRENT):
   core/_native_lines.c.
3. The handle each op's result gets (and NumPy's array around it), the live registry it
   joins, and the node-cap check every op begins with: core/_native_live.c.
4. The torch frontend's dispatcher for plain float arithmetic:
   frontends/torch/_native_dispatch.c.

core/ir.py and core/source.py stay the reference: this file computes the same values with the
same Python objects (their interning tables, per-thread trace and op-line state, verdict
cache), found through those modules' globals, and tests/core/test_native_node.py checks that
both ways give the same results on random graphs. LAZYX_NATIVE=0 turns this module off.

Thread safety: the GIL is held throughout; the only calls back into Python are ir.py's intern
functions and source.py's user_line and _is_internal, as on the pure-Python path.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* Every object field of a node, once (ir._PyNodeBase's slots): the struct, the GC's
   traversal and clearing, and the members Python sees are all made from this list. */
#define NODE_FIELDS(X) X(op) X(inputs) X(attrs) X(shape) X(dtype) X(hash) X(local) X(eid) \
    X(epoch) X(serial) X(source) X(value) X(order)

typedef struct {
    PyObject_HEAD
#define DECLARE_FIELD(name) PyObject *name;
    NODE_FIELDS(DECLARE_FIELD)
    PyObject *weakreflist;
} NodeObject;

/* Every function below takes G, the globals of the core/ir.py module it serves, and reads
   ir.py's tables by name at each use (tests swap them; and a checkout imported under two
   package names has two ir modules, each with its own tables and Node class). */
static PyObject *leaf_tag;      /* "leaf" */
static PyObject *two, *one;     /* user_line's frame depth from a C __init__; CREATED's step */
static PyObject *long_zero;     /* new_node's extra_hash from a Builder */

static PyObject *s_serial, *s_leaf_eids, *s_leaf_positions, *s_leaves;
static PyObject *s_ir_globals, *s_node, *s_created, *s_op_current, *s_source, *s_user_line,
    *s_leaf_ops, *s_eids, *s_intern_eid, *s_locals, *s_intern_local, *s_trace;

/* NAME in the globals G of core/ir.py (or core/source.py, for _native_lines.c), borrowed */
PyObject *lazyx_global(PyObject *G, PyObject *name) {
    PyObject *v = PyDict_GetItemWithError(G, name);
    if (v == NULL && !PyErr_Occurred())
        PyErr_Format(PyExc_RuntimeError, "lazyx._native: the module has no %U", name);
    return v;
}

static PyTypeObject NodeType;

/* this thread's op depth and (new reference) line in source.CURRENT: core/_native_lines.c */
int lazyx_current_line(PyObject *current, long *depth, PyObject **line);

#define SET(field, v) \
    do { PyObject *_old = self->field; self->field = (v); Py_XDECREF(_old); } while (0)

/* The interned (local id, stable hash, op key) of a node's own structure (ir.local_entry). */
static PyObject *local_entry(PyObject *G, PyObject *op, PyObject *attrs, PyObject *shape,
                             PyObject *dtype, PyObject *extra_hash) {
    PyObject *items, *signature, *entry;
    int truthy = PyDict_Check(attrs) ? PyDict_GET_SIZE(attrs) > 0 : PyObject_IsTrue(attrs);
    if (truthy < 0) return NULL;
    if (truthy) {
        PyObject *list = PyDict_Check(attrs) ? PyDict_Items(attrs) :
            PyObject_CallMethod(attrs, "items", NULL);
        if (list == NULL) return NULL;
        items = PySequence_Tuple(list);
        Py_DECREF(list);
        if (items == NULL) return NULL;
    } else {
        items = Py_NewRef(Py_None);
    }
    signature = PyTuple_Pack(5, op, items, shape, dtype, extra_hash);
    Py_DECREF(items);
    if (signature == NULL) return NULL;
    PyObject *table = lazyx_global(G, s_locals), *intern = lazyx_global(G, s_intern_local);
    entry = table == NULL || intern == NULL ? NULL :
        PyDict_Check(table) ? PyDict_GetItemWithError(table, signature) : NULL;  /* borrowed */
    if (entry != NULL) {
        Py_INCREF(entry);
    } else if (!PyErr_Occurred()) {
        entry = PyObject_CallOneArg(intern, signature);
    }
    Py_DECREF(signature);
    return entry;
}

/* The interned id of an expression key (a new reference). */
static PyObject *eid_of(PyObject *G, PyObject *key) {
    PyObject *table = lazyx_global(G, s_eids), *intern = lazyx_global(G, s_intern_eid), *eid;
    if (table == NULL || intern == NULL) return NULL;
    eid = PyDict_Check(table) ? PyDict_GetItemWithError(table, key) : NULL;
    if (eid != NULL) return Py_NewRef(eid);
    if (PyErr_Occurred()) return NULL;
    return PyObject_CallOneArg(intern, key);
}

/* Trace.leaf_eid: a leaf's eid in this thread's trace, numbering it at its first use. */
static PyObject *leaf_eid(PyObject *G, PyObject *trace, NodeObject *leaf) {
    PyObject *result = NULL, *leaf_eids = NULL, *positions = NULL, *leaves = NULL, *id = NULL;
    PyObject *k = NULL, *key = NULL, *eid;
    leaf_eids = PyObject_GetAttr(trace, s_leaf_eids);
    if (leaf_eids == NULL || !PyDict_Check(leaf_eids)) goto done;
    id = PyLong_FromVoidPtr(leaf);
    if (id == NULL) goto done;
    eid = PyDict_GetItemWithError(leaf_eids, id);
    if (eid != NULL) { result = Py_NewRef(eid); goto done; }
    if (PyErr_Occurred()) goto done;
    leaves = PyObject_GetAttr(trace, s_leaves);
    positions = PyObject_GetAttr(trace, s_leaf_positions);
    if (leaves == NULL || positions == NULL || !PyList_Check(leaves)) goto done;
    k = PyLong_FromSsize_t(PyList_GET_SIZE(leaves));
    if (k == NULL) goto done;
    key = PyTuple_Pack(3, leaf_tag, leaf->local, k);
    if (key == NULL) goto done;
    result = eid_of(G, key);
    if (result == NULL) goto done;
    if (PyDict_SetItem(leaf_eids, id, result) < 0 || PyObject_SetItem(positions, id, k) < 0
            || PyList_Append(leaves, (PyObject *)leaf) < 0) {
        Py_CLEAR(result);
    }
done:
    if (leaf_eids != NULL && result == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "lazyx: the trace's tables are not what ir.Trace makes");
    Py_XDECREF(leaf_eids); Py_XDECREF(positions); Py_XDECREF(leaves); Py_XDECREF(id);
    Py_XDECREF(k); Py_XDECREF(key);
    return result;
}

/* hash((first, tuple(getattr(i, field) for i in inputs))) */
static PyObject *combined_hash(PyObject *first, PyObject *inputs, Py_ssize_t n, size_t offset) {
    PyObject *parts = PyTuple_New(n), *outer;
    Py_hash_t h;
    if (parts == NULL) return NULL;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *v = *(PyObject **)((char *)PyTuple_GET_ITEM(inputs, j) + offset);
        if (v == NULL) {
            Py_DECREF(parts);
            PyErr_SetString(PyExc_AttributeError, "lazyx: an input node has no identity");
            return NULL;
        }
        PyTuple_SET_ITEM(parts, j, Py_NewRef(v));
    }
    outer = PyTuple_Pack(2, first, parts);
    Py_DECREF(parts);
    if (outer == NULL) return NULL;
    h = PyObject_Hash(outer);
    Py_DECREF(outer);
    if (h == -1 && PyErr_Occurred()) return NULL;
    return PyLong_FromSsize_t(h);
}

/* Set every field of a new node (ir._PyNodeBase.__init__'s rules). */
static int fill_fields(PyObject *G, NodeObject *self, PyObject *op, PyObject *inputs,
                       PyObject *attrs, PyObject *shape, PyObject *dtype, PyObject *value,
                       PyObject *extra_hash, PyObject *source, PyObject *entry) {
    PyObject *owned_entry = NULL, *count, *key = NULL;
    Py_ssize_t n;
    int is_leaf_op;
    if (!PyTuple_Check(inputs)) {
        PyErr_SetString(PyExc_TypeError, "lazyx: node inputs must be a tuple");
        return -1;
    }
    n = PyTuple_GET_SIZE(inputs);
    for (Py_ssize_t j = 0; j < n; j++) {
        if (!PyObject_TypeCheck(PyTuple_GET_ITEM(inputs, j), &NodeType)) {
            PyErr_SetString(PyExc_TypeError, "lazyx: node inputs must be nodes");
            return -1;
        }
    }
    SET(op, Py_NewRef(op));
    SET(inputs, Py_NewRef(inputs));
    SET(attrs, Py_NewRef(attrs));
    SET(shape, Py_NewRef(shape));
    SET(dtype, Py_NewRef(dtype));
    SET(value, Py_NewRef(value));
    /* not given (False): the user's line making this node, found from the frame that called
       the node's maker; True: the same, for a maker written in C (a Builder), which has no
       frame of its own, so the search starts one frame nearer */
    if (source == Py_False || source == Py_True) {
        PyObject *op_current = lazyx_global(G, s_op_current), *line;
        long depth;
        if (op_current == NULL || lazyx_current_line(op_current, &depth, &line) < 0) return -1;
        if (depth) {
            source = line;
        } else {
            Py_DECREF(line);
            PyObject *module = lazyx_global(G, s_source), *find;
            if (module == NULL) return -1;
            find = PyObject_GetAttr(module, s_user_line);
            if (find == NULL) return -1;
            source = PyObject_CallOneArg(find, source == Py_True ? one : two);
            Py_DECREF(find);
        }
        if (source == NULL) return -1;
        SET(source, source);
    } else {
        SET(source, Py_NewRef(source));
    }
    /* CREATED[0] += 1; serial = CREATED[0] */
    PyObject *created = lazyx_global(G, s_created);
    if (created == NULL) return -1;
    count = PyList_Check(created) && PyList_GET_SIZE(created) ?
        PyNumber_Add(PyList_GET_ITEM(created, 0), one) : NULL;
    if (count == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "lazyx: CREATED is not [n]");
        return -1;
    }
    if (PyList_SetItem(created, 0, Py_NewRef(count)) < 0) { Py_DECREF(count); return -1; }
    SET(serial, count);
    if (entry == Py_None) {
        PyObject *zero = extra_hash;
        if (zero == NULL) zero = PyLong_FromLong(0);
        else Py_INCREF(zero);
        if (zero == NULL) return -1;
        owned_entry = entry = local_entry(G, op, attrs, shape, dtype, zero);
        Py_DECREF(zero);
        if (entry == NULL) return -1;
    }
    if (!PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 3) {
        Py_XDECREF(owned_entry);
        PyErr_SetString(PyExc_TypeError, "lazyx: a node's entry is (local, stable, op key)");
        return -1;
    }
    PyObject *local = PyTuple_GET_ITEM(entry, 0), *stable = PyTuple_GET_ITEM(entry, 1);
    PyObject *op_key = PyTuple_GET_ITEM(entry, 2);
    SET(local, Py_NewRef(local));
    if (n == 0) {
        SET(hash, Py_NewRef(stable));
        SET(order, Py_NewRef(op_key));
        Py_XDECREF(owned_entry);
        PyObject *leaf_ops = lazyx_global(G, s_leaf_ops);
        if (leaf_ops == NULL) return -1;
        is_leaf_op = PySequence_Contains(leaf_ops, op);
        if (is_leaf_op < 0) return -1;
        if (is_leaf_op) {  /* numbered per trace when first used */
            SET(epoch, Py_NewRef(Py_None));
            SET(eid, Py_NewRef(Py_None));
            return 0;
        }
        /* constant, iota, ...: the same in every trace */
        key = PyTuple_Pack(1, self->local);
        if (key == NULL) return -1;
        PyObject *eid = eid_of(G, key);
        Py_DECREF(key);
        if (eid == NULL) return -1;
        SET(epoch, PyLong_FromLong(0));
        SET(eid, eid);
        return self->epoch == NULL ? -1 : 0;
    }
    PyObject *h = combined_hash(stable, inputs, n, offsetof(NodeObject, hash));
    if (h == NULL) { Py_XDECREF(owned_entry); return -1; }
    SET(hash, h);
    h = combined_hash(op_key, inputs, n, offsetof(NodeObject, order));
    Py_XDECREF(owned_entry);
    if (h == NULL) return -1;
    SET(order, h);

    PyObject *trace = lazyx_global(G, s_trace);
    if (trace == NULL) return -1;
    PyObject *serial_obj = PyObject_GetAttr(trace, s_serial);
    if (serial_obj == NULL) return -1;
    long long serial = PyLong_AsLongLong(serial_obj);
    if (serial == -1 && PyErr_Occurred()) { Py_DECREF(serial_obj); return -1; }
    int in_trace = 0;  /* some input belongs to this trace: so does the node */
    key = PyTuple_New(n + 1);
    if (key == NULL) { Py_DECREF(serial_obj); return -1; }
    PyTuple_SET_ITEM(key, 0, Py_NewRef(self->local));
    for (Py_ssize_t j = 0; j < n; j++) {
        NodeObject *input = (NodeObject *)PyTuple_GET_ITEM(inputs, j);
        PyObject *e = input->epoch, *part;
        if (e == NULL) {
            PyErr_SetString(PyExc_AttributeError, "lazyx: an input node has no epoch");
            goto fail;
        }
        if (e == Py_None) {  /* a leaf */
            part = leaf_eid(G, trace, input);
            if (part == NULL) goto fail;
            in_trace = 1;
        } else {
            long long epoch = PyLong_AsLongLong(e);
            if (epoch == -1 && PyErr_Occurred()) goto fail;
            if (epoch != serial && epoch != 0) {  /* another trace's: cuts walk this graph */
                Py_DECREF(key);
                Py_DECREF(serial_obj);
                SET(epoch, PyLong_FromLong(-1));
                SET(eid, Py_NewRef(Py_None));
                return self->epoch == NULL ? -1 : 0;
            }
            if (epoch) in_trace = 1;
            part = Py_NewRef(input->eid);
        }
        PyTuple_SET_ITEM(key, j + 1, part);
    }
    PyObject *eid = eid_of(G, key);
    Py_DECREF(key);
    if (eid == NULL) { Py_DECREF(serial_obj); return -1; }
    SET(eid, eid);
    if (in_trace) {
        SET(epoch, serial_obj);
    } else {
        Py_DECREF(serial_obj);
        SET(epoch, PyLong_FromLong(0));
        if (self->epoch == NULL) return -1;
    }
    return 0;
fail:
    Py_DECREF(key);
    Py_DECREF(serial_obj);
    return -1;
}

/* ---------------------------------------------------------------- nodes and the cyclic GC

A traced graph is thousands of nodes (and their inputs tuples) that live until the next cut:
long enough to survive young collections, so every step promoted them into the oldest
generation, whose growth set off full collections of the whole heap -- torch, jax and TF
loaded are some 360,000 objects, 200 ms each, every ten or so steps of 5,000 ops, whose mean
step was then 1.6-2.4x the collector-off time (benchmarks/gc_pauses.py). A node's fields are
set once, at construction, and a plain node's lead only to older nodes, strings, numbers,
tuples and attribute dicts of those, and its value (a buffer): no path from them leads back
to the node, so no reference cycle passes through it and the collector has nothing to find
there. Such a node is untracked, as CPython untracks a tuple of atomic items; so is its
inputs tuple, whose items then are such nodes. A node with any other field (an attribute
holding a function, a value of a type not known to be inert) stays tracked, and so do the
nodes made from it; a field set later to such an object tracks the node again
(Node_setattro), as does a second __init__ that gives it one. */

static PyObject *s_inert_values;  /* "INERT_VALUE_TYPES" in core/ir.py */

/* Whether `obj` cannot lead back to a node made after it: not a container the collector
   sees (an int, a str, a NumPy array), an untracked node, or a tuple or dict of such (a dict:
   a node's attributes, which are part of its interned key and never change). */
static int acyclic(PyObject *obj, int depth) {
    /* (most fields are numbers and strings: answered without a call) */
    if (obj == Py_None || PyLong_CheckExact(obj) || PyUnicode_CheckExact(obj)) return 1;
    if (!PyObject_IS_GC(obj)) return 1;
    int tracked = PyObject_GC_IsTracked(obj);
    if (PyObject_TypeCheck(obj, &NodeType)) return !tracked;
    if (depth > 4) return 0;
    if (PyTuple_CheckExact(obj)) {
        /* untracked: CPython (or this function, before) found its items atomic */
        if (!tracked) return 1;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(obj); j++)
            if (!acyclic(PyTuple_GET_ITEM(obj, j), depth + 1)) return 0;
        /* as the collector would at its next pass: the shape and line tuples nodes share
           are then checked at once */
        PyObject_GC_UnTrack(obj);
        return 1;
    }
    if (PyDict_CheckExact(obj)) {
        if (!tracked) return 1;  /* atomic values only (a dict tracks itself on a new one) */
        PyObject *key, *item;
        Py_ssize_t pos = 0;
        while (PyDict_Next(obj, &pos, &key, &item))
            if (!acyclic(key, depth + 1) || !acyclic(item, depth + 1)) return 0;
        return 1;
    }
    return 0;
}

/* A value (a node's buffer) that holds no reference a cycle could pass through: acyclic, or
   of a type a backend declared inert (ir.INERT_VALUE_TYPES: jax's arrays). 1, 0 or -1. */
static int inert_value(PyObject *G, PyObject *value) {
    if (acyclic(value, 0)) return 1;
    PyObject *types = PyDict_GetItemWithError(G, s_inert_values);  /* borrowed */
    if (types == NULL) return PyErr_Occurred() ? -1 : 0;
    return PySet_Check(types) ? PySet_Contains(types, (PyObject *)Py_TYPE(value)) : 0;
}

/* Whether the collector has nothing to find through a node whose fields were just set:
   1, 0, or -1 with an error. */
static int cycle_free(PyObject *G, NodeObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    /* a subclass with fields of its own (ir's view nodes) is the collector's to judge */
    if (type->tp_basicsize != NodeType.tp_basicsize || type->tp_dictoffset != 0) return 0;
    /* (serial, epoch and eid are numbers fill_fields made, or None; the inputs are nodes,
       which fill_fields checked; local, hash and order come from the entry a caller may give) */
    PyObject *given[] = {self->op, self->attrs, self->shape, self->dtype, self->source,
                         self->local, self->hash, self->order};
    for (size_t j = 0; j < sizeof(given) / sizeof(given[0]); j++)
        if (given[j] != NULL && !acyclic(given[j], 0))
            return 0;
    if (!PyTuple_CheckExact(self->inputs)) return 0;
    for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(self->inputs); j++)
        if (PyObject_GC_IsTracked(PyTuple_GET_ITEM(self->inputs, j))) return 0;
    return self->value == NULL ? 1 : inert_value(G, self->value);
}

static int fill(PyObject *G, NodeObject *self, PyObject *op, PyObject *inputs, PyObject *attrs,
                PyObject *shape, PyObject *dtype, PyObject *value, PyObject *extra_hash,
                PyObject *source, PyObject *entry) {
    if (fill_fields(G, self, op, inputs, attrs, shape, dtype, value, extra_hash, source,
                    entry) < 0)
        return -1;
    int free = cycle_free(G, self);
    if (free < 0) return -1;
    if (free) {
        PyObject_GC_UnTrack(self);
        PyObject_GC_UnTrack(self->inputs);
    } else if (!PyObject_GC_IsTracked((PyObject *)self)) {  /* __init__ called again */
        PyObject_GC_Track(self);
    }
    return 0;
}

/* Setting a field (nothing in lazyx does after construction) to an object a cycle could pass
   through gives the collector the node back. */
static int Node_setattro(NodeObject *self, PyObject *name, PyObject *value) {
    if (PyObject_GenericSetAttr((PyObject *)self, name, value) < 0) return -1;
    if (value != NULL && !PyObject_GC_IsTracked((PyObject *)self) && !acyclic(value, 0))
        PyObject_GC_Track(self);
    return 0;
}

static int Node_init(NodeObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"op", "inputs", "attrs", "shape", "dtype", "value", "extra_hash",
                            "source", "entry", NULL};
    PyObject *op, *inputs, *attrs, *shape, *dtype, *value = Py_None, *extra_hash = NULL;
    PyObject *source = Py_False, *entry = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOO|OOOO:Node", names, &op, &inputs,
                                     &attrs, &shape, &dtype, &value, &extra_hash, &source,
                                     &entry))
        return -1;
    PyObject *G = PyObject_GetAttr((PyObject *)Py_TYPE(self), s_ir_globals);
    if (G == NULL) return -1;
    int status = PyDict_Check(G) ?
        fill(G, self, op, inputs, attrs, shape, dtype, value, extra_hash, source, entry) : -1;
    if (status < 0 && !PyErr_Occurred())
        PyErr_SetString(PyExc_TypeError, "lazyx: a node class's _IR_GLOBALS is not a dict");
    Py_DECREF(G);
    return status;
}

/* new(op, inputs, attrs, shape, dtype[, value, extra_hash, source, entry]): G's Node(...)
   without a class call's argument tuple and keyword parsing. `configure(G)` makes one bound
   to an ir module's globals (ir.new_node). */
static PyObject *node_new(PyObject *G, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *cls;
    NodeObject *self;
    if (nargs < 5 || nargs > 9) {
        PyErr_SetString(PyExc_TypeError, "lazyx: new_node takes 5 to 9 arguments");
        return NULL;
    }
    if ((cls = lazyx_global(G, s_node)) == NULL) return NULL;
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, &NodeType)) {
        PyErr_SetString(PyExc_TypeError, "lazyx: ir.Node is not a NodeBase");
        return NULL;
    }
    self = (NodeObject *)((PyTypeObject *)cls)->tp_alloc((PyTypeObject *)cls, 0);
    if (self == NULL) return NULL;
    if (fill(G, self, args[0], args[1], args[2], args[3], args[4],
             nargs > 5 ? args[5] : Py_None, nargs > 6 ? args[6] : NULL,
             nargs > 7 ? args[7] : Py_False, nargs > 8 ? args[8] : Py_None) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyMethodDef new_def = {
    "new_node", (PyCFunction)(void (*)(void))node_new, METH_FASTCALL,
    "new_node(op, inputs, attrs, shape, dtype[, value, extra_hash, source, entry])"};

static int Node_traverse(NodeObject *self, visitproc visit, void *arg) {
#define VISIT_FIELD(name) Py_VISIT(self->name);
    NODE_FIELDS(VISIT_FIELD)
    return 0;
}

static int Node_clear(NodeObject *self) {
#define CLEAR_FIELD(name) Py_CLEAR(self->name);
    NODE_FIELDS(CLEAR_FIELD)
    return 0;
}

static void Node_dealloc(NodeObject *self) {
    PyObject_GC_UnTrack(self);
    /* a long chain of nodes frees its inputs recursively: the trashcan bounds the C stack */
    Py_TRASHCAN_BEGIN(self, Node_dealloc)
    if (self->weakreflist != NULL) PyObject_ClearWeakRefs((PyObject *)self);
    Node_clear(self);
    /* (a Python subclass's instance: subtype_dealloc, which called us, drops its type) */
    Py_TYPE(self)->tp_free((PyObject *)self);
    Py_TRASHCAN_END
}

#define MEMBER(name) {#name, T_OBJECT_EX, offsetof(NodeObject, name), 0, NULL},
static PyMemberDef Node_members[] = {
    NODE_FIELDS(MEMBER)
    {"__weaklistoffset__", T_PYSSIZET, offsetof(NodeObject, weakreflist), READONLY, NULL},
    {NULL}
};

static PyTypeObject NodeType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazyx.core._native.NodeBase",
    .tp_doc = "An IR node's fields and their construction (core/ir.py's _PyNodeBase, in C).",
    .tp_basicsize = sizeof(NodeObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Node_init,
    .tp_dealloc = (destructor)Node_dealloc,
    .tp_traverse = (traverseproc)Node_traverse,
    .tp_clear = (inquiry)Node_clear,
    .tp_members = Node_members,
    .tp_setattro = (setattrofunc)Node_setattro,
    .tp_weaklistoffset = offsetof(NodeObject, weakreflist),
};


/* ---------------------------------------------------------------- ops.primitive's builder, in C

core/ops.py's `build` for one op (ops.primitive), on its common path: IR nodes of the plain
Node class as inputs, a signature already in the op's memo, the memo's generation current.
Every other call -- a first signature, a bad input, an unhashable attribute, an emptied
interning table -- goes to the Python `build`, which stays the reference and shares the memo.
What a hit does is exactly what the Python `build` does after its memo lookup: put a
commutative op's operands in creation order, ask the op's simplifier, then make the node. */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *name, *slow, *memo, *state, *generation, *node_type, *new_node, *simplify;
    /* the simplifier's `looks_through` (ops._push_unary): the only ops of a first operand it
       can fold, so for any other it is not called (0.3 us of a unary op); NULL: always */
    PyObject *looks_through;
    int commutative;
} BuilderObject;

static PyObject *Builder_slow(BuilderObject *self, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames) {
    return PyObject_Vectorcall(self->slow, args, nargsf, kwnames);
}

static PyObject *Builder_call(BuilderObject *self, PyObject *const *args, size_t nargsf,
                              PyObject *kwnames) {
    Py_ssize_t n = PyVectorcall_NARGS(nargsf), nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    PyObject *types, *items, *key, *known, *inputs, *result;
    /* the memo belongs to the interning generation it was filled in (see ops.primitive) */
    PyObject *current = PyList_Check(self->generation) && PyList_GET_SIZE(self->generation) ?
        PyList_GET_ITEM(self->generation, 0) : NULL;
    PyObject *seen = PyList_Check(self->state) && PyList_GET_SIZE(self->state) > 1 ?
        PyList_GET_ITEM(self->state, 1) : NULL;
    if (current == NULL || seen == NULL || (current != seen &&
            PyObject_RichCompareBool(current, seen, Py_EQ) != 1)) {
        PyErr_Clear();
        return Builder_slow(self, args, nargsf, kwnames);
    }
    if ((types = PyTuple_New(n)) == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = args[i];
        if ((PyObject *)Py_TYPE(x) != self->node_type ||
                PyTuple_Check(((NodeObject *)x)->dtype)) {
            Py_DECREF(types);
            return Builder_slow(self, args, nargsf, kwnames);
        }
        PyObject *pair = PyTuple_Pack(2, ((NodeObject *)x)->shape, ((NodeObject *)x)->dtype);
        if (pair == NULL) { Py_DECREF(types); return NULL; }
        PyTuple_SET_ITEM(types, i, pair);
    }
    if ((items = PyTuple_New(nkw)) == NULL) { Py_DECREF(types); return NULL; }
    for (Py_ssize_t i = 0; i < nkw; i++) {
        PyObject *pair = PyTuple_Pack(2, PyTuple_GET_ITEM(kwnames, i), args[n + i]);
        if (pair == NULL) { Py_DECREF(types); Py_DECREF(items); return NULL; }
        PyTuple_SET_ITEM(items, i, pair);
    }
    key = PyTuple_Pack(2, types, items);
    Py_DECREF(types);
    Py_DECREF(items);
    if (key == NULL) return NULL;
    known = PyDict_GetItemWithError(self->memo, key);  /* borrowed */
    Py_DECREF(key);
    if (known == NULL || !PyTuple_Check(known) || PyTuple_GET_SIZE(known) != 4) {
        PyErr_Clear();  /* a miss, or an unhashable attribute: the Python build decides */
        return Builder_slow(self, args, nargsf, kwnames);
    }
    Py_INCREF(known);  /* (the memo may be emptied by the simplifier's own builds) */
    int swap = 0;  /* a commutative op's operands in creation order, as the Python build */
    if (self->commutative && n >= 2) {
        swap = PyObject_RichCompareBool(((NodeObject *)args[0])->order,
                                        ((NodeObject *)args[1])->order, Py_GT);
        if (swap < 0) { Py_DECREF(known); return NULL; }
    }
    inputs = PyTuple_New(n);
    if (inputs != NULL)
        for (Py_ssize_t i = 0; i < n; i++)
            PyTuple_SET_ITEM(inputs, i, Py_NewRef(args[swap && i < 2 ? 1 - i : i]));
    if (inputs == NULL) { Py_DECREF(known); return NULL; }
    PyObject *shape = PyTuple_GET_ITEM(known, 0), *dtype = PyTuple_GET_ITEM(known, 1),
        *attrs = PyTuple_GET_ITEM(known, 2), *entry = PyTuple_GET_ITEM(known, 3);
    int simplify = self->simplify != Py_None;
    if (simplify && self->looks_through != NULL) {
        simplify = PySequence_Contains(self->looks_through,
                                       ((NodeObject *)PyTuple_GET_ITEM(inputs, 0))->op);
        if (simplify < 0) { Py_DECREF(inputs); Py_DECREF(known); return NULL; }
    }
    if (simplify) {
        PyObject *simpler = PyObject_CallFunctionObjArgs(self->simplify, inputs, attrs, shape,
                                                         dtype, NULL);
        if (simpler != Py_None) {  /* a simpler node, or NULL: an error */
            Py_DECREF(inputs);
            Py_DECREF(known);
            return simpler;
        }
        Py_DECREF(simpler);
    }
    PyObject *call[9] = {self->name, inputs, attrs, shape, dtype, Py_None, long_zero,
                         Py_True, entry};  /* (True: the user's line, seen from C) */
    result = PyObject_Vectorcall(self->new_node, call, 9, NULL);
    Py_DECREF(inputs);
    Py_DECREF(known);
    return result;
}

static PyObject *Builder_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *name, *slow, *memo, *state, *generation, *node_type, *new_node, *simplify;
    int commutative;
    if (kwargs != NULL && PyDict_GET_SIZE(kwargs)) {
        PyErr_SetString(PyExc_TypeError, "Builder takes positional arguments only");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "UOO!O!O!OOOp:Builder", &name, &slow, &PyDict_Type, &memo,
                          &PyList_Type, &state, &PyList_Type, &generation, &node_type,
                          &new_node, &simplify, &commutative))
        return NULL;
    if (!PyType_Check(node_type) || !PyType_IsSubtype((PyTypeObject *)node_type, &NodeType)) {
        PyErr_SetString(PyExc_TypeError, "Builder: the node class is not a NodeBase");
        return NULL;
    }
    BuilderObject *self = (BuilderObject *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->vectorcall = (vectorcallfunc)Builder_call;
    self->name = Py_NewRef(name);
    self->slow = Py_NewRef(slow);
    self->memo = Py_NewRef(memo);
    self->state = Py_NewRef(state);
    self->generation = Py_NewRef(generation);
    self->node_type = Py_NewRef(node_type);
    self->new_node = Py_NewRef(new_node);
    self->simplify = Py_NewRef(simplify);
    self->commutative = commutative;
    if (simplify != Py_None) {
        PyObject *through = PyObject_GetAttrString(simplify, "looks_through");
        if (through == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError)) { Py_DECREF(self); return NULL; }
            PyErr_Clear();
        } else if (!PyTuple_Check(through)) {
            Py_CLEAR(through);  /* (not a tuple of op names: always call) */
        }
        self->looks_through = through;
    }
    return (PyObject *)self;
}

#define BUILDER_FIELDS(X) X(name) X(slow) X(memo) X(state) X(generation) X(node_type) \
    X(new_node) X(simplify) X(looks_through)

static int Builder_traverse(BuilderObject *self, visitproc visit, void *arg) {
    BUILDER_FIELDS(VISIT_FIELD)
    return 0;
}

static int Builder_clear(BuilderObject *self) {
    BUILDER_FIELDS(CLEAR_FIELD)
    return 0;
}

static void Builder_dealloc(BuilderObject *self) {
    PyObject_GC_UnTrack(self);
    Builder_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* what introspection asks of a function (help(), inspect.signature): the Python build's */
static PyObject *Builder_getattro(BuilderObject *self, PyObject *name) {
    PyObject *found = PyObject_GenericGetAttr((PyObject *)self, name);
    if (found != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError)) return found;
    PyErr_Clear();
    return PyObject_GetAttr(self->slow, name);
}

static PyObject *Builder_repr(BuilderObject *self) {
    return PyUnicode_FromFormat("<lazyx op builder %U>", self->name);
}

static PyObject *Builder_doc(BuilderObject *self, void *closure) {
    return PyObject_GetAttrString(self->slow, "__doc__");
}

static PyGetSetDef Builder_getset[] = {
    {"__doc__", (getter)Builder_doc, NULL, NULL, NULL},
    {NULL}
};

static PyMemberDef Builder_members[] = {
    {"__wrapped__", T_OBJECT_EX, offsetof(BuilderObject, slow), READONLY,
     "the Python build: the reference, and the path of every call C does not take"},
    {NULL}
};

static PyTypeObject BuilderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lazyx.core._native.Builder",
    .tp_doc = "Builder(name, build, memo, state, generation, Node, new_node, simplify, "
              "commutative): an op's builder (core/ops.py's primitive) in C.",
    .tp_basicsize = sizeof(BuilderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = Builder_new,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(BuilderObject, vectorcall),
    .tp_dealloc = (destructor)Builder_dealloc,
    .tp_traverse = (traverseproc)Builder_traverse,
    .tp_clear = (inquiry)Builder_clear,
    .tp_getattro = (getattrofunc)Builder_getattro,
    .tp_repr = (reprfunc)Builder_repr,
    .tp_members = Builder_members,
    .tp_getset = Builder_getset,
};

/* configure(G): ir.new_node for the ir module whose globals are G. */
static PyObject *configure(PyObject *module, PyObject *G) {
    if (!PyDict_Check(G)) {
        PyErr_SetString(PyExc_TypeError, "configure: an ir module's globals() expected");
        return NULL;
    }
    return PyCFunction_New(&new_def, G);
}

static PyMethodDef module_methods[] = {
    {"configure", (PyCFunction)configure, METH_O,
     "configure(ir globals) -> new_node bound to them (see core/ir.py)."},
    {NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "lazyx.core._native",
    "The construction of IR nodes in C (see core/ir.py).", -1, module_methods,
};

int lazyx_live_init(PyObject *m);  /* core/_native_live.c */
int lazyx_lines_init(PyObject *m);  /* core/_native_lines.c */
int lazyx_dispatch_init(PyObject *m);  /* frontends/torch/_native_dispatch.c */

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m;
    if (PyType_Ready(&NodeType) < 0 || PyType_Ready(&BuilderType) < 0)
        return NULL;
    struct { PyObject **slot; const char *text; } names[] = {
        {&s_serial, "serial"},
        {&s_leaf_eids, "leaf_eids"}, {&s_leaf_positions, "leaf_positions"},
        {&s_leaves, "leaves"}, {&leaf_tag, "leaf"}, {&s_ir_globals, "_IR_GLOBALS"},
        {&s_node, "Node"}, {&s_created, "CREATED"}, {&s_op_current, "_OP_CURRENT"},
        {&s_source, "_source"}, {&s_user_line, "user_line"}, {&s_leaf_ops, "LEAF_OPS"},
        {&s_eids, "_EIDS"}, {&s_intern_eid, "_intern_eid"}, {&s_locals, "_LOCALS"},
        {&s_intern_local, "_intern_local"}, {&s_trace, "TRACE"},
        {&s_inert_values, "INERT_VALUE_TYPES"}};
    for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
        if ((*names[j].slot = PyUnicode_InternFromString(names[j].text)) == NULL) return NULL;
    }
    if ((two = PyLong_FromLong(2)) == NULL || (one = PyLong_FromLong(1)) == NULL ||
            (long_zero = PyLong_FromLong(0)) == NULL)
        return NULL;
    m = PyModule_Create(&module_def);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "NodeBase", (PyObject *)&NodeType) < 0 ||
            PyModule_AddObjectRef(m, "Builder", (PyObject *)&BuilderType) < 0 ||
            lazyx_live_init(m) < 0 || lazyx_lines_init(m) < 0 ||
            lazyx_dispatch_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
