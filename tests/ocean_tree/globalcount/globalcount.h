/* globalcount — a deliberately broken Ocean-style env for shoal's tests: it counts steps in a
 * process-wide global, so an env's observations depend on how many other envs stepped before
 * it. `shoal check` must catch it. Same layout and contract as a PufferLib Ocean env. */
#include <stdlib.h>
#include <string.h>
#include "raylib.h"

typedef struct Log {
    float score;
    float n;
} Log;

typedef struct GlobalCount {
    float* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    Log log;
    int length;
    int tick;
} GlobalCount;

static int global_steps = 0; /* the bug: shared by every env in the process */

void c_reset(GlobalCount* env) {
    env->tick = 0;
    env->observations[0] = 0.0f;
    env->observations[1] = (float)(rand() % 100);
}

void c_step(GlobalCount* env) {
    global_steps += 1;
    env->tick += 1;
    env->observations[0] = (float)global_steps;
    env->rewards[0] = env->actions[0] == 1 ? 1.0f : 0.0f;
    env->terminals[0] = 0;
    if (env->tick >= env->length) {
        env->terminals[0] = 1;
        env->log.score += (float)env->tick;
        env->log.n += 1.0f;
        c_reset(env);
    }
}

void c_render(GlobalCount* env) {
    DrawText("globalcount", 0, 0, 10, BLACK);
}

void c_close(GlobalCount* env) {}
