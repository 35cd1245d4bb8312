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
#include <string.h>

#include "shoal_ocean_runtime.h"

typedef struct PyObject PyObject;
struct PyObject {
    const char* name;  /* an entry: its key */
    double number;     /* an entry: its value */
    PyObject* entries; /* a keyword dict: entries[0, count) */
    int count;
    float* slots;                  /* a log dict: where each named value goes ... */
    const char* const* slot_names; /* ... slot_names[0, count) */
    shoal_env* owner;              /* the env that receives errors */
};

static inline SHOAL_UNUSED PyObject* PyDict_GetItemString(PyObject* dict, const char* key) {
    for (int i = 0; i < dict->count; ++i)
        if (dict->entries && strcmp(dict->entries[i].name, key) == 0) return &dict->entries[i];
    return NULL;
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
    shoal_ocean_fail(kwargs->owner, "my_init reads keyword '%s', which the env's Python class does not pass", key);
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
