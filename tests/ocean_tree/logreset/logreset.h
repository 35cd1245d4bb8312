/* logreset — an Ocean-style env for shoal's tests whose c_reset clears its Log, as snake's, blastar's
 * and cpr's do. Action 1 ends the episode inside c_step (it logs its length and restarts); action 0
 * goes on. Same layout and contract as a PufferLib Ocean env. */
#include <stdlib.h>
#include <string.h>
#include "raylib.h"

typedef struct Log {
    float score;
    float n;
} Log;

typedef struct LogReset {
    float* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    Log log;
    int episode_tick;
} LogReset;

void c_reset(LogReset* env) {
    env->log = (Log){0};
    env->episode_tick = 0;
    env->observations[0] = 0.0f;
}

void c_step(LogReset* env) {
    env->episode_tick += 1;
    env->rewards[0] = 0.0f;
    env->terminals[0] = 0;
    if (env->actions[0] == 1) {
        env->terminals[0] = 1;
        env->log.score += env->episode_tick;
        env->log.n += 1;
        env->episode_tick = 0;
    }
    env->observations[0] = (float)env->episode_tick;
}

void c_render(LogReset* env) {}

void c_close(LogReset* env) {}
