/* deep — a synthetic env whose CPU cost per step is a parameter, for benchmarking the pool.
 *
 * Each step runs `work` iterations of a serial integer recurrence (multiply, add, xor-shift)
 * seeded by the env's hidden state and the action. Every iteration depends on the previous one,
 * so the compiler can neither drop the chain (its result feeds the observation and the reward)
 * nor vectorize or reorder it, and the cost grows linearly with `work`.
 *
 * An iteration is a 6-cycle dependency chain (imul 3 + add + shift + xor), so the default work =
 * 20000 is about 120,000 cycles a step. cpp/tests/envs_test.cpp prints the time per iteration on
 * the machine it runs on.
 *
 *   observation  float32 {8} in [-1, 1]: the bytes of the hidden state, rescaled
 *   action       Discrete(4); enters the seed of the chain
 *   reward       in [0, 1), from the top bits of the chain's result
 *   terminal     with probability 1/100 per step, drawn from the env's rng
 *   time limit   200 steps (a truncation, applied by the core)
 *   params       work (int, default 20000): iterations per step, may differ per env
 */
#include "shoal/env.h"

#define DEEP_OBS_SIZE 8
#define DEEP_TERMINAL_ODDS 100
#define DEEP_MULTIPLIER UINT64_C(0xD1342543DE82EF95) /* odd 64-bit multiplier with good spectral score */

typedef struct Deep {
    shoal_env base;
    int32_t work;    /* param */
    uint64_t hidden; /* state the chain transforms; the observation shows its bytes */
} Deep;

static const shoal_param deep_params[] = {
    SHOAL_PARAM_INT(Deep, work, 20000, 0, 10000000, "iterations of the serial arithmetic chain per step"),
};

static void deep_write_observation(Deep* env) {
    float* observation = (float*)env->base.observations;
    for (int32_t i = 0; i < DEEP_OBS_SIZE; ++i)
        observation[i] = (float)((env->hidden >> (8 * i)) & 0xFF) / 127.5f - 1.0f;
}

static int deep_init(Deep* env) {
    if (env->work < 0) {
        shoal_env_fail(&env->base, "work must be >= 0, got %d", env->work);
        return 1;
    }
    return 0;
}

static void deep_reset(Deep* env) {
    env->hidden = (uint64_t)shoal_rng_next(&env->base.rng) << 32 | shoal_rng_next(&env->base.rng);
    deep_write_observation(env);
}

static int deep_step(Deep* env) {
    const uint64_t action = (uint64_t)(uint32_t)((const int32_t*)env->base.actions)[0];
    uint64_t h = env->hidden ^ ((action + 1) * SHOAL_GOLDEN_GAMMA);
    const int32_t work = env->work;
    for (int32_t i = 0; i < work; ++i) {
        h = h * DEEP_MULTIPLIER + (uint64_t)i;
        h ^= h >> 29;
    }
    env->hidden = shoal_mix64(h);
    deep_write_observation(env);
    env->base.rewards[0] = (float)(h >> 40) * (1.0f / 16777216.0f);
    if (shoal_rng_below(&env->base.rng, DEEP_TERMINAL_ODDS) != 0) return SHOAL_EPISODE_RUNNING;
    env->base.terminals[0] = 1;
    return SHOAL_EPISODE_OVER;
}

SHOAL_ENV_CALLBACKS(deep, Deep, deep_init, deep_reset, deep_step)

static const shoal_env_spec deep_spec = {
    SHOAL_SPEC_CALLBACKS(deep, Deep),
    .class_name = "Deep",
    .doc = "Synthetic benchmark env whose per-step CPU cost is set by the work parameter.",
    .num_agents = 1,
    .obs_dtype = SHOAL_FLOAT32,
    .obs_ndim = 1,
    .obs_shape = {DEEP_OBS_SIZE},
    .obs_low = -1,
    .obs_high = 1,
    .action_kind = SHOAL_ACTION_DISCRETE,
    .action_dims = 1,
    .action_nvec = {4},
    .max_episode_steps = 200,
    .params = deep_params,
    .num_params = SHOAL_COUNT(deep_params),
};

SHOAL_EXPORT_ENV(deep, deep_spec)
