/* shoal/env.h — everything a native environment author sees.
 *
 * A native env is a C struct whose FIRST member is `shoal_env base`, plus three callbacks:
 *
 *   int  init (MyEnv* env);  after parameters are written into the struct; 0 = ok, else call
 *                            shoal_env_fail() and return nonzero (reported as a Python ValueError).
 *   void reset(MyEnv* env);  start an episode: write the observations of every agent.
 *   int  step (MyEnv* env);  read env->base.actions, write observations and rewards, set
 *                            terminals[i] for agents whose episode ended; return
 *                            SHOAL_EPISODE_OVER when the whole env must be reset, else
 *                            SHOAL_EPISODE_RUNNING.
 *
 * What the core does around those callbacks (identical on every backend):
 *   - before step: terminals and truncations of the env are zeroed;
 *   - after step: the env's tick counts up; when it reaches max_episode_steps every agent gets
 *     truncations[i] = 1 and the episode is over (a time limit is a truncation, not a terminal);
 *   - rows with terminals[i] or truncations[i] set get their observation copied to the
 *     final-observation buffer (the caller bootstraps from it), then, if the episode is over,
 *     masks are set to 1, reset() runs in the same step (same-step autoreset) and the episode
 *     return (sum of all agents' rewards), length and stats[] are added to the episode log.
 *
 * Randomness: use env->base.rng through shoal_rng_* (shoal/rng.h). Code written around rand()
 * can define SHOAL_REPLACE_RAND before including this header: rand() then draws from the rng of
 * the env being stepped by the calling thread (only in the file that uses SHOAL_ENV_CALLBACKS).
 * Never share random state between envs: results must not depend on the thread count.
 *
 * Threads: callbacks of different envs run concurrently on different threads; an env's
 * callbacks never run concurrently with themselves. Do not touch other envs or global state.
 */
#ifndef SHOAL_ENV_H
#define SHOAL_ENV_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "shoal/rng.h"

#ifdef __cplusplus
#define SHOAL_EXTERN_C extern "C"
#define SHOAL_THREAD_LOCAL thread_local
#define SHOAL_ALIGNOF(T) alignof(T)
#else
#define SHOAL_EXTERN_C
#define SHOAL_THREAD_LOCAL _Thread_local
#define SHOAL_ALIGNOF(T) _Alignof(T)
#endif
#define SHOAL_VISIBLE __attribute__((visibility("default")))
#define SHOAL_UNUSED __attribute__((unused))

#ifdef __cplusplus
extern "C" {
#endif

/** ABI version of shoal_env_spec; the core refuses specs built against another one. */
#define SHOAL_ABI_VERSION 1

#define SHOAL_EPISODE_RUNNING 0
#define SHOAL_EPISODE_OVER 1

#define SHOAL_MAX_OBS_DIMS 3
#define SHOAL_MAX_ACTION_DIMS 16
#define SHOAL_MAX_STATS 8
#define SHOAL_ERROR_CAPACITY 160

typedef enum shoal_dtype {
    SHOAL_FLOAT32 = 0,
    SHOAL_UINT8 = 1,
    SHOAL_INT8 = 2,
    SHOAL_INT32 = 3,
} shoal_dtype;

typedef enum shoal_action_kind {
    SHOAL_ACTION_DISCRETE = 0,      /* one int32 per agent in [0, action_nvec[0]) */
    SHOAL_ACTION_MULTIDISCRETE = 1, /* action_dims int32 per agent, each in [0, action_nvec[d]) */
    SHOAL_ACTION_BOX = 2,           /* action_dims float32 per agent in [action_low, action_high] */
} shoal_action_kind;

/** The part of every env struct that the core owns and fills; an env reads its buffers here. */
typedef struct shoal_env {
    void* observations;     /* num_agents * obs_size elements of the spec's obs_dtype */
    const void* actions;    /* num_agents * action_dims elements: int32, or float32 for BOX */
    float* rewards;         /* num_agents; zeroed by the core before each step */
    uint8_t* terminals;     /* num_agents, 0 or 1; zeroed by the core before each step */
    uint8_t* truncations;   /* num_agents, 0 or 1; zeroed by the core before each step */
    uint8_t* masks;         /* num_agents, 1 = agent present; set to 1 by the core before reset */
    shoal_rng rng;          /* this env's own random stream */
    int64_t env_index;      /* global index of this env in the vector */
    int32_t num_agents;
    uint32_t tick;          /* steps since the last reset (core-managed) */
    double episode_return;  /* sum of every agent's rewards this episode (core-managed) */
    float stats[SHOAL_MAX_STATS]; /* episode stats the env accumulates; summed into the log at
                                     episode end and zeroed by the core on reset */
    int32_t failed;         /* set by shoal_env_fail */
    char* error;            /* SHOAL_ERROR_CAPACITY bytes owned by the core (kept off the hot lines) */
} shoal_env;

typedef enum shoal_param_type {
    SHOAL_PARAM_INT32 = 0,
    SHOAL_PARAM_FLOAT32 = 1,
} shoal_param_type;

/** A keyword parameter of the env, written by the core into the struct before init(). */
typedef struct shoal_param {
    const char* name;
    shoal_param_type type;
    size_t offset;          /* offsetof(MyEnv, field) */
    double default_value;
    double min_value;       /* inclusive bounds, checked in Python before any env is built */
    double max_value;
    const char* doc;
} shoal_param;

#define SHOAL_PARAM_INT(TYPE, FIELD, DEFAULT, MIN, MAX, DOC) \
    {#FIELD, SHOAL_PARAM_INT32, offsetof(TYPE, FIELD), (DEFAULT), (MIN), (MAX), (DOC)}
#define SHOAL_PARAM_FLOAT(TYPE, FIELD, DEFAULT, MIN, MAX, DOC) \
    {#FIELD, SHOAL_PARAM_FLOAT32, offsetof(TYPE, FIELD), (DEFAULT), (MIN), (MAX), (DOC)}
#define SHOAL_COUNT(ARRAY) ((int32_t)(sizeof(ARRAY) / sizeof((ARRAY)[0])))

/** Everything the core needs to know about an env type: the small C ABI between them. */
typedef struct shoal_env_spec {
    uint32_t abi_version;   /* SHOAL_ABI_VERSION */
    const char* name;
    const char* doc;
    size_t env_size;        /* sizeof(MyEnv) */
    size_t env_align;       /* alignof(MyEnv) */

    int32_t num_agents;     /* agents per env */
    shoal_dtype obs_dtype;
    int32_t obs_ndim;
    int32_t obs_shape[SHOAL_MAX_OBS_DIMS];
    double obs_low;         /* bounds of the observation Box */
    double obs_high;

    shoal_action_kind action_kind;
    int32_t action_dims;    /* 1 for DISCRETE */
    int32_t action_nvec[SHOAL_MAX_ACTION_DIMS];
    float action_low;       /* BOX only */
    float action_high;

    int32_t max_episode_steps; /* default time limit, 0 = none; overridable as a parameter */

    const shoal_param* params;
    int32_t num_params;
    const char* const* stat_names; /* names of stats[0..num_stats) */
    int32_t num_stats;

    int (*init)(void* env);
    void (*reset)(void* env);
    int (*step)(void* env);
    void (*close)(void* env); /* optional: free what init allocated */
} shoal_env_spec;

/** Reports an error from env code; the core raises it in Python after the call, naming the env. */
static inline SHOAL_UNUSED void shoal_env_fail(shoal_env* env, const char* format, ...) {
    va_list args;
    va_start(args, format);
    vsnprintf(env->error, SHOAL_ERROR_CAPACITY, format, args);
    va_end(args);
    env->failed = 1;
}

/* ---- rand() drop-in ---------------------------------------------------------------------- */

/* The rng of the env whose callback runs on this thread; set by the callback trampolines. */
static SHOAL_THREAD_LOCAL shoal_rng* shoal__current_rng SHOAL_UNUSED;
static SHOAL_THREAD_LOCAL shoal_rng shoal__orphan_rng SHOAL_UNUSED;

/** Like rand(): uniform in [0, 2^31 - 1], drawn from the current env's stream. */
static inline SHOAL_UNUSED int shoal_rand(void) {
    shoal_rng* rng = shoal__current_rng ? shoal__current_rng : &shoal__orphan_rng;
    return (int)(shoal_rng_next(rng) >> 1);
}

#ifdef SHOAL_REPLACE_RAND
#undef rand
#undef srand
#define rand() shoal_rand()
/* Seeding belongs to the core (seed, env index); srand() calls in env code have no effect. */
#define srand(seed) ((void)(seed))
#endif

/* ---- declaring and exporting an env -------------------------------------------------------- */

/** Defines the void* trampolines the spec points to; they also route rand() to the env. */
#define SHOAL_ENV_CALLBACKS(NAME, TYPE, INIT, RESET, STEP)                   \
    static int shoal__##NAME##_init(void* env) {                             \
        shoal__current_rng = &((shoal_env*)env)->rng;                        \
        return INIT((TYPE*)env);                                             \
    }                                                                        \
    static void shoal__##NAME##_reset(void* env) {                           \
        shoal__current_rng = &((shoal_env*)env)->rng;                        \
        RESET((TYPE*)env);                                                   \
    }                                                                        \
    static int shoal__##NAME##_step(void* env) {                             \
        shoal__current_rng = &((shoal_env*)env)->rng;                        \
        return STEP((TYPE*)env);                                             \
    }

/** The identity and callback fields of a spec initializer (after SHOAL_ENV_CALLBACKS). */
#define SHOAL_SPEC_CALLBACKS(NAME, TYPE)                                     \
    .abi_version = SHOAL_ABI_VERSION, .name = #NAME, .env_size = sizeof(TYPE), \
    .env_align = SHOAL_ALIGNOF(TYPE), .init = shoal__##NAME##_init,          \
    .reset = shoal__##NAME##_reset, .step = shoal__##NAME##_step

/** Exports `const shoal_env_spec* shoal_env_spec_<NAME>(void)`, the symbol the core looks up. */
#define SHOAL_EXPORT_ENV(NAME, SPEC)                                         \
    SHOAL_EXTERN_C SHOAL_VISIBLE const shoal_env_spec* shoal_env_spec_##NAME(void) { return &(SPEC); }

#ifdef __cplusplus
}
#endif

#endif /* SHOAL_ENV_H */
