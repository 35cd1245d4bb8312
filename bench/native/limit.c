/* limit.c — the "limit" of bench/bench_native.py: an env's own callbacks in a bare C loop.
 *
 * Compiled once per env by bench/native/CMakeLists.txt with the env's source included here
 * (SHOAL_LIMIT_SOURCE) and the flags the extension compiles env code with, so the env code is the
 * same machine code shoal runs. The loop keeps the semantics that make results comparable: the
 * caller's actions copied into the action buffer once per step, rewards and flags zeroed, same-step
 * reset, the time limit as truncations. What it leaves out is what shoal adds: episode returns and
 * logs, final observations, error checks, chunking, threads and Python.
 *
 *   double shoal_limit_sps(size_t num_envs, uint64_t steps_per_env)   env steps per second
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include SHOAL_LIMIT_SOURCE

#define SHOAL_LIMIT_CAT2(A, B) A##B
#define SHOAL_LIMIT_CAT(A, B) SHOAL_LIMIT_CAT2(A, B)
#define SHOAL_LIMIT_TRAMPOLINE(WHAT) SHOAL_LIMIT_CAT(SHOAL_LIMIT_CAT(shoal__, SHOAL_LIMIT_NAME), WHAT)
#define SHOAL_LIMIT_SPEC SHOAL_LIMIT_CAT(shoal_env_spec_, SHOAL_LIMIT_NAME)

/* Action batches generated in advance and cycled, like the Python timing loop. */
#define SHOAL_LIMIT_BATCHES 16
#define SHOAL_LIMIT_WARMUP_STEPS 20

static double shoal_limit_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void shoal_limit_write_params(const shoal_env_spec* spec, unsigned char* env) {
    for (int32_t p = 0; p < spec->num_params; ++p) {
        const shoal_param* param = &spec->params[p];
        if (param->type == SHOAL_PARAM_INT32) {
            const int32_t value = (int32_t)param->default_value;
            memcpy(env + param->offset, &value, sizeof value);
        } else {
            const float value = (float)param->default_value;
            memcpy(env + param->offset, &value, sizeof value);
        }
    }
}

/* One step of every env: the bare loop, with the env's callbacks inlined like shoal's own loop. */
static SHOAL_FLATTEN void shoal_limit_step_all(unsigned char* envs, size_t stride, size_t num_envs, size_t agents,
                                               uint32_t max_episode_steps) {
    for (size_t i = 0; i < num_envs; ++i) {
        shoal_env* env = (shoal_env*)(envs + i * stride);
        for (size_t a = 0; a < agents; ++a) {
            env->rewards[a] = 0.0f;
            env->terminals[a] = 0;
            env->truncations[a] = 0;
        }
        int over = SHOAL_LIMIT_TRAMPOLINE(_step)(env) != SHOAL_EPISODE_RUNNING;
        env->tick += 1;
        if (max_episode_steps != 0 && env->tick >= max_episode_steps) {
            for (size_t a = 0; a < agents; ++a) env->truncations[a] = 1;
            over = 1;
        }
        if (over) {
            env->tick = 0;
            SHOAL_LIMIT_TRAMPOLINE(_reset)(env);
        }
    }
}

/** Env steps per second of `num_envs` envs each stepped `steps_per_env` times (after a warm-up);
 * negative if the buffers cannot be allocated or an env fails to initialise. */
SHOAL_EXTERN_C SHOAL_VISIBLE double shoal_limit_sps(size_t num_envs, uint64_t steps_per_env) {
    const shoal_env_spec* spec = SHOAL_LIMIT_SPEC();
    const size_t agents = (size_t)spec->num_agents;
    const size_t rows = num_envs * agents;
    size_t observation_bytes = spec->obs_dtype == SHOAL_FLOAT32 || spec->obs_dtype == SHOAL_INT32 ? 4 : 1;
    for (int32_t d = 0; d < spec->obs_ndim; ++d) observation_bytes *= (size_t)spec->obs_shape[d];
    const size_t action_bytes = (size_t)spec->action_dims * 4;
    const size_t stride = (spec->env_size + spec->env_align - 1) / spec->env_align * spec->env_align;

    unsigned char* envs = aligned_alloc(spec->env_align, stride * num_envs); /* packed: no padding */
    unsigned char* observations = malloc(rows * observation_bytes);
    int32_t* actions = malloc(rows * action_bytes);
    int32_t* batches = malloc(SHOAL_LIMIT_BATCHES * rows * action_bytes);
    float* rewards = malloc(rows * sizeof(float));
    uint8_t* flags = malloc(3 * rows);
    char* errors = malloc(num_envs * SHOAL_ERROR_CAPACITY);
    double sps = -1.0;
    if (!envs || !observations || !actions || !batches || !rewards || !flags || !errors) goto done;
    memset(envs, 0, stride * num_envs);
    memset(actions, 0, rows * action_bytes);
    memset(flags, 0, 3 * rows);
    /* Actions uniform over each dimension's range (Box actions: 0.0f), from a fixed LCG. */
    uint64_t lcg = 12345;
    for (size_t k = 0; k < SHOAL_LIMIT_BATCHES * rows * (size_t)spec->action_dims; ++k) {
        lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
        const int32_t range = spec->action_kind == SHOAL_ACTION_BOX ? 1 : spec->action_nvec[k % spec->action_dims];
        batches[k] = spec->action_kind == SHOAL_ACTION_BOX ? 0 : (int32_t)((lcg >> 33) % (uint64_t)range);
    }
    for (size_t i = 0; i < num_envs; ++i) {
        shoal_env* env = (shoal_env*)(envs + i * stride);
        env->observations = observations + i * agents * observation_bytes;
        env->actions = (unsigned char*)actions + i * action_bytes * agents;
        env->rewards = rewards + i * agents;
        env->terminals = flags + i * agents;
        env->truncations = flags + rows + i * agents;
        env->masks = flags + 2 * rows + i * agents;
        env->env_index = (int64_t)i;
        env->num_agents = spec->num_agents;
        env->error = errors + i * SHOAL_ERROR_CAPACITY;
        shoal_limit_write_params(spec, (unsigned char*)env);
        if (SHOAL_LIMIT_TRAMPOLINE(_init)(env) != 0) goto done;
        shoal_rng_seed(&env->rng, shoal_env_seed(0, i));
        SHOAL_LIMIT_TRAMPOLINE(_reset)(env);
    }
    const uint32_t limit = (uint32_t)spec->max_episode_steps;
    for (uint64_t t = 0; t < SHOAL_LIMIT_WARMUP_STEPS; ++t) {
        memcpy(actions, batches + (t % SHOAL_LIMIT_BATCHES) * rows * spec->action_dims, rows * action_bytes);
        shoal_limit_step_all(envs, stride, num_envs, agents, limit);
    }
    const double start = shoal_limit_now();
    for (uint64_t t = 0; t < steps_per_env; ++t) {
        memcpy(actions, batches + (t % SHOAL_LIMIT_BATCHES) * rows * spec->action_dims, rows * action_bytes);
        shoal_limit_step_all(envs, stride, num_envs, agents, limit);
    }
    sps = (double)steps_per_env * (double)rows / (shoal_limit_now() - start);
    if (spec->close)
        for (size_t i = 0; i < num_envs; ++i) spec->close(envs + i * stride);
done:
    free(envs);
    free(observations);
    free(actions);
    free(batches);
    free(rewards);
    free(flags);
    free(errors);
    return sps;
}
