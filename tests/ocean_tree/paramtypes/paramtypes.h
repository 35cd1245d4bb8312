/* paramtypes — an Ocean-style env for shoal's tests that shows the keyword arguments my_init read:
 * a double (`scale`, kept as a double), a bool (`flag`) and an int (`count`). Its observation is
 * ((scale - 0.1) * 1e9, flag, count): the first is 0 only if scale reached my_init as the double 0.1
 * (as a float32 it would be 1.49). Same layout and contract as a PufferLib Ocean env. */
#include <stdlib.h>
#include <string.h>
#include "raylib.h"

typedef struct Log {
    float n;
} Log;

typedef struct ParamTypes {
    float* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    Log log;
    double scale;
    int flag;
    int count;
} ParamTypes;

void c_reset(ParamTypes* env) {
    env->observations[0] = (float)((env->scale - 0.1) * 1e9);
    env->observations[1] = (float)env->flag;
    env->observations[2] = (float)env->count;
}

void c_step(ParamTypes* env) {
    env->rewards[0] = 0.0f;
    env->terminals[0] = 0;
    c_reset(env);
}

void c_render(ParamTypes* env) {}

void c_close(ParamTypes* env) {}
