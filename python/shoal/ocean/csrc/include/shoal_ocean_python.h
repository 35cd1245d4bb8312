/* shoal_ocean_python.h — the slice of CPython's C API that Ocean bindings use, on plain C data.
 *
 * An Ocean binding sees Python only through `PyObject*` keyword dicts (my_init reads its keyword
 * arguments with unpack(), a few with PyDict_GetItemString) and a log dict (my_log writes its
 * Log fields with assign_to_dict()). shoal gives it both without an interpreter: a keyword dict
 * is an array of (name, number) entries filled from the env's shoal parameters, and a log dict
 * writes each named value into the env's stats slot of that name.
 */
#ifndef SHOAL_OCEAN_PYTHON_H
#define SHOAL_OCEAN_PYTHON_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h> /* as CPython's Python.h includes it (grid's binding calls time()) */

#include "shoal_ocean_runtime.h"

typedef struct PyObject PyObject;

/* What a PyObject stands for. A Python int is a number (a keyword's int) or a pointer (a handle, as
 * PyLong_FromVoidPtr makes one: PufferLib's bindings pass shared state as such an int). */
enum {
    SHOAL_OCEAN_PY_NUMBER = 0, /* a float keyword (and whatever says nothing else) */
    SHOAL_OCEAN_PY_INT,        /* an int keyword */
    SHOAL_OCEAN_PY_POINTER,    /* an int holding an address */
    SHOAL_OCEAN_PY_DICT,       /* a dict: entries[0, count) */
};

struct PyObject {
    long ob_refcnt;    /* read by some bindings as a sanity check: 1 for every object shoal makes */
    int kind;          /* SHOAL_OCEAN_PY_* */
    const char* name;  /* an entry: its key */
    double number;     /* an entry: its value */
    void* pointer;     /* SHOAL_OCEAN_PY_POINTER: the address */
    PyObject* entries; /* a keyword dict: entries[0, count) */
    int count;
    int capacity;                  /* a dict made by PyDict_New: room in entries */
    float* slots;                  /* a log dict: where each named value goes ... */
    const char* const* slot_names; /* ... slot_names[0, count) */
    shoal_env* owner;              /* the env that receives errors */
};

/* Type objects, for PyObject_TypeCheck(obj, &PyLong_Type) and the like. */
typedef struct PyTypeObject {
    int kind;
} PyTypeObject;
static const PyTypeObject PyLong_Type SHOAL_UNUSED = {SHOAL_OCEAN_PY_INT};
static const PyTypeObject PyFloat_Type SHOAL_UNUSED = {SHOAL_OCEAN_PY_NUMBER};
static const PyTypeObject PyDict_Type SHOAL_UNUSED = {SHOAL_OCEAN_PY_DICT};

static inline SHOAL_UNUSED int PyLong_Check(const PyObject* value) {
    return value && (value->kind == SHOAL_OCEAN_PY_INT || value->kind == SHOAL_OCEAN_PY_POINTER);
}
static inline SHOAL_UNUSED int PyFloat_Check(const PyObject* value) {
    return value && value->kind == SHOAL_OCEAN_PY_NUMBER && !value->entries && !value->slots;
}
static inline SHOAL_UNUSED int PyDict_Check(const PyObject* value) {
    return value && value->kind == SHOAL_OCEAN_PY_DICT;
}
static inline SHOAL_UNUSED int shoal_ocean_type_check(const PyObject* value, const PyTypeObject* type) {
    if (type->kind == SHOAL_OCEAN_PY_INT) return PyLong_Check(value);
    if (type->kind == SHOAL_OCEAN_PY_DICT) return PyDict_Check(value);
    return PyFloat_Check(value);
}
#define PyObject_TypeCheck(value, type) shoal_ocean_type_check((value), (type))

/* Errors a binding raises: the env being set up (my_init) or the vector's shared state being built
 * (my_shared) fails with the exception's name and message; shoal raises it in Python. */
#define PyExc_TypeError "TypeError"
#define PyExc_ValueError "ValueError"
#define PyExc_KeyError "KeyError"
#define PyExc_RuntimeError "RuntimeError"
#define PyExc_MemoryError "MemoryError"
#define PyExc_IndexError "IndexError"
static inline SHOAL_UNUSED void PyErr_SetString(const char* exception, const char* message) {
    shoal_env* env = shoal_ocean_current();
    if (!env || env->failed) return;
    char text[SHOAL_ERROR_CAPACITY];
    snprintf(text, sizeof text, "%s: %s", exception, message);
    shoal_ocean_fail(env, "%s", text);
}
static inline SHOAL_UNUSED PyObject* PyErr_Occurred(void) {
    static PyObject raised = {.ob_refcnt = 1};
    shoal_env* env = shoal_ocean_current();
    return env && env->failed ? &raised : NULL;
}

/* Objects the binding makes (a handle, a dict of handles) live as long as what is being built: the
 * arena being filled (the env's or the shared state's), else the heap. */
static inline SHOAL_UNUSED void* shoal_ocean_py_alloc(size_t size) {
#ifdef SHOAL_OCEAN_ARENA_H
    return shoal_ocean_calloc(1, size);
#else
    return calloc(1, size);
#endif
}

static inline SHOAL_UNUSED PyObject* PyLong_FromVoidPtr(void* pointer) {
    PyObject* value = (PyObject*)shoal_ocean_py_alloc(sizeof(PyObject));
    if (value) *value = (PyObject){.ob_refcnt = 1, .kind = SHOAL_OCEAN_PY_POINTER, .pointer = pointer};
    return value;
}
static inline SHOAL_UNUSED void* PyLong_AsVoidPtr(const PyObject* value) {
    return value && value->kind == SHOAL_OCEAN_PY_POINTER ? value->pointer : NULL;
}

enum { SHOAL_OCEAN_DICT_CAPACITY = 16 };
static inline SHOAL_UNUSED PyObject* PyDict_New(void) {
    PyObject* dict = (PyObject*)shoal_ocean_py_alloc(sizeof(PyObject) * (1 + SHOAL_OCEAN_DICT_CAPACITY));
    if (dict)
        *dict = (PyObject){
            .ob_refcnt = 1, .kind = SHOAL_OCEAN_PY_DICT, .entries = dict + 1, .capacity = SHOAL_OCEAN_DICT_CAPACITY};
    return dict;
}

static inline SHOAL_UNUSED PyObject* PyDict_GetItemString(PyObject* dict, const char* key) {
    for (int i = 0; dict && i < dict->count; ++i)
        if (dict->entries && strcmp(dict->entries[i].name, key) == 0) return &dict->entries[i];
    return NULL;
}

/* Stores a copy of `value` under `key` (the binding's dicts hold handles and numbers). */
static inline SHOAL_UNUSED int PyDict_SetItemString(PyObject* dict, const char* key, PyObject* value) {
    if (!PyDict_Check(dict) || !value) return -1;
    PyObject* slot = PyDict_GetItemString(dict, key);
    if (!slot) {
        if (dict->count == dict->capacity) {
            PyErr_SetString(PyExc_MemoryError, "shoal.ocean: a dict of the binding holds 16 items at most");
            return -1;
        }
        slot = &dict->entries[dict->count++];
    }
    *slot = *value;
    slot->name = key;
    return 0;
}

static inline SHOAL_UNUSED long PyLong_AsLong(PyObject* value) {
    return (long)value->number;
}
static inline SHOAL_UNUSED double PyFloat_AsDouble(PyObject* value) {
    return value->number;
}

/* As in PufferLib's contract: the keyword's value as a double; a missing keyword is an error
 * (reported through the env; the value read is 1, as there). */
static inline SHOAL_UNUSED double unpack(PyObject* kwargs, const char* key) {
    PyObject* entry = PyDict_GetItemString(kwargs, key);
    if (entry) return entry->number;
    char text[SHOAL_ERROR_CAPACITY];
    snprintf(text, sizeof text, "%s reads keyword '%s', which the env's Python class does not pass",
             kwargs->name ? kwargs->name : "my_init", key);
    shoal_ocean_fail(kwargs->owner, "%s", text);
    return 1;
}

/* Writes a Log value into the stats slot of that name; values without a slot are not kept. */
static inline SHOAL_UNUSED int assign_to_dict(PyObject* dict, const char* key, float value) {
    for (int i = 0; i < dict->count; ++i)
        if (strcmp(dict->slot_names[i], key) == 0) {
            dict->slots[i] = value;
            return 0;
        }
    return 0;
}

#endif /* SHOAL_OCEAN_PYTHON_H */
