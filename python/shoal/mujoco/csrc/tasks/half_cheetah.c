/* HalfCheetah-v5 (gymnasium/envs/mujoco/half_cheetah_v5.py): run forward; never terminates.
 * observation: qpos[1:] (qpos[0:] without exclude_current_positions_from_observation), qvel
 * reward: forward_reward_weight * dx/dt - ctrl_cost_weight * sum(action^2) */
#include "shoal_mujoco.h"

typedef struct HalfCheetah {
    shoal_mj mj;
    double forward_reward_weight;
    double ctrl_cost_weight;
    int32_t exclude_current_positions_from_observation;
} HalfCheetah;

static const shoal_param half_cheetah_params[] = {
    SHOAL_MJ_PARAMS(HalfCheetah, "half_cheetah.xml", 5, 0.1),
    SHOAL_PARAM_DOUBLE(HalfCheetah, forward_reward_weight, 1.0, -INFINITY, INFINITY, "weight of the forward velocity"),
    SHOAL_PARAM_DOUBLE(HalfCheetah, ctrl_cost_weight, 0.1, -INFINITY, INFINITY, "weight of sum(action^2)"),
    SHOAL_PARAM_FLAG(HalfCheetah, exclude_current_positions_from_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "leave the x position out of the observation"),
};

static const char* const half_cheetah_stats[] = {"reward_forward", "reward_ctrl"};

static int half_cheetah_configure(shoal_env_spec* spec, const void* params, char* error) {
    const HalfCheetah* env = (const HalfCheetah*)params;
    const mjModel* model = shoal_mj_configure(spec, &env->mj, error);
    if (!model) return 1;
    spec->obs_shape[0] = model->nq + model->nv - (env->exclude_current_positions_from_observation ? 1 : 0);
    return 0;
}

static void half_cheetah_observe(HalfCheetah* env) {
    const int skip = env->exclude_current_positions_from_observation ? 1 : 0;
    const mjData* d = env->mj.data;
    const int at = shoal_mj_put(&env->mj, 0, d->qpos + skip, env->mj.model->nq - skip);
    shoal_mj_put(&env->mj, at, d->qvel, env->mj.model->nv);
}

static int half_cheetah_init(HalfCheetah* env) {
    return shoal_mj_init(&env->mj);
}

static void half_cheetah_reset(HalfCheetah* env) {
    shoal_mj_reset(&env->mj, SHOAL_MJ_QVEL_NORMAL);
    half_cheetah_observe(env);
}

static int half_cheetah_step(HalfCheetah* env) {
    const double x_before = env->mj.data->qpos[0];
    shoal_mj_simulate(&env->mj, 0);
    const double x_velocity = (env->mj.data->qpos[0] - x_before) / env->mj.dt;
    half_cheetah_observe(env);
    const double forward_reward = env->forward_reward_weight * x_velocity;
    const float ctrl_cost = shoal_mj_control_cost(&env->mj, env->ctrl_cost_weight);
    env->mj.base.rewards[0] = (float)(forward_reward - ctrl_cost);
    env->mj.base.stats[0] += (float)forward_reward;
    env->mj.base.stats[1] -= ctrl_cost;
    return SHOAL_EPISODE_RUNNING;
}

SHOAL_MJ_TASK(half_cheetah, HalfCheetah, "HalfCheetah-v5", 1000, half_cheetah_params, half_cheetah_stats)
