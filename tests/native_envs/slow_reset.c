/* A native test env whose reset sleeps `reset_ms` milliseconds (an Atari reset reloading its ROM,
 * say): a reset of many of them is long, and must stop at an env boundary when asked. Its step is
 * instant and ends no episode.
 *
 *   slow_reset: Discrete(2) actions; observation [resets done]
 */
#include <shoal/env.h>

#if defined(_WIN32)
#include <windows.h>
static void sleep_ms(int32_t ms) {
    Sleep((DWORD)ms);
}
#else
#include <time.h>
static void sleep_ms(int32_t ms) {
    struct timespec delay = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&delay, &delay) != 0) {
    }
}
#endif

typedef struct SlowReset {
    shoal_env base;
    int32_t reset_ms; /* param */
    int32_t resets;
} SlowReset;

static const shoal_param slow_reset_params[] = {
    SHOAL_PARAM_INT(SlowReset, reset_ms, 100, 0, 10000, "milliseconds each reset sleeps"),
};

static int slow_reset_init(SlowReset* env) {
    env->resets = 0;
    return 0;
}

static void slow_reset_reset(SlowReset* env) {
    sleep_ms(env->reset_ms);
    env->resets += 1;
    ((float*)env->base.observations)[0] = (float)env->resets;
}

static int slow_reset_step(SlowReset* env) {
    env->base.rewards[0] = 0.0f;
    return SHOAL_EPISODE_RUNNING;
}

SHOAL_ENV_CALLBACKS(slow_reset, SlowReset, slow_reset_init, slow_reset_reset, slow_reset_step)

static const shoal_env_spec slow_reset_spec = {
    SHOAL_SPEC_CALLBACKS(slow_reset, SlowReset),
    .doc = "Sleeps reset_ms milliseconds in each reset.",
    .num_agents = 1,
    .obs_dtype = SHOAL_FLOAT32,
    .obs_ndim = 1,
    .obs_shape = {1},
    .obs_low = 0.0,
    .obs_high = 1e9,
    .action_kind = SHOAL_ACTION_DISCRETE,
    .action_dims = 1,
    .action_nvec = {2},
    .params = slow_reset_params,
    .num_params = SHOAL_COUNT(slow_reset_params),
};

SHOAL_EXPORT_ENV(slow_reset, slow_reset_spec)
