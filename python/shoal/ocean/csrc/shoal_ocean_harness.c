/* shoal_ocean_harness.c — an Ocean env without shoal: PufferLib's vec_step loop in plain C.
 *
 * Built from the same staged sources, config header and flags as the env's shoal library
 * (shoal.ocean.build.build_harness). Envs are calloc'ed, get their rows of plain buffers and
 * my_init's keyword arguments (the config's defaults, seed = the env's 31-bit shoal seed, as
 * shoal passes them), then each step runs `for (i...) c_step(&envs[i])`, like PufferLib's
 * vec_step: nothing is zeroed between steps and the Log is never cleared.
 *
 *   harness trace NUM_ENVS STEPS SEED ACTIONS OUT  reads STEPS rows of int32 (or float32 for Box)
 *       actions from ACTIONS; writes the observations after reset, then per step observations,
 *       rewards and terminals to OUT. Built with SHOAL_OCEAN_HARNESS_SHOAL_RAND, rand() draws
 *       from each env's shoal stream (seeded as shoal seeds it), so trajectories compare with
 *       shoal's step for step.
 *   harness trace ... OUT LOG_INTERVAL LOGS  also runs PufferLib's vec_log after every LOG_INTERVAL-th
 *       step (every Log summed in float and cleared; if n > 0, divided by n and passed to my_log) and
 *       writes each report to LOGS as a line "STEP KEY=VALUE ..." (n first, then my_log's keys).
 *   harness bench NUM_ENVS STEPS SEED [ACTIONS]  steps actions drawn in advance (the rows of
 *       ACTIONS in turn, else its own random rows) and prints "<seconds> <agent steps> <cpu seconds>"
 *       (wall time, then the thread's CPU time, which leaves out what other processes took);
 *       rand() is libc's, seeded with srand() as PufferLib does.
 */
#include <shoal/env.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef SHOAL_OCEAN_HARNESS_SHOAL_RAND
#define SHOAL_OCEAN_OWN_RAND /* rand() is each env's stream, as in shoal */
#endif
#include "shoal_ocean_runtime.h"
/* Some envs' c_close ends with free(env) (grid's, tower_climb's: PufferLib's classes of those envs
 * never call it); the harness's envs are one array, so that free does nothing, as in shoal. */
static const void* harness_closing;
static void harness_free(void* pointer) {
    if (pointer != harness_closing) free(pointer);
}
#define free(pointer) harness_free(pointer)
#include SHOAL_OCEAN_CONFIG
#include "shoal_ocean_files.h" /* the binding's fopen: resource files found in its tree */
#include SHOAL_OCEAN_BINDING
#include "shoal_ocean_shared.h"
#undef fopen
#undef free

#define HARNESS_FLOAT_ACTIONS _Generic((((Env*)0)->actions), float*: 1, default: 0)
#define HARNESS_FLOAT_TERMINALS _Generic((((Env*)0)->terminals), float*: 1, default: 0)
#define HARNESS_COUNT(NAME, TYPE, DEFAULT, INDEX) +1
enum { HARNESS_NUM_PARAMS = 0 SHOAL_OCEAN_PARAMS(HARNESS_COUNT) };
#define HARNESS_NAME(NAME, TYPE, DEFAULT, INDEX) NAME,
static const char* const harness_names[] = {SHOAL_OCEAN_PARAMS(HARNESS_NAME)};
#define HARNESS_VALUE(NAME, TYPE, DEFAULT, INDEX)             \
    (TYPE == SHOAL_PARAM_FLOAT32   ? (double)(float)(DEFAULT) \
     : TYPE == SHOAL_PARAM_FLOAT64 ? (double)(DEFAULT)        \
                                   : (double)(int32_t)(DEFAULT)),
static const double harness_defaults[] = {SHOAL_OCEAN_PARAMS(HARNESS_VALUE)};
#define HARNESS_KIND(NAME, TYPE, DEFAULT, INDEX) SHOAL_OCEAN_PARAM_KIND(TYPE),
static const int harness_kinds[] = {SHOAL_OCEAN_PARAMS(HARNESS_KIND)};

static const int32_t obs_shape[] = SHOAL_OCEAN_OBS_SHAPE;
static const int32_t action_nvec[] = SHOAL_OCEAN_ACTION_NVEC;

/* The envs here are not shoal's: a rendering stub called by env code has no env to report to. */
static shoal_env* shoal_ocean_env_of_rand_state(uint64_t* state) {
    (void)state;
    return NULL;
}

#define HARNESS_STAT_NAME(NAME) NAME,
static const char* const harness_stat_names[] = {SHOAL_OCEAN_STATS(HARNESS_STAT_NAME)};
enum { HARNESS_NUM_STATS = sizeof harness_stat_names / sizeof harness_stat_names[0] };

/* PufferLib's vec_log (env_binding.h), float for float; a report line if n > 0. */
static void harness_vec_log(Env* envs, long num_envs, long step, FILE* logs) {
    enum { FIELDS = sizeof(Log) / sizeof(float) };
    Log aggregate;
    memset(&aggregate, 0, sizeof aggregate);
    for (long i = 0; i < num_envs; ++i)
        for (int j = 0; j < FIELDS; ++j) {
            ((float*)&aggregate)[j] += ((float*)&envs[i].log)[j];
            ((float*)&envs[i].log)[j] = 0.0f;
        }
    if (aggregate.n == 0.0f) return;
    const float n = aggregate.n;
    for (int j = 0; j < FIELDS; ++j) ((float*)&aggregate)[j] /= n;
    float slots[HARNESS_NUM_STATS] = {0};
    PyObject dict = {.slots = slots, .slot_names = harness_stat_names, .count = HARNESS_NUM_STATS};
    my_log(&dict, &aggregate);
    slots[0] = n;
    fprintf(logs, "%ld", step);
    for (int s = 0; s < HARNESS_NUM_STATS; ++s) fprintf(logs, " %s=%.9g", harness_stat_names[s], (double)slots[s]);
    fputc('\n', logs);
}

static void die(const char* what) {
    fprintf(stderr, "harness: %s\n", what);
    exit(2);
}

int main(int argc, char** argv) {
    if (argc < 5)
        die("usage: harness trace NUM_ENVS STEPS SEED ACTIONS OUT [LOG_INTERVAL LOGS] | bench NUM_ENVS STEPS SEED "
            "[ACTIONS [FINAL]]");
    const int trace = strcmp(argv[1], "trace") == 0;
    const long num_envs = atol(argv[2]), steps = atol(argv[3]);
    const uint64_t seed = strtoull(argv[4], NULL, 10);
    if (trace && argc < 7) die("trace needs ACTIONS and OUT");
    const long agents = num_envs * SHOAL_OCEAN_NUM_AGENTS;
    size_t obs_size = 1;
    for (int d = 0; d < SHOAL_OCEAN_OBS_NDIM; ++d) obs_size *= (size_t)obs_shape[d];
    const size_t obs_row = obs_size * SHOAL_OCEAN_OBS_ITEM_SIZE;
    const long action_count = agents * SHOAL_OCEAN_ACTION_DIMS;
    const int box = SHOAL_OCEAN_ACTION_KIND == SHOAL_ACTION_BOX;

    Env* envs = calloc((size_t)num_envs, sizeof(Env));
    uint64_t* rand_states = calloc((size_t)num_envs, sizeof(uint64_t));
    unsigned char* observations = calloc((size_t)agents, obs_row);
    int32_t* int_actions = calloc((size_t)action_count, sizeof(int32_t));
    float* float_actions = calloc((size_t)action_count, sizeof(float));
    float* rewards = calloc((size_t)agents, sizeof(float));
    unsigned char* terminals = calloc((size_t)agents, 1);
    float* float_terminals = calloc((size_t)agents, sizeof(float)); /* an env with float* terminals */
    if (!envs || !rand_states || !observations || !int_actions || !float_actions || !rewards || !terminals ||
        !float_terminals)
        die("out of memory");
    (void)rand_states;

#ifdef SHOAL_OCEAN_SHARED_KEY
    /* PufferLib's class calls binding.shared() first; rand() on the same fixed stream as shoal's. */
    static shoal_env shared_owner;
    static char shared_error[SHOAL_ERROR_CAPACITY];
    shared_owner.error = shared_error;
    uint64_t shared_rand = SHOAL_OCEAN_SHARED_RAND_SEED;
#ifdef SHOAL_OCEAN_HARNESS_SHOAL_RAND
    shoal_ocean__rand_state = &shared_rand;
#endif
    (void)shared_rand;
    const PyObject* shared = shoal_ocean_run_shared(harness_names, harness_defaults, harness_kinds, &shared_owner);
    if (!shared) die(shared_error);
#endif

    /* PufferLib's vec_init then vec_reset, env by env. */
    PyObject entries[HARNESS_NUM_PARAMS + 2];
    for (long i = 0; i < num_envs; ++i) {
        Env* env = &envs[i];
        const long row = i * SHOAL_OCEAN_NUM_AGENTS;
        env->observations = (__typeof__(env->observations))(observations + row * obs_row);
        env->rewards = (__typeof__(env->rewards))(rewards + row);
        if (HARNESS_FLOAT_TERMINALS)
            env->terminals = (__typeof__(env->terminals))(void*)(float_terminals + row);
        else
            env->terminals = (__typeof__(env->terminals))(void*)(terminals + row);
        if (HARNESS_FLOAT_ACTIONS)
            env->actions = (__typeof__(env->actions))(void*)(float_actions + row * SHOAL_OCEAN_ACTION_DIMS);
        else
            env->actions = (__typeof__(env->actions))(void*)(int_actions + row * SHOAL_OCEAN_ACTION_DIMS);
        for (int p = 0; p < SHOAL_OCEAN_INIT_PARAMS; ++p)
            entries[p] = (PyObject){
                .ob_refcnt = 1, .kind = harness_kinds[p], .name = harness_names[p], .number = harness_defaults[p]};
#ifdef SHOAL_OCEAN_HARNESS_SHOAL_RAND
        /* As shoal does: the env's stream is seeded first, my_init's seed is its first draw. */
        shoal_rng stream;
        shoal_rng_seed(&stream, shoal_env_seed(seed, (uint64_t)i));
        rand_states[i] = shoal_ocean_rand_seed(&stream);
        shoal_ocean__rand_state = &rand_states[i];
        const double env_seed = (double)shoal_ocean_rand();
#else
        const double env_seed = (double)(i + (long)seed * num_envs);
        srand((unsigned)env_seed);
#endif
        int count = SHOAL_OCEAN_INIT_PARAMS;
        entries[count++] = (PyObject){.ob_refcnt = 1, .kind = SHOAL_OCEAN_PY_INT, .name = "seed", .number = env_seed};
#ifdef SHOAL_OCEAN_SHARED_KEY
        entries[count++] = shoal_ocean_shared_entry(shared);
#endif
        PyObject kwargs = {.ob_refcnt = 1, .kind = SHOAL_OCEAN_PY_DICT, .entries = entries, .count = count};
        PyObject args = {0};
        my_init(env, &args, &kwargs);
#ifndef SHOAL_OCEAN_HARNESS_SHOAL_RAND
        srand((unsigned)env_seed);
#endif
        c_reset(env);
    }

    if (trace) {
        FILE* in = fopen(argv[5], "rb");
        FILE* out = fopen(argv[6], "wb");
        if (!in || !out) die("cannot open ACTIONS or OUT");
        const long log_interval = argc > 8 ? atol(argv[7]) : 0;
        FILE* logs = log_interval > 0 ? fopen(argv[8], "w") : NULL;
        if (log_interval > 0 && !logs) die("cannot open LOGS");
        fwrite(observations, obs_row, (size_t)agents, out);
        for (long t = 0; t < steps; ++t) {
            if (box) {
                if (fread(float_actions, sizeof(float), (size_t)action_count, in) != (size_t)action_count)
                    die("short ACTIONS");
            } else {
                if (fread(int_actions, sizeof(int32_t), (size_t)action_count, in) != (size_t)action_count)
                    die("short ACTIONS");
                if (HARNESS_FLOAT_ACTIONS)
                    for (long a = 0; a < action_count; ++a) float_actions[a] = (float)int_actions[a];
            }
            for (long i = 0; i < num_envs; ++i) {
#ifdef SHOAL_OCEAN_HARNESS_SHOAL_RAND
                shoal_ocean__rand_state = &rand_states[i];
#endif
                c_step(&envs[i]);
            }
            fwrite(observations, obs_row, (size_t)agents, out);
            fwrite(rewards, sizeof(float), (size_t)agents, out);
            if (HARNESS_FLOAT_TERMINALS)
                for (long a = 0; a < agents; ++a) terminals[a] = float_terminals[a] != 0.0f;
            fwrite(terminals, 1, (size_t)agents, out);
            if (logs && (t + 1) % log_interval == 0) harness_vec_log(envs, num_envs, t, logs);
        }
        if (logs) fclose(logs);
        fclose(in);
        fclose(out);
        return 0;
    }

    /* bench: rows of actions drawn in advance, copied in each step like PufferLib's step does:
     * read from ACTIONS (argv[5], the same rows shoal's benchmark steps with) or drawn here. */
    long pool = 256;
    FILE* pool_file = argc > 5 ? fopen(argv[5], "rb") : NULL;
    if (argc > 5 && !pool_file) die("cannot open ACTIONS");
    if (pool_file) {
        fseek(pool_file, 0, SEEK_END);
        pool = ftell(pool_file) / (long)(sizeof(int32_t) * (size_t)action_count);
        fseek(pool_file, 0, SEEK_SET);
        if (pool < 1) die("ACTIONS holds no complete row");
    }
    int32_t* pool_int = malloc(sizeof(int32_t) * (size_t)(action_count * pool));
    float* pool_float = malloc(sizeof(float) * (size_t)(action_count * pool));
    if (!pool_int || !pool_float) die("out of memory");
    if (pool_file) {
        /* int32 rows, or float32 rows for Box actions (both 4 bytes) */
        void* rows = box ? (void*)pool_float : (void*)pool_int;
        if (fread(rows, 4, (size_t)(action_count * pool), pool_file) != (size_t)(action_count * pool))
            die("short ACTIONS");
        fclose(pool_file);
        for (long k = 0; k < action_count * pool && !box; ++k) pool_float[k] = (float)pool_int[k];
    } else {
        uint64_t state = 0x2545F4914F6CDD1DULL ^ seed;
        for (long k = 0; k < action_count * pool; ++k) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            const uint32_t draw = (uint32_t)(state >> 33);
            const int d = (int)(k % SHOAL_OCEAN_ACTION_DIMS);
            pool_int[k] = box ? 0 : (int32_t)(draw % (uint32_t)action_nvec[d]);
            pool_float[k] = box ? SHOAL_OCEAN_ACTION_LOW +
                                      (SHOAL_OCEAN_ACTION_HIGH - SHOAL_OCEAN_ACTION_LOW) * (float)draw / 2147483648.0f
                                : (float)pool_int[k];
        }
    }
    struct timespec start, end, cpu_start, cpu_end;
#ifdef SHOAL_OCEAN_HARNESS_SHOAL_RAND
    /* Each env on its own stream, and shoal's benchmark's steps (shoal.benchmark.warm_up: 20 untimed of rows 0, 1, ...,
     * then rows 0, 1, ... again): the very trajectories shoal steps, so the loop does the same work. */
    const long warmup = 20;
#else
    const long warmup = steps / 10 + 1; /* a tenth of the steps, untimed */
#endif
    for (long t = -warmup; t < steps; ++t) {
        if (t == 0) {
            clock_gettime(CLOCK_MONOTONIC, &start);
            clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_start);
        }
#ifdef SHOAL_OCEAN_HARNESS_SHOAL_RAND
        const long k = (t < 0 ? t + warmup : t) % pool;
#else
        const long k = ((t % pool) + pool) % pool;
#endif
        if (HARNESS_FLOAT_ACTIONS)
            memcpy(float_actions, pool_float + k * action_count, sizeof(float) * (size_t)action_count);
        else
            memcpy(int_actions, pool_int + k * action_count, sizeof(int32_t) * (size_t)action_count);
        for (long i = 0; i < num_envs; ++i) {
#ifdef SHOAL_OCEAN_HARNESS_SHOAL_RAND
            shoal_ocean__rand_state = &rand_states[i];
#endif
            c_step(&envs[i]);
        }
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu_end);
    clock_gettime(CLOCK_MONOTONIC, &end);
    const double seconds = (double)(end.tv_sec - start.tv_sec) + 1e-9 * (double)(end.tv_nsec - start.tv_nsec);
    const double cpu_seconds =
        (double)(cpu_end.tv_sec - cpu_start.tv_sec) + 1e-9 * (double)(cpu_end.tv_nsec - cpu_start.tv_nsec);
    printf("%.9f %ld %.9f\n", seconds, steps * agents, cpu_seconds);
    if (argc > 6) { /* FINAL: the last step's observations, rewards and terminals, as trace writes a step */
        FILE* final = fopen(argv[6], "wb");
        if (!final) die("cannot open FINAL");
        if (HARNESS_FLOAT_TERMINALS)
            for (long a = 0; a < agents; ++a) terminals[a] = float_terminals[a] != 0.0f;
        fwrite(observations, obs_row, (size_t)agents, final);
        fwrite(rewards, sizeof(float), (size_t)agents, final);
        fwrite(terminals, 1, (size_t)agents, final);
        fclose(final);
    }
    for (long i = 0; i < num_envs; ++i) {
        harness_closing = &envs[i];
        c_close(&envs[i]);
    }
    return 0;
}
