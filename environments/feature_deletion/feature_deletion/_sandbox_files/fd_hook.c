/* The grader's audit hook, registered from C (`PySys_AddAuditHook`); fd_guard.py decides, this only filters.

Why C: CPython calls a hook that `sys.addaudithook` registered in a Python frame of its own, on every audited event,
harmless ones too (`id()` raises `builtins.id`). That frame is a trait any code can read without a clock: one frame
below the recursion limit, `id(x)` raises RecursionError under such a hook and answers in a user's process (red team
13, R13). This hook is called from C with no frame; for an event fd_guard does not watch it returns after a
comparison or two (names by their first byte), and for one it watches it calls fd_guard's hook with the recursion
limit raised by ROOM for the call, so that the hook's frames never meet the limit the code under it reached. What
stays: any hook makes CPython build each event's arguments, so an audited call timed against one that is not costs
about twice what it costs with no hook (red team 13, H13: code that can read a clock can tell).

    fd_hook.install(hook, names, prefixes): hook(event, args) for events named in `names` or starting with one of
    `prefixes` (tuples of str); once per process.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define ROOM 200

static PyObject *decide = NULL;
/* The watched names and prefixes by their first byte: most events (`builtins.id`) are told apart by it or by a
   comparison or two, so that the hook's cost stays near CPython's own for the event. */
typedef struct {
    char **items;
    size_t *lengths;
    Py_ssize_t n;
} Bucket;
static Bucket names[256], prefixes[256];

static int watched(const char *event) {
    unsigned char first = (unsigned char)event[0];
    const Bucket *b = &names[first];
    for (Py_ssize_t i = 0; i < b->n; i++)
        if (strcmp(event, b->items[i]) == 0) return 1;
    b = &prefixes[first];
    for (Py_ssize_t i = 0; i < b->n; i++)
        if (strncmp(event, b->items[i], b->lengths[i]) == 0) return 1;
    return 0;
}

static int hook(const char *event, PyObject *args, void *data) {
    (void)data;
    if (decide == NULL || !watched(event)) return 0;
    int limit = Py_GetRecursionLimit();
    Py_SetRecursionLimit(limit + ROOM);
    PyObject *result = PyObject_CallFunction(decide, "sO", event, args);
    Py_SetRecursionLimit(limit);
    if (result == NULL) return -1;
    Py_DECREF(result);
    return 0;
}

static int copy_all(PyObject *tuple, Bucket *buckets) {
    if (!PyTuple_Check(tuple)) {
        PyErr_SetString(PyExc_TypeError, "names and prefixes must be tuples of str");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++) {
        const char *text = PyUnicode_AsUTF8(PyTuple_GET_ITEM(tuple, i));
        if (text == NULL) return -1;
        Bucket *b = &buckets[(unsigned char)text[0]];
        char **items = PyMem_RawRealloc(b->items, (size_t)(b->n + 1) * sizeof(char *));
        if (items == NULL) return -1;
        b->items = items;
        size_t *lengths = PyMem_RawRealloc(b->lengths, (size_t)(b->n + 1) * sizeof(size_t));
        if (lengths == NULL) return -1;
        b->lengths = lengths;
        b->items[b->n] = strdup(text);
        if (b->items[b->n] == NULL) return -1;
        b->lengths[b->n] = strlen(text);
        b->n++;
    }
    return 0;
}

static PyObject *install(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *callable, *name_tuple, *prefix_tuple;
    if (!PyArg_ParseTuple(args, "OOO", &callable, &name_tuple, &prefix_tuple)) return NULL;
    if (decide != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the hook is installed once per process");
        return NULL;
    }
    if (!PyCallable_Check(callable)) {
        PyErr_SetString(PyExc_TypeError, "hook must be callable");
        return NULL;
    }
    if (copy_all(name_tuple, names) < 0 || copy_all(prefix_tuple, prefixes) < 0) return NULL;
    Py_INCREF(callable);
    decide = callable;
    if (PySys_AddAuditHook(hook, NULL) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"install", install, METH_VARARGS, "install(hook, names, prefixes): the grader's audit hook, from C."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "fd_hook", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_fd_hook(void) { return PyModule_Create(&module); }
