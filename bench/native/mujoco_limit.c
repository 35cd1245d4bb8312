/* mujoco_limit.c — row (a) of bench/bench_mujoco.py: a MuJoCo task's own code in a bare C loop.
 *
 * Compiled per task with the task's C file included here (SHOAL_LIMIT_SOURCE, SHOAL_LIMIT_NAME) and the
 * flags shoal.mujoco compiles tasks with, against the same libmujoco. The loop keeps what makes the
 * result comparable with shoal: one model loaded by the task's configure(), an mjData per env, the
 * caller's actions copied into the action buffer every step, rewards and flags zeroed, same-step reset
 * and the time limit. It leaves out what shoal adds: episode logs, final observations, error checks,
 * chunking, threads and Python.
 *
 *   double shoal_mujoco_limit_sps(const char* xml_file, size_t num_envs, uint64_t steps_per_env)
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include SHOAL_LIMIT_SOURCE

#define SHOAL_LIMIT_CAT2(A, B) A##B
#define SHOAL_LIMIT_CAT(A, B) SHOAL_LIMIT_CAT2(A, B)
#define SHOAL_LIMIT_CALL(WHAT) SHOAL_LIMIT_CAT(SHOAL_LIMIT_CAT(shoal__, SHOAL_LIMIT_NAME), WHAT)
#define SHOAL_LIMIT_SPEC SHOAL_LIMIT_CAT(SHOAL_LIMIT_NAME, _spec)
#define SHOAL_LIMIT_BATCHES 16
#define SHOAL_LIMIT_WARMUP_STEPS 20

static double shoal_limit_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The spec's defaults written into `env`, `xml_file` for the TEXT parameter. */
static void shoal_limit_write_params(const shoal_env_spec* spec, unsigned char* env, const char* xml_file) {
    for (int32_t p = 0; p < spec->num_params; ++p) {
        const shoal_param* param = &spec->params[p];
        unsigned char* field = env + param->offset;
        if (param->type == SHOAL_PARAM_INT32 || param->type == SHOAL_PARAM_BOOL) {
            const int32_t value = (int32_t)param->default_value;
            memcpy(field, &value, sizeof value);
        } else if (param->type == SHOAL_PARAM_FLOAT32) {
            const float value = (float)param->default_value;
            memcpy(field, &value, sizeof value);
        } else if (param->type == SHOAL_PARAM_FLOAT64) {
            memcpy(field, &param->default_value, sizeof(double));
        } else if (param->type == SHOAL_PARAM_PAIR) {
            const double pair[2] = {param->default_value, param->default_high};
            memcpy(field, pair, sizeof pair);
        } else { /* TEXT: the model's path, the other texts' defaults */
            const char* text = strcmp(param->name, "xml_file") == 0 ? xml_file : param->default_text;
            memcpy(field, &text, sizeof text);
        }
    }
}

/** Env steps per second of `num_envs` envs stepped `steps_per_env` times with random actions
 * (after a warm-up); negative if the model does not load or memory runs out. */
SHOAL_EXTERN_C SHOAL_VISIBLE double shoal_mujoco_limit_sps(const char* xml_file, size_t num_envs,
                                                           uint64_t steps_per_env) {
    shoal_env_spec spec = SHOAL_LIMIT_SPEC;
    const size_t stride = (spec.env_size + 63) / 64 * 64;
    unsigned char* envs = aligned_alloc(64, stride * num_envs);
    char error[SHOAL_ERROR_CAPACITY];
    if (!envs) return -1.0;
    memset(envs, 0, stride * num_envs);
    shoal_limit_write_params(&spec, envs, xml_file);
    if (spec.configure(&spec, envs, error) != 0) return -2.0;
    const size_t obs = (size_t)spec.obs_shape[0], dims = (size_t)spec.action_dims;
    double* observations = malloc(num_envs * obs * sizeof(double));
    float* actions = malloc(num_envs * dims * sizeof(float));
    float* batches = malloc(SHOAL_LIMIT_BATCHES * num_envs * dims * sizeof(float));
    float* rewards = malloc(num_envs * sizeof(float));
    uint8_t* flags = calloc(3 * num_envs, 1);
    char* errors = malloc(num_envs * SHOAL_ERROR_CAPACITY);
    if (!observations || !actions || !batches || !rewards || !flags || !errors) return -1.0;
    uint64_t lcg = 12345;
    for (size_t k = 0; k < SHOAL_LIMIT_BATCHES * num_envs * dims; ++k) {
        lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
        const float low = spec.action_lows[k % dims], high = spec.action_highs[k % dims];
        batches[k] = low + (high - low) * (float)((lcg >> 40) * (1.0 / 16777216.0));
    }
    for (size_t i = 0; i < num_envs; ++i) {
        shoal_env* env = (shoal_env*)(envs + i * stride);
        if (i > 0) shoal_limit_write_params(&spec, (unsigned char*)env, xml_file);
        env->observations = observations + i * obs;
        env->actions = actions + i * dims;
        env->rewards = rewards + i;
        env->terminals = flags + i;
        env->truncations = flags + num_envs + i;
        env->masks = flags + 2 * num_envs + i;
        env->env_index = (int64_t)i;
        env->num_agents = 1;
        env->error = errors + i * SHOAL_ERROR_CAPACITY;
        env->shared = spec.shared;
        if (SHOAL_LIMIT_CALL(_init)(env) != 0) return -1.0;
        shoal_rng_seed(&env->rng, shoal_env_seed(0, i));
        SHOAL_LIMIT_CALL(_reset)(env);
    }
    const uint32_t limit = (uint32_t)spec.max_episode_steps;
    double start = 0.0;
    for (uint64_t t = 0; t < SHOAL_LIMIT_WARMUP_STEPS + steps_per_env; ++t) {
        if (t == SHOAL_LIMIT_WARMUP_STEPS) start = shoal_limit_now();
        memcpy(actions, batches + (t % SHOAL_LIMIT_BATCHES) * num_envs * dims, num_envs * dims * sizeof(float));
        for (size_t i = 0; i < num_envs; ++i) {
            shoal_env* env = (shoal_env*)(envs + i * stride);
            env->rewards[0] = 0.0f;
            env->terminals[0] = env->truncations[0] = 0;
            int over = SHOAL_LIMIT_CALL(_step)(env) != SHOAL_EPISODE_RUNNING;
            if (++env->tick >= limit && limit != 0) over = 1;
            if (over) {
                env->tick = 0;
                SHOAL_LIMIT_CALL(_reset)(env);
            }
        }
    }
    const double sps = (double)steps_per_env * (double)num_envs / (shoal_limit_now() - start);
    for (size_t i = 0; i < num_envs; ++i) spec.close(envs + i * stride);
    spec.release_shared(spec.shared);
    free(envs), free(observations), free(actions), free(batches), free(rewards), free(flags), free(errors);
    return sps;
}
