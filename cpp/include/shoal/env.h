/* shoal/env.h — everything a native environment author sees.
 *
 * A native env is a C struct whose FIRST member is `shoal_env base`, plus three callbacks:
 *
 *   int  init (MyEnv* env);  after parameters are written into the struct; 0 = ok, else call
 *                            shoal_env_fail() and return nonzero (raised as shoal.EnvError).
 *   void reset(MyEnv* env);  start an episode: write the observations of every agent.
 *   int  step (MyEnv* env);  read env->base.actions, write observations and rewards, set
 *                            terminals[i] for agents whose episode ended; return
 *                            SHOAL_EPISODE_OVER when the whole env must be reset, else
 *                            SHOAL_EPISODE_RUNNING.
 *
 * Every env struct starts zeroed (as PufferLib's calloc leaves it) before parameters and init().
 *
 * What the core does around those callbacks (identical on every backend), in shoal_step_envs()
 * below:
 *   - before step: rewards, terminals and truncations of the env are zeroed (the rows of a range
 *     of envs at once: the core places the rows of consecutive envs one after another);
 *   - after step: the env's tick counts up; when it reaches max_episode_steps every agent gets
 *     truncations[i] = 1 and the episode is over (a time limit is a truncation, not a terminal);
 *   - rows with terminals[i] or truncations[i] set get their observation copied to the
 *     final-observation buffer (the caller bootstraps from it), then, if the episode is over,
 *     the episode return (sum of all agents' rewards), length and stats[] are added to the
 *     episode log, masks are set to 1 and reset() runs in the same step (same-step autoreset).
 * SHOAL_ENV_CALLBACKS compiles that loop into the env's own file with step() and reset() inlined
 * (no call through a pointer per env); the core uses it through the spec's step_range.
 *
 * Randomness: use env->base.rng through shoal_rng_* (shoal/rng.h). Code written around rand()
 * can define SHOAL_REPLACE_RAND before including this header: rand() then draws from the rng of
 * the env being stepped by the calling thread (only in the file that uses SHOAL_ENV_CALLBACKS).
 * Never share random state between envs: results must not depend on the thread count.
 *
 * Threads: callbacks of different envs run concurrently on different threads; an env's
 * callbacks never run concurrently with themselves. Do not touch other envs or global state.
 */
#pragma once

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
/* Per compiler and object format: ELF/Mach-O export by visibility, PE (MSVC and MinGW) by dllexport;
 * MSVC spells the other attributes its own way or has none (then they are left out). */
#if defined(_WIN32)
#define SHOAL_VISIBLE __declspec(dllexport)
#else
#define SHOAL_VISIBLE __attribute__((visibility("default")))
#endif
#if defined(_MSC_VER) && !defined(__clang__)
#define SHOAL_UNUSED
#define SHOAL_FLATTEN
#define SHOAL_ALWAYS_INLINE __forceinline
#define SHOAL_OUT_OF_LINE __declspec(noinline)
#else
#define SHOAL_UNUSED __attribute__((unused))
/* Inlines every call in a function's body (the step loop then calls step and reset directly). */
#define SHOAL_FLATTEN __attribute__((flatten))
#define SHOAL_ALWAYS_INLINE __attribute__((always_inline))
/* Rare work kept out of a flattened loop, whose registers would otherwise spill in the hot path.
 * `hot`: GCC guesses a function called only from an unlikely branch is cold and optimises it for
 * size, turning its small memcpy/memset into `rep movsb`/`rep stosd`, whose start-up costs more
 * than the few bytes they move. */
#define SHOAL_OUT_OF_LINE __attribute__((noinline, hot))
#endif
/* Thread-locals keep the default model. initial-exec (one %fs-relative load) would take bytes of
 * glibc's static TLS reserve for dlopen()ed modules, a few hundred bytes a process shares: a process
 * that loads a few dozen env libraries would then fail to load the next ("cannot allocate memory in
 * static TLS block"). shoal's builds compile with TLS descriptors instead (-mtls-dialect=gnu2 on
 * x86-64, aarch64's default): an access is an indirect call returning the offset, no reserve needed. */

#ifdef __cplusplus
extern "C" {
#endif

/** ABI version of shoal_env_spec; the core refuses specs built against another one. */
#define SHOAL_ABI_VERSION 4

#define SHOAL_EPISODE_RUNNING 0
#define SHOAL_EPISODE_OVER 1

#define SHOAL_MAX_OBS_DIMS 3
#define SHOAL_MAX_ACTION_DIMS 64
#define SHOAL_MAX_STATS 16 /* stats[] of every env struct */
/* stats of an env that keeps its own log (spec.take_log): it has no stats[] slots to size, so only the
 * core's per-collection sums (off the hot path) are sized by this */
#define SHOAL_MAX_LOG_STATS 64
#define SHOAL_ERROR_CAPACITY 160

typedef enum shoal_dtype {
    SHOAL_FLOAT32 = 0,
    SHOAL_UINT8 = 1,
    SHOAL_INT8 = 2,
    SHOAL_INT32 = 3,
    SHOAL_FLOAT64 = 4,
} shoal_dtype;

typedef enum shoal_action_kind {
    SHOAL_ACTION_DISCRETE = 0,      /* one int32 per agent in [0, action_nvec[0]) */
    SHOAL_ACTION_MULTIDISCRETE = 1, /* action_dims int32 per agent, each in [0, action_nvec[d]) */
    SHOAL_ACTION_BOX = 2,           /* action_dims float32 per agent in [action_low, action_high], or per
                                       dimension in [action_lows[d], action_highs[d]] */
} shoal_action_kind;

/** The part of every env struct that the core owns and fills; an env reads its buffers here.
 * The fields a step touches come first, so they share the struct's first cache line. */
typedef struct shoal_env {
    void* observations;    /* num_agents * obs_size elements of the spec's obs_dtype */
    const void* actions;   /* num_agents * action_dims elements: int32, or float32 for BOX */
    float* rewards;        /* num_agents; zeroed by the core before each step */
    uint8_t* terminals;    /* num_agents, 0 or 1; zeroed by the core before each step */
    uint8_t* truncations;  /* num_agents, 0 or 1; zeroed by the core before each step */
    uint32_t tick;         /* steps since the last reset (core-managed) */
    int32_t failed;        /* set by shoal_env_fail */
    double episode_return; /* sum of every agent's rewards this episode (core-managed) */
    shoal_rng rng;         /* this env's own random stream */
    uint8_t* masks;        /* num_agents, 1 = agent present; set to 1 by the core before reset */
    int64_t env_index;     /* global index of this env in the vector */
    int32_t num_agents;
    float stats[SHOAL_MAX_STATS]; /* episode stats the env accumulates; summed into the log at
                                     episode end and zeroed by the core on reset */
    char* error;                  /* SHOAL_ERROR_CAPACITY bytes owned by the core (kept off the hot lines) */
    const void* shared;           /* the vector's shared read-only state (spec.configure), else NULL */
} shoal_env;

typedef enum shoal_param_type {
    SHOAL_PARAM_INT32 = 0,   /* int32_t field */
    SHOAL_PARAM_FLOAT32 = 1, /* float field */
    SHOAL_PARAM_FLOAT64 = 2, /* double field */
    SHOAL_PARAM_BOOL = 3,    /* int32_t field holding 0 or 1; given as a Python bool */
    SHOAL_PARAM_PAIR = 4,    /* double[2] field, given as a (low, high) pair with low <= high */
    SHOAL_PARAM_TEXT = 5,    /* const char* field (the core owns the text); the same for every env */
} shoal_param_type;

/** shoal_param.flags: the parameter must have one value for every env of a vector (configure reads
 * it: it decides the vector's layout or shared state). TEXT parameters always are. */
#define SHOAL_PARAM_PER_VECTOR 1u

/** A keyword parameter of the env, written by the core into the struct before init(). */
typedef struct shoal_param {
    const char* name;
    shoal_param_type type;
    size_t offset;        /* offsetof(MyEnv, field) */
    double default_value; /* PAIR: the default low */
    double min_value;     /* inclusive bounds of every number (both of a PAIR), checked in Python */
    double max_value;
    const char* doc;
    uint32_t flags;           /* SHOAL_PARAM_PER_VECTOR or 0 */
    double default_high;      /* PAIR: the default high */
    const char* default_text; /* TEXT: the default (NULL means "") */
} shoal_param;

#define SHOAL_PARAM_INT(TYPE, FIELD, DEFAULT, MIN, MAX, DOC) \
    {#FIELD, SHOAL_PARAM_INT32, offsetof(TYPE, FIELD), (DEFAULT), (MIN), (MAX), (DOC), 0, 0, NULL}
#define SHOAL_PARAM_FLOAT(TYPE, FIELD, DEFAULT, MIN, MAX, DOC) \
    {#FIELD, SHOAL_PARAM_FLOAT32, offsetof(TYPE, FIELD), (DEFAULT), (MIN), (MAX), (DOC), 0, 0, NULL}
#define SHOAL_PARAM_DOUBLE(TYPE, FIELD, DEFAULT, MIN, MAX, DOC) \
    {#FIELD, SHOAL_PARAM_FLOAT64, offsetof(TYPE, FIELD), (DEFAULT), (MIN), (MAX), (DOC), 0, 0, NULL}
#define SHOAL_PARAM_FLAG(TYPE, FIELD, DEFAULT, FLAGS, DOC) \
    {#FIELD, SHOAL_PARAM_BOOL, offsetof(TYPE, FIELD), (DEFAULT), 0, 1, (DOC), (FLAGS), 0, NULL}
#define SHOAL_PARAM_RANGE(TYPE, FIELD, LOW, HIGH, MIN, MAX, DOC) \
    {#FIELD, SHOAL_PARAM_PAIR, offsetof(TYPE, FIELD), (LOW), (MIN), (MAX), (DOC), 0, (HIGH), NULL}
#define SHOAL_PARAM_STRING(TYPE, FIELD, DEFAULT, DOC) \
    {#FIELD, SHOAL_PARAM_TEXT, offsetof(TYPE, FIELD), 0, 0, 0, (DOC), SHOAL_PARAM_PER_VECTOR, 0, (DEFAULT)}
#define SHOAL_COUNT(ARRAY) ((int32_t)(sizeof(ARRAY) / sizeof((ARRAY)[0])))

struct shoal_range;

/** Everything the core needs to know about an env type: the small C ABI between them. */
typedef struct shoal_env_spec {
    uint32_t abi_version; /* SHOAL_ABI_VERSION */
    const char* name;
    const char* doc;
    size_t env_size;  /* sizeof(MyEnv) */
    size_t env_align; /* alignof(MyEnv) */

    int32_t num_agents; /* agents per env */
    shoal_dtype obs_dtype;
    int32_t obs_ndim;
    int32_t obs_shape[SHOAL_MAX_OBS_DIMS];
    double obs_low; /* bounds of the observation Box */
    double obs_high;

    shoal_action_kind action_kind;
    int32_t action_dims; /* 1 for DISCRETE */
    int32_t action_nvec[SHOAL_MAX_ACTION_DIMS];
    float action_low; /* BOX only */
    float action_high;

    int32_t max_episode_steps; /* default time limit, 0 = none; overridable as a parameter */

    const shoal_param* params;
    int32_t num_params;
    const char* const* stat_names; /* names of stats[0..num_stats); num_stats <= SHOAL_MAX_STATS, or
                                      SHOAL_MAX_LOG_STATS with take_log */
    int32_t num_stats;

    int (*init)(void* env);
    void (*reset)(void* env);
    int (*step)(void* env);
    void (*close)(void* env); /* optional: free what init allocated */

    const char* class_name; /* optional: the Python class name (default: name) */
    /* optional: shoal_step_envs() with this env's step and reset inlined (SHOAL_SPEC_CALLBACKS
     * fills it in); without it the core runs the same loop calling step and reset by pointer. A spec
     * may give a loop of its own for envs with another contract: shoal.ocean's adapter runs
     * PufferLib's (the env keeps its rows and resets itself; see shoal_ocean_adapter.c). */
    uint64_t (*step_range)(struct shoal_range* range);
    /* optional: for envs that keep their own episode log between collections, as PufferLib's Ocean
     * envs keep their Log (shoal.ocean's adapter): adds the stats of the episodes the envs of `range`
     * ended since the last call to stat_sums[0, num_stats) and their count to *episodes, then clears
     * them. The core calls it when it collects the log of a range of envs (between steps, on the
     * caller) and keeps no tallies of its own for such an env: the range's return_sums, length_sums,
     * episode_counts and stat_sums are NULL in its step_range, which must then be the spec's own. */
    void (*take_log)(struct shoal_range* range, double* stat_sums, uint64_t* episodes);

    /* optional: per-dimension Box bounds (action_dims each). action_low/action_high then bound a box
     * inside every dimension's range: the core's fast check accepts what lies in it and hands every
     * other action to the exact per-dimension check (NaN bounds: every action goes there). */
    const float* action_lows;
    const float* action_highs;
    /* optional: sets up one vector, once, on the caller, before any env's init(). `spec` is the
     * vector's own copy of this spec, which configure may change where the parameters decide it
     * (obs_shape, action_dims and bounds, max_episode_steps) and whose `shared` it may set: state every
     * env of the vector reads through base.shared, read-only (several threads read it at once).
     * `params` is an env struct holding the vector's parameters (PER_VECTOR ones are the same in every
     * env; the others are env 0's). Returns 0, or nonzero with a message written to `error`
     * (SHOAL_ERROR_CAPACITY bytes), raised as shoal.EnvError. */
    int (*configure)(struct shoal_env_spec* spec, const void* params, char* error);
    void* shared;                         /* set by configure on the vector's copy; NULL otherwise */
    void (*release_shared)(void* shared); /* frees `shared` after the vector's last env closed */
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

/* The rng of the env whose callback runs on this thread; set by the callback trampolines of a file
 * that defines SHOAL_REPLACE_RAND (other files pay no thread-local store per env). */
static SHOAL_THREAD_LOCAL shoal_rng* shoal__current_rng SHOAL_UNUSED;
static SHOAL_THREAD_LOCAL shoal_rng shoal__orphan_rng SHOAL_UNUSED;

/** Like rand(): uniform in [0, 2^31 - 1], drawn from the current env's stream (in a file that
 * defines SHOAL_REPLACE_RAND before including this header). */
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
/* Makes `env` the one whose stream rand() draws from on this thread. */
#define SHOAL__ROUTE_RAND(env) (shoal__current_rng = &((shoal_env*)(env))->rng)
#else
#define SHOAL__ROUTE_RAND(env) ((void)(env))
#endif

/* ---- the step loop around the callbacks -------------------------------------------------- */

/** Envs [first, first + count) of a vector as one step sees them; filled in by the core. */
typedef struct shoal_range {
    unsigned char* envs;               /* the first env's struct */
    size_t stride;                     /* bytes from one env's struct to the next */
    size_t count;                      /* envs in the range */
    unsigned char* final_observations; /* the first env's rows of the final-observation buffer */
    size_t observation_bytes;          /* one agent's observation */
    int32_t num_agents;                /* per env */
    int32_t num_stats;
    uint32_t max_episode_steps; /* 0 = no time limit */
    int32_t failed;             /* out: set if an env reported a failure */
    double* return_sums;        /* episode log of the first env: count entries each ... */
    double* length_sums;
    uint64_t* episode_counts;
    double* stat_sums; /* ... and count * num_stats here */
} shoal_range;

/** Starts an episode of `env`: masks 1, tick, return and stats 0, then the env's reset(). */
static inline SHOAL_UNUSED void shoal_start_episode(shoal_env* env, void (*reset)(void*)) {
    if (env->num_agents == 1)
        env->masks[0] = 1;
    else
        memset(env->masks, 1, (size_t)env->num_agents);
    env->tick = 0;
    env->episode_return = 0;
    memset(env->stats, 0, sizeof env->stats);
    reset(env);
}

/* Copies `bytes` (width <= bytes <= 2 * width, width <= 16 and constant) as two overlapping moves of
 * `width` bytes: the first and the last `width` bytes. */
static inline SHOAL_UNUSED SHOAL_ALWAYS_INLINE void shoal__copy_ends(unsigned char* to, const unsigned char* from,
                                                                     size_t bytes, size_t width) {
    unsigned char head[16], tail[16];
    memcpy(head, from, width);
    memcpy(tail, from + bytes - width, width);
    memcpy(to, head, width);
    memcpy(to + bytes - width, tail, width);
}

/* memcpy of a few bytes whose count is known only at run time: a call to libc's memcpy costs more
 * than the copy of a few bytes, in an env step that is itself a few nanoseconds. Up to 32 bytes, two
 * overlapping moves of the widest size that fits; larger copies go to memcpy. */
static inline SHOAL_UNUSED SHOAL_ALWAYS_INLINE void shoal__copy_small(unsigned char* to, const unsigned char* from,
                                                                      size_t bytes) {
    if (bytes >= 16 && bytes <= 32)
        shoal__copy_ends(to, from, bytes, 16);
    else if (bytes >= 8 && bytes < 16)
        shoal__copy_ends(to, from, bytes, 8);
    else if (bytes >= 4 && bytes < 8)
        shoal__copy_ends(to, from, bytes, 4);
    else
        memcpy(to, from, bytes);
}

/* The rare part of a step, out of the hot loop: env `i` of `range` has an agent that terminated or
 * was truncated (final observations kept) and, if `over`, its episode ended (tallied, restarted). */
static SHOAL_UNUSED SHOAL_OUT_OF_LINE void shoal__finish_step(shoal_range* range, size_t i, shoal_env* env, int over,
                                                              void (*reset)(void*)) {
    const size_t agents = (size_t)range->num_agents, observation_bytes = range->observation_bytes;
    unsigned char* finals = range->final_observations + i * agents * observation_bytes;
    const unsigned char* observations = (const unsigned char*)env->observations;
    for (size_t a = 0; a < agents; ++a)
        if (env->terminals[a] | env->truncations[a])
            shoal__copy_small(finals + a * observation_bytes, observations + a * observation_bytes, observation_bytes);
    if (!over) return;
    const size_t num_stats = (size_t)range->num_stats;
    range->return_sums[i] += env->episode_return;
    range->length_sums[i] += env->tick;
    for (size_t s = 0; s < num_stats; ++s) range->stat_sums[i * num_stats + s] += env->stats[s];
    range->episode_counts[i] += 1;
    shoal_start_episode(env, reset);
}

/* The step loop for envs of `agents` agents each; inlined with a constant `agents` below. It holds
 * only what every step needs; the end of an episode is shoal__finish_step's. */
static inline SHOAL_UNUSED SHOAL_ALWAYS_INLINE uint64_t shoal__step_envs(shoal_range* range, int (*step)(void*),
                                                                         void (*reset)(void*), const size_t agents) {
    const uint32_t max_episode_steps = range->max_episode_steps;
    /* Locals, not range->... or env->...: env code's byte stores may alias anything, forcing reloads. */
    const size_t count = range->count, stride = range->stride;
    if (count == 0) return 0;
    /* The range's rows, consecutive env after env: zeroed at once. After a step the env's own
     * pointers are read again (its hot line): holding the row pointers in registers across an
     * env's step would spill others in envs that call libm. */
    const shoal_env* first = (const shoal_env*)range->envs;
    memset(first->rewards, 0, count * agents * sizeof(float));
    memset(first->terminals, 0, count * agents);
    memset(first->truncations, 0, count * agents);
    uint64_t episodes = 0;
    int32_t failed = 0;
    unsigned char* bytes = range->envs;
    for (size_t i = 0; i < count; ++i, bytes += stride) {
        shoal_env* env = (shoal_env*)bytes;
        int over = step(env) != SHOAL_EPISODE_RUNNING;
        env->tick += 1;
        double reward = 0;
        for (size_t a = 0; a < agents; ++a) reward += env->rewards[a];
        env->episode_return += reward;
        if (max_episode_steps != 0 && env->tick >= max_episode_steps) {
            for (size_t a = 0; a < agents; ++a) env->truncations[a] = 1;
            over = 1;
        }
        /* One branch for "something ended" (rare, unpredictable), the details out of line. */
        unsigned ended = 0;
        for (size_t a = 0; a < agents; ++a) ended |= env->terminals[a] | env->truncations[a];
        if (ended | over) {
            shoal__finish_step(range, i, env, over, reset);
            episodes += (uint64_t)over;
        }
        failed |= env->failed;
    }
    range->failed |= failed;
    return episodes;
}

/** One step of every env of `range` with same-step autoreset (see the top of this file); returns
 * how many episodes ended. Called with constant step/reset (SHOAL_ENV_CALLBACKS) it compiles to a
 * loop with both inlined, specialised for single-agent envs. */
static inline SHOAL_UNUSED uint64_t shoal_step_envs(shoal_range* range, int (*step)(void*), void (*reset)(void*)) {
    if (range->num_agents == 1) return shoal__step_envs(range, step, reset, 1);
    return shoal__step_envs(range, step, reset, (size_t)range->num_agents);
}

/* ---- declaring and exporting an env -------------------------------------------------------- */

/** Defines the void* trampolines the spec points to (they also route rand() to the env) and the
 * env's own step loop, shoal_step_envs() with both inlined. */
#define SHOAL_ENV_CALLBACKS(NAME, TYPE, INIT, RESET, STEP)                          \
    static int shoal__##NAME##_init(void* env) {                                    \
        SHOAL__ROUTE_RAND(env);                                                     \
        return INIT((TYPE*)env);                                                    \
    }                                                                               \
    static void shoal__##NAME##_reset(void* env) {                                  \
        SHOAL__ROUTE_RAND(env);                                                     \
        RESET((TYPE*)env);                                                          \
    }                                                                               \
    static int shoal__##NAME##_step(void* env) {                                    \
        SHOAL__ROUTE_RAND(env);                                                     \
        return STEP((TYPE*)env);                                                    \
    }                                                                               \
    static SHOAL_FLATTEN uint64_t shoal__##NAME##_step_range(shoal_range* range) {  \
        return shoal_step_envs(range, shoal__##NAME##_step, shoal__##NAME##_reset); \
    }

/** The identity and callback fields of a spec initializer (after SHOAL_ENV_CALLBACKS). */
#define SHOAL_SPEC_CALLBACKS(NAME, TYPE)                                                                         \
    .abi_version = SHOAL_ABI_VERSION, .name = #NAME, .env_size = sizeof(TYPE), .env_align = SHOAL_ALIGNOF(TYPE), \
    .init = shoal__##NAME##_init, .reset = shoal__##NAME##_reset, .step = shoal__##NAME##_step,                  \
    .step_range = shoal__##NAME##_step_range

/** Exports `const shoal_env_spec* shoal_env_spec_<NAME>(void)`, the symbol the core looks up. */
#define SHOAL_EXPORT_ENV(NAME, SPEC)                                                 \
    SHOAL_EXTERN_C SHOAL_VISIBLE const shoal_env_spec* shoal_env_spec_##NAME(void) { \
        return &(SPEC);                                                              \
    }

#ifdef __cplusplus
}
#endif
