/* shoal_ocean_adapter.c — a PufferLib Ocean env as a shoal native env.
 *
 * Compiled once per env (and layout) with two generated inputs:
 *   SHOAL_OCEAN_CONFIG   a header from the env's Python class: name, spaces, agents per env,
 *                        the keyword parameters my_init reads and the stats my_log writes;
 *   SHOAL_OCEAN_BINDING  the env's binding.c, staged unmodified beside shoal's env_binding.h.
 *
 * The env struct of the binding (`Env`) lives inside shoal's own struct after `shoal_env base`.
 * Its buffer pointers are the env's rows of shoal's buffers; rand() is the env's shoal stream
 * (SHOAL_REPLACE_RAND, and random() likewise; srand() is a no-op, so clock- or pid-seeded envs
 * stay deterministic).
 *
 * Episodes: an Ocean env resets itself inside c_step and reports finished episodes by adding
 * to its Log (log.n counts them). After a step that raised log.n, the adapter hands my_log's
 * values to shoal's stats (slot 0 is n), clears the Log as PufferLib's vec_log does, and ends
 * shoal's episode without resetting again: shoal's reset callback skips c_reset once. So the
 * "final observation" of an Ocean env is what the env shows after that step (usually its next
 * episode's first), and time limits are the env's own (terminals), never shoal truncations.
 * The env writes rewards and terminals into arrays of its own that persist between steps, as
 * PufferLib's buffers do; shoal's rows get a copy after each step.
 */
#define SHOAL_REPLACE_RAND
#include <shoal/env.h>
/* BSD random()/srandom() are the same process-global generator under another name. */
#define random() shoal_rand()
#define srandom(seed) ((void)(seed))

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "shoal_ocean_runtime.h"
#include SHOAL_OCEAN_CONFIG
#include SHOAL_OCEAN_BINDING

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
_Static_assert(SHOAL_OCEAN_ITEM_SIZE(SHOAL_OCEAN_FIELD(terminals)) == 1,
               "shoal.ocean: `terminals` must be one byte per agent");

/** One keyword parameter as the core writes it (int32 or float32, see SHOAL_OCEAN_PARAMS). */
typedef union shoal_ocean_value {
    int32_t i;
    float f;
} shoal_ocean_value;

#define SHOAL_OCEAN_COUNT_PARAM(NAME, TYPE, DEFAULT, INDEX) +1
enum { SHOAL_OCEAN_NUM_PARAMS = 0 SHOAL_OCEAN_PARAMS(SHOAL_OCEAN_COUNT_PARAM) };
#define SHOAL_OCEAN_COUNT_STAT(NAME) +1
enum { SHOAL_OCEAN_NUM_STATS = 0 SHOAL_OCEAN_STATS(SHOAL_OCEAN_COUNT_STAT) };
_Static_assert(SHOAL_OCEAN_NUM_STATS <= SHOAL_MAX_STATS, "shoal.ocean: too many stats");

/** shoal's env struct around the binding's. A step touches the first cache line of `base` (the
 * core's fields), the binding's Env and the adapter's hot fields; these follow `base` directly so
 * that an env's step reads and writes as few cache lines as the env itself allows (after the
 * Log, which starts the Env and which only an episode end touches). Cold fields come last. */
typedef struct shoal_ocean_env {
    shoal_env base; /* Required first member (shoal/env.h) */
    Env env;
    /* The env's own rewards and terminals: PufferLib never clears them between steps and some
     * envs read them back (connect4 resets at the step after terminals[0] was set), while shoal's
     * core zeroes its buffers before each step. The env keeps these; shoal's rows get a copy. */
    float rewards[SHOAL_OCEAN_NUM_AGENTS];
    unsigned char terminals[SHOAL_OCEAN_NUM_AGENTS];
    unsigned char initialized; /* my_init ran (at the first reset) */
    unsigned char skip_reset;  /* the env already reset itself in c_step */
    /* The env's `actions` when it reads floats of discrete actions (SHOAL_OCEAN_CONVERT_ACTIONS). */
    float float_actions[SHOAL_OCEAN_CONVERT_ACTIONS ? SHOAL_OCEAN_ACTION_COUNT : 1];
    shoal_ocean_value params[SHOAL_OCEAN_NUM_PARAMS]; /* written by the core before init */
    const char* stat_keys[SHOAL_OCEAN_NUM_STATS];     /* my_log's key pointers, per stats slot */
} shoal_ocean_env;

#define SHOAL_OCEAN_PARAM_NAME(NAME, TYPE, DEFAULT, INDEX) NAME,
static const char* const shoal_ocean_param_names[] = {SHOAL_OCEAN_PARAMS(SHOAL_OCEAN_PARAM_NAME)};
#define SHOAL_OCEAN_PARAM_TYPE(NAME, TYPE, DEFAULT, INDEX) TYPE,
static const shoal_param_type shoal_ocean_param_types[] = {SHOAL_OCEAN_PARAMS(SHOAL_OCEAN_PARAM_TYPE)};
#define SHOAL_OCEAN_STAT_NAME(NAME) NAME,
static const char* const shoal_ocean_stat_names[] = {SHOAL_OCEAN_STATS(SHOAL_OCEAN_STAT_NAME)};

static void shoal_ocean_point_buffers(shoal_ocean_env* w) {
    Env* env = &w->env;
    env->observations = (__typeof__(env->observations))w->base.observations;
    env->rewards = (__typeof__(env->rewards))w->rewards;
    env->terminals = (__typeof__(env->terminals))w->terminals;
    if (SHOAL_OCEAN_CONVERT_ACTIONS)
        env->actions = (__typeof__(env->actions))(void*)w->float_actions;
    else
        env->actions = (__typeof__(env->actions))(uintptr_t)w->base.actions;
}

static int shoal_ocean_init(shoal_ocean_env* w) {
    shoal_ocean__current = &w->base;
    return 0;
}

/* PufferLib's env_init, run at the env's first reset: by then the core has seeded the env's
 * stream from (vector seed, global env index), so my_init's `seed` keyword and its rand() calls
 * are the same on every backend and thread count (a Serial env learns its index only then). */
static void shoal_ocean_first_reset(shoal_ocean_env* w) {
    shoal_ocean_point_buffers(w);
    PyObject entries[SHOAL_OCEAN_NUM_PARAMS + 1];
    for (int i = 0; i < SHOAL_OCEAN_NUM_PARAMS; ++i) {
        entries[i] = (PyObject){.name = shoal_ocean_param_names[i]};
        entries[i].number = shoal_ocean_param_types[i] == SHOAL_PARAM_INT32 ? (double)w->params[i].i
                                                                            : (double)w->params[i].f;
    }
    entries[SHOAL_OCEAN_NUM_PARAMS] = (PyObject){.name = "seed", .number = (double)(shoal_rng_next(&w->base.rng) >> 1)};
    PyObject kwargs = {.entries = entries, .count = SHOAL_OCEAN_NUM_PARAMS + 1, .owner = &w->base};
    PyObject args = {.owner = &w->base};
    memset(&w->env.log, 0, sizeof(Log));
    my_init(&w->env, &args, &kwargs);
    w->initialized = 1;
}

static inline void shoal_ocean_publish(shoal_ocean_env* w) {
    memcpy(w->base.rewards, w->rewards, sizeof w->rewards);
    memcpy(w->base.terminals, w->terminals, sizeof w->terminals);
}

static void shoal_ocean_reset(shoal_ocean_env* w) {
    shoal_ocean__current = &w->base;
    if (w->skip_reset) {
        w->skip_reset = 0;
        return;
    }
    if (!w->initialized) {
        shoal_ocean_first_reset(w);
        if (w->base.failed) return;
    }
    c_reset(&w->env);
    shoal_ocean_publish(w);
}

/* Moves the env's Log into shoal's stats and clears it (as PufferLib's vec_log does). */
static void shoal_ocean_take_log(shoal_ocean_env* w) {
    PyObject dict = {.slots = w->base.stats, .slot_names = shoal_ocean_stat_names, .slot_keys = w->stat_keys,
                     .count = SHOAL_OCEAN_NUM_STATS};
    my_log(&dict, &w->env.log);
    w->base.stats[0] = w->env.log.n;
    memset(&w->env.log, 0, sizeof(Log));
}

static int shoal_ocean_step(shoal_ocean_env* w) {
    shoal_ocean__current = &w->base;
    if (SHOAL_OCEAN_CONVERT_ACTIONS) {
        const int32_t* actions = (const int32_t*)w->base.actions;
        for (int a = 0; a < SHOAL_OCEAN_ACTION_COUNT; ++a) w->float_actions[a] = (float)actions[a];
    }
    if (__builtin_expect(!w->initialized, 0)) {
        shoal_env_fail(&w->base, "stepped before its first reset");
        return SHOAL_EPISODE_RUNNING;
    }
    c_step(&w->env);
    shoal_ocean_publish(w);
    if (__builtin_expect(w->env.log.n == 0.0f, 1)) return SHOAL_EPISODE_RUNNING;
    shoal_ocean_take_log(w);
    w->skip_reset = 1;
    return SHOAL_EPISODE_OVER;
}

static void shoal_ocean_close(void* env) {
    shoal_ocean_env* w = (shoal_ocean_env*)env;
    shoal_ocean__current = &w->base;
    if (w->initialized) c_close(&w->env);
}

#define SHOAL_OCEAN_CALLBACKS(NAME) \
    SHOAL_ENV_CALLBACKS(NAME, shoal_ocean_env, shoal_ocean_init, shoal_ocean_reset, shoal_ocean_step)
SHOAL_OCEAN_CALLBACKS(SHOAL_OCEAN_NAME)

#define SHOAL_OCEAN_PARAM_ENTRY(NAME, TYPE, DEFAULT, INDEX)                                           \
    {NAME, TYPE, offsetof(shoal_ocean_env, params) + sizeof(shoal_ocean_value) * (INDEX), DEFAULT,        \
     TYPE == SHOAL_PARAM_INT32 ? (double)INT32_MIN : -HUGE_VAL,                                           \
     TYPE == SHOAL_PARAM_INT32 ? (double)INT32_MAX : HUGE_VAL, "keyword argument of the env's my_init"},
static const shoal_param shoal_ocean_params[] = {SHOAL_OCEAN_PARAMS(SHOAL_OCEAN_PARAM_ENTRY)};

#define SHOAL_OCEAN_SPEC(NAME) SHOAL_SPEC_CALLBACKS(NAME, shoal_ocean_env)
static const shoal_env_spec shoal_ocean_spec = {
    SHOAL_OCEAN_SPEC(SHOAL_OCEAN_NAME),
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
};

#define SHOAL_OCEAN_EXPORT(NAME) SHOAL_EXPORT_ENV(NAME, shoal_ocean_spec)
SHOAL_OCEAN_EXPORT(SHOAL_OCEAN_NAME)
