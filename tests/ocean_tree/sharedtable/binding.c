#include "sharedtable.h"

#define Env SharedTable
#define MY_SHARED
#include "../env_binding.h"

static PyObject* my_shared(PyObject* self, PyObject* args, PyObject* kwargs) {
    int count = unpack(kwargs, "count");
    if (count < 1) {
        PyErr_SetString(PyExc_ValueError, "count must be at least 1");
        return NULL;
    }
    Table* table = calloc(1, sizeof(Table));
    table->values = calloc(count, sizeof(int));
    table->count = count;
    for (int i = 0; i < count; i++) table->values[i] = rand() % 256;
    table->build = ++tables_built;
    PyObject* state = PyDict_New();
    PyDict_SetItemString(state, "table", PyLong_FromVoidPtr(table));
    return PyLong_FromVoidPtr(state);
}

static int my_init(Env* env, PyObject* args, PyObject* kwargs) {
    env->length = unpack(kwargs, "length");
    PyObject* handle = PyDict_GetItemString(kwargs, "state");
    if (!PyObject_TypeCheck(handle, &PyLong_Type)) {
        PyErr_SetString(PyExc_TypeError, "state handle must be an integer");
        return 1;
    }
    PyObject* state = (PyObject*)PyLong_AsVoidPtr(handle);
    if (state == NULL || !PyDict_Check(state)) {
        PyErr_SetString(PyExc_ValueError, "state is not the dict binding.shared() made");
        return 1;
    }
    env->table = (Table*)PyLong_AsVoidPtr(PyDict_GetItemString(state, "table"));
    return 0;
}

static int my_log(PyObject* dict, Log* log) {
    assign_to_dict(dict, "perf", log->perf);
    assign_to_dict(dict, "score", log->score);
    assign_to_dict(dict, "episode_return", log->episode_return);
    assign_to_dict(dict, "episode_length", log->episode_length);
    return 0;
}
