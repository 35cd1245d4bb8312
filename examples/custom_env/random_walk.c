/* random_walk — a template native env for shoal, annotated for authors.
 *
 * An agent walks on a line of `size` cells. It starts at a random cell; action 0 steps left,
 * action 1 steps right. Reaching the right end gives +1 and ends the episode (a terminal);
 * the left end gives -1 and ends it too. shoal's core adds the time limit (a truncation).
 */
#define SHOAL_REPLACE_RAND /* this file's rand() draws from the stepped env's own stream */
#include <shoal/env.h>

typedef struct RandomWalk {
    shoal_env base;     /* Required: first member. Buffers, rng and bookkeeping live here. */
    int32_t size;       /* parameter: number of cells */
    int32_t fail_after; /* parameter: report an error after this many steps (0 = never) */
    int32_t position;
    int32_t steps;
} RandomWalk;

static void observe(RandomWalk* env) {
    float* obs = (float*)env->base.observations; /* this env's rows only */
    obs[0] = (float)env->position / (float)(env->size - 1);
    obs[1] = (float)(env->size - 1 - env->position) / (float)(env->size - 1);
}

static int walk_init(RandomWalk* env) {
    /* Ranges are checked in Python from the param table; init checks what a range cannot say. */
    if (env->size % 2 == 0) {
        shoal_env_fail(&env->base, "size must be odd, got %d", env->size);
        return 1; /* raised in Python as shoal.EnvError naming the env */
    }
    return 0;
}

static void walk_reset(RandomWalk* env) {
    env->position = 1 + rand() % (env->size - 2); /* rand() here is the env's stream, thread-safe */
    observe(env);
}

static int walk_step(RandomWalk* env) {
    const int32_t action = ((const int32_t*)env->base.actions)[0];
    env->steps += 1;
    if (env->fail_after > 0 && env->steps >= env->fail_after) {
        /* Errors never abort: the core raises shoal.EnvError after the step, naming this env. */
        shoal_env_fail(&env->base, "failed on purpose after %d steps", env->steps);
    }
    env->position += action == 1 ? 1 : -1;
    observe(env);
    if (env->position == env->size - 1) {
        env->base.rewards[0] = 1.0f;
        env->base.terminals[0] = 1;
        env->base.stats[0] = 1.0f; /* "reached_goal", averaged over episodes in the infos */
        return SHOAL_EPISODE_OVER; /* the core keeps the final observation, then resets */
    }
    if (env->position == 0) {
        env->base.rewards[0] = -1.0f;
        env->base.terminals[0] = 1;
        return SHOAL_EPISODE_OVER;
    }
    return SHOAL_EPISODE_RUNNING;
}

static const shoal_param walk_params[] = {
    SHOAL_PARAM_INT(RandomWalk, size, 9, 3, 1000000, "cells on the line"),
    SHOAL_PARAM_INT(RandomWalk, fail_after, 0, 0, 1000000000, "report an error after this many steps (0 = never)"),
};
static const char* const walk_stats[] = {"reached_goal"};

SHOAL_ENV_CALLBACKS(random_walk, RandomWalk, walk_init, walk_reset, walk_step)

static const shoal_env_spec walk_spec = {
    SHOAL_SPEC_CALLBACKS(random_walk, RandomWalk),
    .doc = "Walk left or right on a line; +1 at the right end, -1 at the left end.",
    .num_agents = 1,
    .obs_dtype = SHOAL_FLOAT32,
    .obs_ndim = 1,
    .obs_shape = {2},
    .obs_low = 0.0,
    .obs_high = 1.0,
    .action_kind = SHOAL_ACTION_DISCRETE,
    .action_dims = 1,
    .action_nvec = {2},
    .max_episode_steps = 100,
    .params = walk_params,
    .num_params = SHOAL_COUNT(walk_params),
    .stat_names = walk_stats,
    .num_stats = SHOAL_COUNT(walk_stats),
};

SHOAL_EXPORT_ENV(random_walk, walk_spec)
