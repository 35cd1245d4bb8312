#include "manykeys.h"

#define Env ManyKeys
#include "../env_binding.h"

static int my_init(Env* env, PyObject* args, PyObject* kwargs) {
    return 0;
}

static int my_log(PyObject* dict, Log* log) {
    assign_to_dict(dict, "k0", log->k0);
    assign_to_dict(dict, "k1", log->k1);
    assign_to_dict(dict, "k2", log->k2);
    assign_to_dict(dict, "k3", log->k3);
    assign_to_dict(dict, "k4", log->k4);
    assign_to_dict(dict, "k5", log->k5);
    assign_to_dict(dict, "k6", log->k6);
    assign_to_dict(dict, "k7", log->k7);
    assign_to_dict(dict, "k8", log->k8);
    assign_to_dict(dict, "k9", log->k9);
    assign_to_dict(dict, "k10", log->k10);
    assign_to_dict(dict, "k11", log->k11);
    assign_to_dict(dict, "k12", log->k12);
    assign_to_dict(dict, "k13", log->k13);
    assign_to_dict(dict, "k14", log->k14);
    assign_to_dict(dict, "k15", log->k15);
    assign_to_dict(dict, "k16", log->k16);
    assign_to_dict(dict, "k17", log->k17);
    assign_to_dict(dict, "k18", log->k18);
    assign_to_dict(dict, "k19", log->k19);
    assign_to_dict(dict, "k20", log->k20);
    assign_to_dict(dict, "k21", log->k21);
    assign_to_dict(dict, "k22", log->k22);
    assign_to_dict(dict, "k23", log->k23);
    assign_to_dict(dict, "k24", log->k24);
    assign_to_dict(dict, "k25", log->k25);
    assign_to_dict(dict, "k26", log->k26);
    assign_to_dict(dict, "k27", log->k27);
    assign_to_dict(dict, "k28", log->k28);
    assign_to_dict(dict, "k29", log->k29);
    assign_to_dict(dict, "k30", log->k30);
    assign_to_dict(dict, "k31", log->k31);
    assign_to_dict(dict, "k32", log->k32);
    assign_to_dict(dict, "k33", log->k33);
    assign_to_dict(dict, "k34", log->k34);
    assign_to_dict(dict, "k35", log->k35);
    assign_to_dict(dict, "k36", log->k36);
    assign_to_dict(dict, "k37", log->k37);
    assign_to_dict(dict, "k38", log->k38);
    assign_to_dict(dict, "k39", log->k39);
    return 0;
}
