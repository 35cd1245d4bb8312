#include "leaky.h"

#define Env Leaky
#include "../env_binding.h"

static int my_init(Env* env, PyObject* args, PyObject* kwargs) {
    env->length = unpack(kwargs, "length");
    env->mode = unpack(kwargs, "mode");
    return 0;
}

static int my_log(PyObject* dict, Log* log) {
    assign_to_dict(dict, "score", log->score);
    return 0;
}
