/* shoal_ocean_adapter.c — a PufferLib Ocean env as a shoal native env.
 *
 * Compiled once per env (and layout) with two generated inputs:
 *   SHOAL_OCEAN_CONFIG   a header from the env's Python class: name, spaces, agents per env,
 *                        the keyword parameters my_init reads and the stats my_log writes;
 *   SHOAL_OCEAN_BINDING  the env's binding.c, staged unmodified beside shoal's env_binding.h.
 *
 * The env struct of the binding (`Env`) lives inside shoal's own struct after `shoal_env base`.
 * Its buffer pointers are the env's rows of shoal's buffers; rand() and random() draw from the
 * env's own stream, seeded from its shoal stream (shoal_ocean_runtime.h; srand() is a no-op, so
 * clock- or pid-seeded envs stay deterministic).
 *
 * Stepping: the spec's step_range is this file's own loop (shoal_ocean_step_range), PufferLib's
 * vec_step `for i: c_step(&envs[i])` with only what shoal's contract adds to it. The env writes its
 * rewards and terminals straight into its rows of shoal's buffers, which keep their values between
 * steps as PufferLib's do (some envs read them back: connect4 resets at the step after
 * terminals[0] was set), so the core zeroes nothing before a step; it zeroes the rows at a
 * vector reset.
 *
 * Episodes: an Ocean env resets itself inside c_step and reports finished episodes by adding
 * to its Log (log.n counts them). A step that raised log.n counts one shoal episode; the Log stays
 * in the env, summing, as in PufferLib, until the core collects the log (the spec's take_log: my_log's
 * values become shoal's stats, slot 0 is n, and the Log is cleared as PufferLib's vec_log clears
 * it). An agent whose terminal is set gets its observation copied to the final-observation
 * buffer: that is what the env shows after the step (usually its next episode's first). Time
 * limits are the env's own (terminals); shoal truncates only when given max_episode_steps: then an
 * env that ran that many steps since its last logged episode end is truncated and reset (c_reset).
 * shoal's own episode return and length are not kept: infos report the env's Log.
 */
#include <shoal/env.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOAL_OCEAN_OWN_RAND /* rand() is the env's stream */
#include "shoal_ocean_runtime.h"

#include "shoal_ocean_arena.h"
/* The binding's allocations, after the headers that declare the real functions (see the arena). */
#define malloc(size) shoal_ocean_malloc(size)
#define calloc(count, size) shoal_ocean_calloc(count, size)
#define realloc(pointer, size) shoal_ocean_realloc(pointer, size)
#define free(pointer) shoal_ocean_free(pointer)
#include SHOAL_OCEAN_CONFIG
#include "shoal_ocean_files.h" /* the binding's fopen: resource files found in its tree */
#include SHOAL_OCEAN_BINDING
#include "shoal_ocean_shared.h"
#undef fopen
#undef malloc
#undef calloc
#undef realloc
#undef free

/* Element types of the binding's buffer pointers, checked against the Python class. */
#define SHOAL_OCEAN_FIELD(NAME) (((Env*)0)->NAME)
#define SHOAL_OCEAN_IS_FLOAT_PTR(E) _Generic((E), float*: 1, default: 0)
#define SHOAL_OCEAN_IS_INT_PTR(E) _Generic((E), int*: 1, default: 0)
#define SHOAL_OCEAN_ITEM_SIZE(E) \
    _Generic((E), float*: 4, int*: 4, unsigned char*: 1, char*: 1, signed char*: 1, default: 0)

enum {
    SHOAL_OCEAN_FLOAT_ACTIONS = SHOAL_OCEAN_IS_FLOAT_PTR(SHOAL_OCEAN_FIELD(actions)),
    SHOAL_OCEAN_INT_ACTIONS = SHOAL_OCEAN_IS_INT_PTR(SHOAL_OCEAN_FIELD(actions)),
    SHOAL_OCEAN_OBS_ITEM = SHOAL_OCEAN_ITEM_SIZE(SHOAL_OCEAN_FIELD(observations)),
    /* `float* terminals` (nmmo3): the env writes floats into an array of the adapter's, read as
     * terminal where nonzero into shoal's byte rows after each step (never floats into byte rows). */
    SHOAL_OCEAN_FLOAT_TERMINALS = SHOAL_OCEAN_IS_FLOAT_PTR(SHOAL_OCEAN_FIELD(terminals)),
    /* Discrete actions arrive as int32; a binding that reads floats gets them converted. */
    SHOAL_OCEAN_CONVERT_ACTIONS = SHOAL_OCEAN_FLOAT_ACTIONS && SHOAL_OCEAN_ACTION_KIND != SHOAL_ACTION_BOX,
    SHOAL_OCEAN_ACTION_COUNT = SHOAL_OCEAN_NUM_AGENTS * SHOAL_OCEAN_ACTION_DIMS,
};
_Static_assert(SHOAL_OCEAN_FLOAT_ACTIONS || SHOAL_OCEAN_INT_ACTIONS,
               "shoal.ocean: the env's `actions` must be int* or float*");
_Static_assert(SHOAL_OCEAN_ACTION_KIND != SHOAL_ACTION_BOX || SHOAL_OCEAN_FLOAT_ACTIONS,
               "shoal.ocean: a Box action space needs `float* actions` in the env struct");
_Static_assert(SHOAL_OCEAN_OBS_ITEM == 0 || SHOAL_OCEAN_OBS_ITEM == SHOAL_OCEAN_OBS_ITEM_SIZE,
               "shoal.ocean: the env's `observations` element size differs from the Python class's dtype");
_Static_assert(SHOAL_OCEAN_ITEM_SIZE(SHOAL_OCEAN_FIELD(rewards)) == 4, "shoal.ocean: `rewards` must be float*");
_Static_assert(SHOAL_OCEAN_ITEM_SIZE(SHOAL_OCEAN_FIELD(terminals)) == 1 || SHOAL_OCEAN_FLOAT_TERMINALS,
               "shoal.ocean: `terminals` must be one byte or one float per agent");

/** One keyword parameter as the core writes it (SHOAL_OCEAN_PARAMS: int32 for ints and bools, a double
 * for floats, as PufferLib's unpack() reads Python's). */
typedef union shoal_ocean_value {
    int32_t i;
    float f;
    double d;
} shoal_ocean_value;

#define SHOAL_OCEAN_COUNT_PARAM(NAME, TYPE, DEFAULT, INDEX) +1
enum { SHOAL_OCEAN_NUM_PARAMS = 0 SHOAL_OCEAN_PARAMS(SHOAL_OCEAN_COUNT_PARAM) };
#define SHOAL_OCEAN_COUNT_STAT(NAME) +1
enum { SHOAL_OCEAN_NUM_STATS = 0 SHOAL_OCEAN_STATS(SHOAL_OCEAN_COUNT_STAT) };
_Static_assert(SHOAL_OCEAN_NUM_STATS <= SHOAL_MAX_LOG_STATS, "shoal.ocean: my_log writes more keys than shoal keeps");
_Static_assert(sizeof(Log) % sizeof(float) == 0,
               "shoal.ocean: the env's Log must hold floats only (as PufferLib's vec_log assumes)");

/* The layout. A step touches the binding's Env and the adapter's `seen_n` right after it; an
 * episode end also the rest of the Log, rand()'s state and the episode count. Every cache line more
 * that a step or an episode end touches is a miss once the envs outgrow the caches, so these bytes
 * are packed onto as few lines as they need (an 8-byte rand() state, see shoal_ocean_runtime.h, is
 * what fits in an Env's last line).
 *   - Where the Env starts: in an Env that starts with its Log (PufferLib's template), log.n begins
 *     a cache line, so that a step stays within as few lines as its hot bytes need (squared's one,
 *     not two); any other Env begins a line.
 *   - rand()'s state and the episode count go right after `seen_n` if they fit in the Env's last
 *     line (cartpole), else right before the Env, in the line of a template Env's first Log fields
 *     (squared). Both places exist; the other one is unused.
 * The lead is never empty (a zero-length array is not standard C). */
typedef struct shoal_ocean_episode_fields {
    uint64_t rand_state;
    uint32_t episode_steps; /* steps that ended an episode since the log was last taken */
} shoal_ocean_episode_fields;

enum {
    SHOAL_OCEAN_HOT_START = offsetof(Env, log) == 0 ? offsetof(Log, n) : 0,
    SHOAL_OCEAN_LEAD_BYTES = 64 - (sizeof(shoal_env) + sizeof(shoal_ocean_episode_fields) + SHOAL_OCEAN_HOT_START) % 64,
};

/** shoal's env struct around the binding's: the core's fields, the Env with the adapter's hot
 * fields around it, cold fields last. */
typedef struct shoal_ocean_env {
    shoal_env base;                             /* Required first member (shoal/env.h) */
    unsigned char lead[SHOAL_OCEAN_LEAD_BYTES]; /* unused */
    shoal_ocean_episode_fields before;
    Env env;
    /* The Log's n after the last step that ended an episode; SHOAL_OCEAN_UNINITIALIZED (a NaN) until
     * the first reset has run my_init, so that the step loop reads one field for both. */
    float seen_n;
    uint32_t episode_steps_after; /* the episode fields, where they fit in the Env's last line */
    uint64_t rand_state_after;
    /* The env's `actions` when it reads floats of discrete actions (SHOAL_OCEAN_CONVERT_ACTIONS). */
    float float_actions[SHOAL_OCEAN_CONVERT_ACTIONS ? SHOAL_OCEAN_ACTION_COUNT : 1];
    /* The env's `terminals` when it writes floats (SHOAL_OCEAN_FLOAT_TERMINALS). */
    float float_terminals[SHOAL_OCEAN_FLOAT_TERMINALS ? SHOAL_OCEAN_NUM_AGENTS : 1];
    shoal_ocean_value params[SHOAL_OCEAN_NUM_PARAMS]; /* written by the core before init */
    shoal_ocean_arena arena;                          /* what my_init allocated */
} shoal_ocean_env;

/* The vector's shared state (MY_SHARED): my_shared's result and everything it allocated. */
typedef struct shoal_ocean_shared {
    shoal_ocean_arena arena;
    PyObject handle;
} shoal_ocean_shared;

static shoal_ocean_arena* shoal_ocean_arena_of(shoal_env* env) {
    return &((shoal_ocean_env*)(void*)env)->arena;
}

/* Where rand()'s state and the episode count are (see the layout). */
#define SHOAL_OCEAN_LINE(OFFSET) ((OFFSET) / 64)
enum {
    SHOAL_OCEAN_EPISODE_AFTER = SHOAL_OCEAN_LINE(offsetof(shoal_ocean_env, rand_state_after) + 7) ==
                                SHOAL_OCEAN_LINE(offsetof(shoal_ocean_env, env) + sizeof(Env) - 1),
    SHOAL_OCEAN_RAND_STATE_OFFSET = SHOAL_OCEAN_EPISODE_AFTER ? offsetof(shoal_ocean_env, rand_state_after)
                                                              : offsetof(shoal_ocean_env, before.rand_state),
};
#define SHOAL_OCEAN_RAND_STATE(w) (SHOAL_OCEAN_EPISODE_AFTER ? &(w)->rand_state_after : &(w)->before.rand_state)
#define SHOAL_OCEAN_EPISODE_STEPS(w) \
    (*(SHOAL_OCEAN_EPISODE_AFTER ? &(w)->episode_steps_after : &(w)->before.episode_steps))

static shoal_env* shoal_ocean_env_of_rand_state(uint64_t* state) {
    return &((shoal_ocean_env*)(void*)((char*)state - SHOAL_OCEAN_RAND_STATE_OFFSET))->base;
}

#define SHOAL_OCEAN_UNINITIALIZED 0x7fc0beefu /* a quiet NaN's bits: no Log count */

/* my_init ran: the env can step. Compared as bits, whatever the float flags. */
static inline SHOAL_ALWAYS_INLINE int shoal_ocean_initialized(const shoal_ocean_env* w) {
    uint32_t bits;
    memcpy(&bits, &w->seen_n, sizeof bits);
    return bits != SHOAL_OCEAN_UNINITIALIZED;
}

/* Routes rand() (and shoal_ocean_current()) to the env. */
static inline SHOAL_ALWAYS_INLINE void shoal_ocean_route(shoal_ocean_env* w) {
    shoal_ocean__rand_state = SHOAL_OCEAN_RAND_STATE(w);
}

#define SHOAL_OCEAN_PARAM_NAME(NAME, TYPE, DEFAULT, INDEX) NAME,
static const char* const shoal_ocean_param_names[] = {SHOAL_OCEAN_PARAMS(SHOAL_OCEAN_PARAM_NAME)};
#define SHOAL_OCEAN_PARAM_TYPE(NAME, TYPE, DEFAULT, INDEX) TYPE,
static const shoal_param_type shoal_ocean_param_types[] = {SHOAL_OCEAN_PARAMS(SHOAL_OCEAN_PARAM_TYPE)};
#define SHOAL_OCEAN_STAT_NAME(NAME) NAME,
static const char* const shoal_ocean_stat_names[] = {SHOAL_OCEAN_STATS(SHOAL_OCEAN_STAT_NAME)};

static void shoal_ocean_point_buffers(shoal_ocean_env* w) {
    Env* env = &w->env;
    env->observations = (__typeof__(env->observations))w->base.observations;
    env->rewards = (__typeof__(env->rewards))w->base.rewards;
    if (SHOAL_OCEAN_FLOAT_TERMINALS)
        env->terminals = (__typeof__(env->terminals))(void*)w->float_terminals;
    else
        env->terminals = (__typeof__(env->terminals))(void*)w->base.terminals;
    if (SHOAL_OCEAN_CONVERT_ACTIONS)
        env->actions = (__typeof__(env->actions))(void*)w->float_actions;
    else
        env->actions = (__typeof__(env->actions))(uintptr_t)w->base.actions;
}

static int shoal_ocean_init(shoal_ocean_env* w) {
    const uint32_t uninitialized = SHOAL_OCEAN_UNINITIALIZED; /* my_init runs at the first reset */
    memcpy(&w->seen_n, &uninitialized, sizeof w->seen_n);
    return 0;
}

/* PufferLib's env_init, run at the env's first reset: by then the core has seeded the env's
 * stream from (vector seed, global env index), so my_init's `seed` keyword and its rand() calls
 * are the same on every backend and thread count (a Serial env learns its index only then). */
static void shoal_ocean_first_reset(shoal_ocean_env* w) {
    shoal_ocean_point_buffers(w);
    PyObject entries[SHOAL_OCEAN_NUM_PARAMS + 2];
    for (int i = 0; i < SHOAL_OCEAN_INIT_PARAMS; ++i) {
        const shoal_param_type type = shoal_ocean_param_types[i];
        entries[i] =
            (PyObject){.ob_refcnt = 1, .kind = SHOAL_OCEAN_PARAM_KIND(type), .name = shoal_ocean_param_names[i]};
        switch (type) {
            case SHOAL_PARAM_FLOAT32: entries[i].number = (double)w->params[i].f; break;
            case SHOAL_PARAM_FLOAT64: entries[i].number = w->params[i].d; break;
            default: entries[i].number = (double)w->params[i].i; break; /* int32, bool */
        }
    }
    int count = SHOAL_OCEAN_INIT_PARAMS;
    entries[count++] =
        (PyObject){.ob_refcnt = 1, .kind = SHOAL_OCEAN_PY_INT, .name = "seed", .number = (double)shoal_ocean_rand()};
#ifdef SHOAL_OCEAN_SHARED_KEY
    entries[count++] = shoal_ocean_shared_entry(&((const shoal_ocean_shared*)w->base.shared)->handle);
#endif
    PyObject kwargs = {.ob_refcnt = 1,
                       .kind = SHOAL_OCEAN_PY_DICT,
                       .name = "my_init",
                       .entries = entries,
                       .count = count,
                       .owner = &w->base};
    PyObject args = {.ob_refcnt = 1, .owner = &w->base};
    memset(&w->env.log, 0, sizeof(Log));
    shoal_ocean__filling = &w->arena;
    my_init(&w->env, &args, &kwargs);
    shoal_ocean__filling = NULL;
    w->seen_n = 0; /* not NaN: initialized */
}

/* The core's reset, at a vector reset (the rows were just zeroed; the log collected next is
 * discarded). Episodes the env ended itself never come here: it reset itself in c_step. A c_reset
 * that clears the Log leaves n where the step loop next compares it. */
static void shoal_ocean_reset(shoal_ocean_env* w) {
    if (!shoal_ocean_initialized(w)) {
        shoal_ocean_first_reset(w);
        if (w->base.failed) return;
    }
    c_reset(&w->env);
    w->seen_n = w->env.log.n;
}

/* The spec's take_log, PufferLib's vec_log over the envs of `range`: every env's Log, summed field by
 * field (a Log is floats only, as vec_log assumes) and cleared, as vec_log sums and clears them all
 * (an env that ended nothing since may hold part of an episode still running: vec_log counts it too).
 * The sum goes through my_log once; its values become shoal's stats (slot 0: n). The core adds the
 * blocks' sums in env order in double, so the report is the same on every thread count; PufferLib
 * sums in float, which differs only by its rounding. */
static void shoal_ocean_take_log(shoal_range* range, double* stat_sums, uint64_t* episodes) {
    enum { FIELDS = sizeof(Log) / sizeof(float) };
    double sums[FIELDS] = {0};
    uint64_t ended = 0;
    unsigned char* bytes = range->envs;
    for (size_t i = 0; i < range->count; ++i, bytes += range->stride) {
        shoal_ocean_env* w = (shoal_ocean_env*)bytes;
        if (!shoal_ocean_initialized(w)) continue;
        float fields[FIELDS];
        memcpy(fields, &w->env.log, sizeof fields);
        for (int k = 0; k < FIELDS; ++k) sums[k] += fields[k];
        ended += SHOAL_OCEAN_EPISODE_STEPS(w);
        memset(&w->env.log, 0, sizeof(Log));
        w->seen_n = 0;
        SHOAL_OCEAN_EPISODE_STEPS(w) = 0;
    }
    float fields[FIELDS];
    for (int k = 0; k < FIELDS; ++k) fields[k] = (float)sums[k];
    Log total;
    memcpy(&total, fields, sizeof total);
    float stats[SHOAL_MAX_LOG_STATS] = {0};
    PyObject dict = {.slots = stats, .slot_names = shoal_ocean_stat_names, .count = SHOAL_OCEAN_NUM_STATS};
    my_log(&dict, &total);
    stats[0] = total.n;
    for (int s = 0; s < SHOAL_OCEAN_NUM_STATS; ++s) stat_sums[s] += stats[s];
    *episodes += ended;
}

/* The agents' terminals after a step as bytes: the env's own row, or its floats converted into shoal's. */
static inline SHOAL_ALWAYS_INLINE const unsigned char* shoal_ocean_terminals(shoal_ocean_env* w) {
    if (!SHOAL_OCEAN_FLOAT_TERMINALS) return (const unsigned char*)(const void*)w->env.terminals;
    for (int a = 0; a < SHOAL_OCEAN_NUM_AGENTS; ++a) w->base.terminals[a] = w->float_terminals[a] != 0.0f;
    return w->base.terminals;
}

/* The env's discrete actions as the floats it reads (SHOAL_OCEAN_CONVERT_ACTIONS; else nothing). */
static inline SHOAL_ALWAYS_INLINE void shoal_ocean_convert_actions(shoal_ocean_env* w) {
    if (SHOAL_OCEAN_CONVERT_ACTIONS) {
        const int32_t* actions = (const int32_t*)w->base.actions;
        for (int a = 0; a < SHOAL_OCEAN_ACTION_COUNT; ++a) w->float_actions[a] = (float)actions[a];
    }
}

/* One c_step of the env (its actions converted already); 0 (and an env failure) if it cannot step
 * yet: before its first reset, my_init has not run. */
static inline SHOAL_ALWAYS_INLINE int shoal_ocean_c_step(shoal_ocean_env* w) {
    if (__builtin_expect(!shoal_ocean_initialized(w), 0)) {
        shoal_ocean_fail(&w->base, "%s", "stepped before its first reset");
        return 0;
    }
    c_step(&w->env);
    return 1;
}

/* The spec's step callback, which the spec must have; the vector never calls it, since
 * shoal_ocean_step_range (the spec's step_range) does the whole step, episode ends included. */
static int shoal_ocean_step(shoal_ocean_env* w) {
    shoal_ocean_convert_actions(w);
    shoal_ocean_c_step(w);
    return SHOAL_EPISODE_RUNNING;
}

/* The rare part of a step, out of the hot loop: env `i` of `range` terminated an agent, logged an
 * episode (`logged`) or reached shoal's time limit `limit` (`truncated`). Returns the shoal episodes
 * ended (counted in the env, whose Log keeps their stats until the core takes it). Without a time
 * limit it reads the Env's own pointers (hot), not base's (a line of its own). */
static SHOAL_OUT_OF_LINE uint64_t shoal_ocean_finish_step(shoal_range* range, size_t i, shoal_ocean_env* w, int logged,
                                                          int truncated, uint32_t limit) {
    /* The spec's obs_shape and obs_dtype give the core's range->observation_bytes; as a constant, a
     * small observation is copied by a few moves, not a call to memcpy. */
    const size_t agents = SHOAL_OCEAN_NUM_AGENTS, observation_bytes = SHOAL_OCEAN_OBS_BYTES;
    unsigned char* finals = range->final_observations + i * agents * observation_bytes;
    const unsigned char* observations = (const unsigned char*)w->env.observations;
    const unsigned char* terminals =
        SHOAL_OCEAN_FLOAT_TERMINALS ? w->base.terminals : (const unsigned char*)(const void*)w->env.terminals;
    if (truncated) {
        memset(w->base.truncations, 1, agents);
        memcpy(finals, observations, agents * observation_bytes);
    } else {
        for (size_t a = 0; a < agents; ++a)
            if (terminals[a])
                memcpy(finals + a * observation_bytes, observations + a * observation_bytes, observation_bytes);
    }
    if (!logged && !truncated) return 0;
    w->seen_n = w->env.log.n;
    SHOAL_OCEAN_EPISODE_STEPS(w) += 1;
    if (limit) w->base.tick = 0;
    if (truncated && !logged) {
        /* Some envs' c_reset clears their Log (snake's, cpr's): it still holds the episodes that ended
         * before this one and are not collected yet. */
        const Log kept = w->env.log;
        c_reset(&w->env);
        w->env.log = kept;
    }
    return 1;
}

/* The step loop of `range` (the spec's step_range); `limit` is shoal's time limit (0 = none),
 * constant in each of the two copies the compiler makes of this body. */
static inline SHOAL_ALWAYS_INLINE uint64_t shoal_ocean_step_envs(shoal_range* range, const uint32_t limit) {
    const size_t count = range->count, stride = range->stride, agents = SHOAL_OCEAN_NUM_AGENTS;
    if (count == 0) return 0;
    const unsigned failures = shoal_ocean__failures;
    if (limit) memset(((shoal_env*)range->envs)->truncations, 0, count * agents);
    uint64_t episodes = 0;
    unsigned char* bytes = range->envs;
    /* Each env's actions are converted while the env before it steps, not just before its own c_step,
     * which reads them first thing: the conversion's stores then have settled when c_step loads them. */
    shoal_ocean_convert_actions((shoal_ocean_env*)bytes);
    for (size_t i = 0; i < count; ++i, bytes += stride) {
        shoal_ocean_env* w = (shoal_ocean_env*)bytes;
        if (i + 1 < count) shoal_ocean_convert_actions((shoal_ocean_env*)(bytes + stride));
        shoal_ocean_route(w);
        if (!shoal_ocean_c_step(w)) continue;
        /* The env's own pointer to its terminals: the Env's lines are hot, shoal_env's may not be. */
        const unsigned char* terminals = shoal_ocean_terminals(w);
        unsigned ended = 0;
        for (size_t a = 0; a < agents; ++a) ended |= terminals[a];
        const int logged = w->env.log.n != w->seen_n;
        const int truncated = limit != 0 && ++w->base.tick >= limit;
        if (__builtin_expect(ended | logged | truncated, 0))
            episodes += shoal_ocean_finish_step(range, i, w, logged, truncated, limit);
    }
    if (shoal_ocean__failures != failures) range->failed = 1;
    return episodes;
}

static uint64_t shoal_ocean_step_range(shoal_range* range) {
    if (range->max_episode_steps == 0) return shoal_ocean_step_envs(range, 0);
    return shoal_ocean_step_envs(range, range->max_episode_steps);
}

static void shoal_ocean_close(void* env) {
    shoal_ocean_env* w = (shoal_ocean_env*)env;
    shoal_ocean_route(w);
    shoal_ocean__closing = &w->env;
    if (shoal_ocean_initialized(w)) c_close(&w->env);
    shoal_ocean__closing = NULL;
    shoal_ocean_arena_release(&w->arena);
}

/* The spec's callbacks route rand() to their env, as SHOAL_ENV_CALLBACKS's do; the step loop is
 * shoal_ocean_step_range, not SHOAL_ENV_CALLBACKS's generic one. */
static int shoal_ocean_init_callback(void* env) {
    shoal_ocean_route((shoal_ocean_env*)env);
    return shoal_ocean_init((shoal_ocean_env*)env);
}
static void shoal_ocean_reset_callback(void* env) {
    shoal_ocean_env* w = (shoal_ocean_env*)env;
    *SHOAL_OCEAN_RAND_STATE(w) = shoal_ocean_rand_seed(&w->base.rng); /* just seeded by the core */
    shoal_ocean_route(w);
    shoal_ocean_reset(w);
}
static int shoal_ocean_step_callback(void* env) {
    shoal_ocean_route((shoal_ocean_env*)env);
    return shoal_ocean_step((shoal_ocean_env*)env);
}

#ifdef SHOAL_OCEAN_SHARED_KEY
static void shoal_ocean_release_shared(void* shared) {
    shoal_ocean_arena_release(&((shoal_ocean_shared*)shared)->arena);
    free(shared);
}

/* The spec's configure: my_shared, once per vector, on the caller, with rand() on the fixed stream of
 * shoal_ocean_shared.h and allocations in the state's own arena. `params` is a zeroed env struct
 * holding the vector's parameters; it stands for the env that reports my_shared's errors. */
static int shoal_ocean_configure(shoal_env_spec* spec, const void* params, char* error) {
    shoal_ocean_env* scratch = (shoal_ocean_env*)(uintptr_t)params;
    shoal_ocean_shared* shared = (shoal_ocean_shared*)calloc(1, sizeof *shared);
    if (!shared) {
        snprintf(error, SHOAL_ERROR_CAPACITY, "%s", "out of memory for the shared state");
        return 1;
    }
    double values[SHOAL_OCEAN_NUM_PARAMS];
    int kinds[SHOAL_OCEAN_NUM_PARAMS];
    for (int i = 0; i < SHOAL_OCEAN_NUM_PARAMS; ++i) {
        const shoal_param_type type = shoal_ocean_param_types[i];
        kinds[i] = SHOAL_OCEAN_PARAM_KIND(type);
        values[i] = type == SHOAL_PARAM_FLOAT32   ? (double)scratch->params[i].f
                    : type == SHOAL_PARAM_FLOAT64 ? scratch->params[i].d
                                                  : (double)scratch->params[i].i;
    }
    scratch->base.error = error;
    *SHOAL_OCEAN_RAND_STATE(scratch) = SHOAL_OCEAN_SHARED_RAND_SEED;
    uint64_t* const route = shoal_ocean__rand_state;
    shoal_ocean_route(scratch);
    shoal_ocean__filling = &shared->arena;
    PyObject* handle = shoal_ocean_run_shared(shoal_ocean_param_names, values, kinds, &scratch->base);
    shoal_ocean__filling = NULL;
    shoal_ocean__rand_state = route;
    if (!handle) {
        char reason[SHOAL_ERROR_CAPACITY];
        snprintf(reason, sizeof reason, "%s", error);
        snprintf(error, SHOAL_ERROR_CAPACITY, "my_shared (the binding's shared state): %s", reason);
        shoal_ocean_release_shared(shared);
        return 1;
    }
    shared->handle = *handle;
    spec->shared = shared;
    return 0;
}
#define SHOAL_OCEAN_CONFIGURE shoal_ocean_configure
#define SHOAL_OCEAN_RELEASE_SHARED shoal_ocean_release_shared
#else
#define SHOAL_OCEAN_CONFIGURE NULL
#define SHOAL_OCEAN_RELEASE_SHARED NULL
#endif

#define SHOAL_OCEAN_PARAM_ENTRY(NAME, TYPE, DEFAULT, INDEX)                                   \
    {NAME,                                                                                    \
     TYPE,                                                                                    \
     offsetof(shoal_ocean_env, params) + sizeof(shoal_ocean_value) * (INDEX),                 \
     DEFAULT,                                                                                 \
     TYPE == SHOAL_PARAM_INT32  ? (double)INT32_MIN                                           \
     : TYPE == SHOAL_PARAM_BOOL ? 0.0                                                         \
                                : -HUGE_VAL,                                                  \
     TYPE == SHOAL_PARAM_INT32  ? (double)INT32_MAX                                           \
     : TYPE == SHOAL_PARAM_BOOL ? 1.0                                                         \
                                : HUGE_VAL,                                                   \
     (INDEX) < SHOAL_OCEAN_FIRST_SHARED_PARAM ? "keyword argument of the env's my_init"       \
                                              : "keyword argument of the binding's shared()", \
     (INDEX) < SHOAL_OCEAN_FIRST_SHARED_PARAM ? 0u : SHOAL_PARAM_PER_VECTOR},
static const shoal_param shoal_ocean_params[] = {SHOAL_OCEAN_PARAMS(SHOAL_OCEAN_PARAM_ENTRY)};

#define SHOAL_OCEAN_STRING(NAME) #NAME
#define SHOAL_OCEAN_NAME_STRING(NAME) SHOAL_OCEAN_STRING(NAME)
static const shoal_env_spec shoal_ocean_spec = {
    .abi_version = SHOAL_ABI_VERSION,
    .name = SHOAL_OCEAN_NAME_STRING(SHOAL_OCEAN_NAME),
    .env_size = sizeof(shoal_ocean_env),
    .env_align = SHOAL_ALIGNOF(shoal_ocean_env),
    .init = shoal_ocean_init_callback,
    .reset = shoal_ocean_reset_callback,
    .step = shoal_ocean_step_callback,
    .step_range = shoal_ocean_step_range,
    .doc = SHOAL_OCEAN_DOC,
    .num_agents = SHOAL_OCEAN_NUM_AGENTS,
    .obs_dtype = SHOAL_OCEAN_OBS_DTYPE,
    .obs_ndim = SHOAL_OCEAN_OBS_NDIM,
    .obs_shape = SHOAL_OCEAN_OBS_SHAPE,
    .obs_low = SHOAL_OCEAN_OBS_LOW,
    .obs_high = SHOAL_OCEAN_OBS_HIGH,
    .action_kind = SHOAL_OCEAN_ACTION_KIND,
    .action_dims = SHOAL_OCEAN_ACTION_DIMS,
    .action_nvec = SHOAL_OCEAN_ACTION_NVEC,
    .action_low = SHOAL_OCEAN_ACTION_LOW,
    .action_high = SHOAL_OCEAN_ACTION_HIGH,
    .max_episode_steps = 0,
    .params = shoal_ocean_params,
    .num_params = SHOAL_OCEAN_NUM_PARAMS,
    .stat_names = shoal_ocean_stat_names,
    .num_stats = SHOAL_OCEAN_NUM_STATS,
    .close = shoal_ocean_close,
    .take_log = shoal_ocean_take_log,
    .configure = SHOAL_OCEAN_CONFIGURE,
    .release_shared = SHOAL_OCEAN_RELEASE_SHARED,
};

#define SHOAL_OCEAN_EXPORT(NAME) SHOAL_EXPORT_ENV(NAME, shoal_ocean_spec)
SHOAL_OCEAN_EXPORT(SHOAL_OCEAN_NAME)
