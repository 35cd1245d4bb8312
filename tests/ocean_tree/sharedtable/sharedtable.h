/* A test env with state shared by the envs of a vector (MY_SHARED): a table of values built by
 * my_shared, which every env reads. Observations: [the table's build number, the value read]. */
#include <stdlib.h>
#include <string.h>

typedef struct {
    float perf;
    float score;
    float episode_return;
    float episode_length;
    float n;
} Log;

typedef struct {
    int* values;
    int count;
    int build; /* how many tables this library built before this one, plus one */
} Table;

typedef struct {
    Log log;
    unsigned char* observations;
    int* actions;
    float* rewards;
    unsigned char* terminals;
    const Table* table;
    int length;
    int tick;
    int cursor;
} SharedTable;

static int tables_built;

static void show(SharedTable* env) {
    env->observations[0] = (unsigned char)env->table->build;
    env->observations[1] = (unsigned char)env->table->values[env->cursor];
}

void c_reset(SharedTable* env) {
    env->tick = 0;
    env->cursor = rand() % env->table->count;
    show(env);
}

void c_step(SharedTable* env) {
    env->tick += 1;
    env->cursor = (env->cursor + 1 + env->actions[0]) % env->table->count;
    env->rewards[0] = env->table->values[env->cursor] / 255.0f;
    env->terminals[0] = 0;
    env->log.episode_return += env->rewards[0];
    if (env->tick >= env->length) {
        env->terminals[0] = 1;
        env->log.episode_length += env->tick;
        env->log.score += env->table->build;
        env->log.perf += 1;
        env->log.n += 1;
        c_reset(env);
        return;
    }
    show(env);
}

void c_render(SharedTable* env) {
    (void)env;
}

void c_close(SharedTable* env) {
    (void)env;
}
