#include "paramtypes.h"

#define Env ParamTypes
#include "../env_binding.h"

static int my_init(Env* env, PyObject* args, PyObject* kwargs) {
    env->scale = unpack(kwargs, "scale");
    env->flag = unpack(kwargs, "flag");
    env->count = unpack(kwargs, "count");
    return 0;
}

static int my_log(PyObject* dict, Log* log) {
    return 0;
}
