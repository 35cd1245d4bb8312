/* leaky — an Ocean-style env for the tests of `shoal check`'s verdicts. `mode` picks what it does:
 *   0: deterministic, no shared state, and observation 1 always NaN (check must pass);
 *   1: a process-wide step counter feeds only its Log, so only infos depend on other envs;
 *   2: the counter shows only in the observation of the step that reaches `length` (with shoal's
 *      time limit max_episode_steps = length that is the final observation, then c_reset
 *      overwrites it), so only final observations depend on other envs.
 *   3: crashes the process (a write through a null pointer) at its step number `length`.
 * Modes 1 to 3 must fail the check. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "raylib.h"

typedef struct Log {
    float score;
    float n;
} Log;

typedef struct Leaky {
    float* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    Log log;
    int length;
    int mode;
    int crash_address; /* 0: where mode 3 writes */
    int tick;
} Leaky;

static int leaky_steps = 0; /* shared by every env of the process (modes 1 and 2) */

void c_reset(Leaky* env) {
    env->tick = 0;
    env->observations[0] = (float)(rand() % 100);
    env->observations[1] = env->mode == 0 ? NAN : 0.0f;
}

void c_step(Leaky* env) {
    leaky_steps += 1;
    env->tick += 1;
    env->observations[0] = (float)(env->tick + env->actions[0]);
    env->observations[1] = env->mode == 0 ? NAN : 0.0f;
    env->rewards[0] = env->actions[0] == 1 ? 1.0f : 0.0f;
    env->terminals[0] = 0;
    if (env->mode == 3 && env->tick == env->length) *(volatile int*)(uintptr_t)env->crash_address = 1;
    if (env->mode == 2) {
        if (env->tick == env->length) env->observations[0] = (float)leaky_steps;
        return; /* episodes end by shoal's time limit */
    }
    if (env->tick >= env->length) {
        env->terminals[0] = 1;
        env->log.score += env->mode == 1 ? (float)leaky_steps : (float)env->tick;
        env->log.n += 1.0f;
        c_reset(env);
    }
}

void c_render(Leaky* env) {
    DrawText("leaky", 0, 0, 10, BLACK);
}

void c_close(Leaky* env) {}
