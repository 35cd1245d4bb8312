/* manykeys — an Ocean-style env for shoal's tests whose Log has 40 fields besides n (more than the
 * SDK's 16 per-env stats slots). Action 1 ends the episode inside c_step and logs k<j> += j * its
 * length; action 0 goes on. Same layout and contract as a PufferLib Ocean env. */
#include <stdlib.h>
#include <string.h>
#include "raylib.h"

typedef struct Log {
    float k0;
    float k1;
    float k2;
    float k3;
    float k4;
    float k5;
    float k6;
    float k7;
    float k8;
    float k9;
    float k10;
    float k11;
    float k12;
    float k13;
    float k14;
    float k15;
    float k16;
    float k17;
    float k18;
    float k19;
    float k20;
    float k21;
    float k22;
    float k23;
    float k24;
    float k25;
    float k26;
    float k27;
    float k28;
    float k29;
    float k30;
    float k31;
    float k32;
    float k33;
    float k34;
    float k35;
    float k36;
    float k37;
    float k38;
    float k39;
    float n;
} Log;

typedef struct ManyKeys {
    float* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    Log log;
    int episode_tick;
} ManyKeys;

void c_reset(ManyKeys* env) {
    env->episode_tick = 0;
    env->observations[0] = 0.0f;
}

void c_step(ManyKeys* env) {
    env->episode_tick += 1;
    env->rewards[0] = 0.0f;
    env->terminals[0] = 0;
    if (env->actions[0] == 1) {
        env->terminals[0] = 1;
        float* fields = &env->log.k0;
        for (int j = 0; j < 40; ++j) fields[j] += (float)(j * env->episode_tick);
        env->log.n += 1;
        env->episode_tick = 0;
    }
    env->observations[0] = (float)env->episode_tick;
}

void c_render(ManyKeys* env) {}

void c_close(ManyKeys* env) {}
