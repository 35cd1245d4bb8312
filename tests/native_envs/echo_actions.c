/* Native test envs whose observations are the actions they received, so a wrong action value shows
 * in the trajectory. Each keeps a running step count in its last observation value; the core's time
 * limit (max_episode_steps) ends episodes, so final observations appear too.
 *
 *   echo_box:      Box(-1, 1, (3,)) float32 actions; observation [a0, a1, a2, t]
 *   echo_multi:    MultiDiscrete([3, 1000]) int32 actions; observation [a0, a1, t]
 *   echo_discrete: Discrete(1000) int32 actions; observation [a, t]
 */
#include <shoal/env.h>

typedef struct Echo {
    shoal_env base;
    int32_t steps;
} Echo;

static int echo_init(Echo* env) {
    (void)env;
    return 0;
}

#define ECHO_ENV(NAME, DIMS, ACTION_TYPE)                                   \
    static void NAME##_reset(Echo* env) {                                   \
        float* obs = (float*)env->base.observations;                        \
        env->steps = 0;                                                     \
        for (int d = 0; d <= (DIMS); ++d) obs[d] = 0.0f;                    \
        obs[0] = (float)(shoal_rng_next(&env->base.rng) % 7) / 8.0f;        \
    }                                                                       \
    static int NAME##_step(Echo* env) {                                     \
        const ACTION_TYPE* actions = (const ACTION_TYPE*)env->base.actions; \
        float* obs = (float*)env->base.observations;                        \
        env->steps += 1;                                                    \
        for (int d = 0; d < (DIMS); ++d) obs[d] = (float)actions[d];        \
        obs[DIMS] = (float)env->steps;                                      \
        env->base.rewards[0] = (float)actions[0];                           \
        return SHOAL_EPISODE_RUNNING;                                       \
    }                                                                       \
    SHOAL_ENV_CALLBACKS(NAME, Echo, echo_init, NAME##_reset, NAME##_step)

ECHO_ENV(echo_box, 3, float)
ECHO_ENV(echo_multi, 2, int32_t)
ECHO_ENV(echo_discrete, 1, int32_t)

static const shoal_env_spec echo_box_spec = {
    SHOAL_SPEC_CALLBACKS(echo_box, Echo),
    .doc = "Observes its Box action.",
    .num_agents = 1,
    .obs_dtype = SHOAL_FLOAT32,
    .obs_ndim = 1,
    .obs_shape = {4},
    .obs_low = -1000.0,
    .obs_high = 1000.0,
    .action_kind = SHOAL_ACTION_BOX,
    .action_dims = 3,
    .action_low = -1.0f,
    .action_high = 1.0f,
    .max_episode_steps = 4,
};

static const shoal_env_spec echo_multi_spec = {
    SHOAL_SPEC_CALLBACKS(echo_multi, Echo),
    .doc = "Observes its MultiDiscrete action.",
    .num_agents = 1,
    .obs_dtype = SHOAL_FLOAT32,
    .obs_ndim = 1,
    .obs_shape = {3},
    .obs_low = -1000.0,
    .obs_high = 1000.0,
    .action_kind = SHOAL_ACTION_MULTIDISCRETE,
    .action_dims = 2,
    .action_nvec = {3, 1000},
    .max_episode_steps = 4,
};

static const shoal_env_spec echo_discrete_spec = {
    SHOAL_SPEC_CALLBACKS(echo_discrete, Echo),
    .doc = "Observes its Discrete action.",
    .num_agents = 1,
    .obs_dtype = SHOAL_FLOAT32,
    .obs_ndim = 1,
    .obs_shape = {2},
    .obs_low = -1000.0,
    .obs_high = 1000.0,
    .action_kind = SHOAL_ACTION_DISCRETE,
    .action_dims = 1,
    .action_nvec = {1000},
    .max_episode_steps = 4,
};

SHOAL_EXPORT_ENV(echo_box, echo_box_spec)
SHOAL_EXPORT_ENV(echo_multi, echo_multi_spec)
SHOAL_EXPORT_ENV(echo_discrete, echo_discrete_spec)
