/* drawstep — a deliberately broken Ocean-style env for shoal's tests: it draws inside c_step,
 * outside rendering, where shoal has no raylib. shoal must report that as an EnvError naming the
 * call, not crash. Same layout and contract as a PufferLib Ocean env. */
#include <stdlib.h>
#include <string.h>
#include "raylib.h"

typedef struct Log {
    float score;
    float n;
} Log;

typedef struct DrawStep {
    float* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    Log log;
} DrawStep;

void c_reset(DrawStep* env) {
    env->observations[0] = 0.0f;
}

void c_step(DrawStep* env) {
    DrawText("stepping", 0, 0, 10, BLACK); /* the bug: drawing belongs in c_render */
    env->observations[0] += 1.0f;
    env->rewards[0] = 0.0f;
    env->terminals[0] = 0;
}

void c_render(DrawStep* env) {
    DrawText("drawstep", 0, 0, 10, BLACK);
}

void c_close(DrawStep* env) {}
