/* Walker2d-v5 (gymnasium/envs/mujoco/walker2d_v5.py): walk forward; terminates when unhealthy.
 * observation: qpos[1:] (qpos[0:] without exclude_current_positions_from_observation), clip(qvel, -10, 10)
 * reward: forward_reward_weight * dx/dt + healthy_reward * healthy - ctrl_cost_weight * sum(action^2)
 * healthy: qpos[1] (z) in healthy_z_range and qpos[2] (angle) in healthy_angle_range, open intervals */
#include "shoal_mujoco.h"

typedef struct Walker2d {
    shoal_mj mj;
    double forward_reward_weight;
    double ctrl_cost_weight;
    double healthy_reward;
    int32_t terminate_when_unhealthy;
    double healthy_z_range[2];
    double healthy_angle_range[2];
    int32_t exclude_current_positions_from_observation;
} Walker2d;

static const shoal_param walker2d_params[] = {
    SHOAL_MJ_PARAMS(Walker2d, "walker2d_v5.xml", 4, 5e-3),
    SHOAL_PARAM_DOUBLE(Walker2d, forward_reward_weight, 1.0, -INFINITY, INFINITY, "weight of the forward velocity"),
    SHOAL_PARAM_DOUBLE(Walker2d, ctrl_cost_weight, 1e-3, -INFINITY, INFINITY, "weight of sum(action^2)"),
    SHOAL_PARAM_DOUBLE(Walker2d, healthy_reward, 1.0, -INFINITY, INFINITY, "reward of every healthy step"),
    SHOAL_PARAM_FLAG(Walker2d, terminate_when_unhealthy, 1, 0, "end the episode when the walker is unhealthy"),
    SHOAL_PARAM_RANGE(Walker2d, healthy_z_range, 0.8, 2.0, -INFINITY, INFINITY, "open range of the torso's z"),
    SHOAL_PARAM_RANGE(Walker2d, healthy_angle_range, -1.0, 1.0, -INFINITY, INFINITY, "open range of the torso's angle"),
    SHOAL_PARAM_FLAG(Walker2d, exclude_current_positions_from_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "leave the x position out of the observation"),
};

static const char* const walker2d_stats[] = {"reward_forward", "reward_ctrl", "reward_survive"};

static int walker2d_configure(shoal_env_spec* spec, const void* params, char* error) {
    const Walker2d* env = (const Walker2d*)params;
    const mjModel* model = shoal_mj_configure(spec, &env->mj, error);
    if (!model) return 1;
    spec->obs_shape[0] = model->nq + model->nv - (env->exclude_current_positions_from_observation ? 1 : 0);
    return 0;
}

static int walker2d_in(const double range[2], double x) {
    return range[0] < x && x < range[1];
}

static int walker2d_is_healthy(const Walker2d* env) {
    const mjData* d = env->mj.data;
    return walker2d_in(env->healthy_z_range, d->qpos[1]) && walker2d_in(env->healthy_angle_range, d->qpos[2]);
}

static void walker2d_observe(Walker2d* env) {
    const int skip = env->exclude_current_positions_from_observation ? 1 : 0;
    const mjData* d = env->mj.data;
    const int at = shoal_mj_put(&env->mj, 0, d->qpos + skip, env->mj.model->nq - skip);
    shoal_mj_put_clipped(&env->mj, at, d->qvel, env->mj.model->nv, -10.0, 10.0);
}

static int walker2d_init(Walker2d* env) {
    return shoal_mj_init(&env->mj);
}

static void walker2d_reset(Walker2d* env) {
    shoal_mj_reset(&env->mj, SHOAL_MJ_QVEL_UNIFORM);
    walker2d_observe(env);
}

static int walker2d_step(Walker2d* env) {
    const double x_before = env->mj.data->qpos[0];
    shoal_mj_simulate(&env->mj, 0);
    const double x_velocity = (env->mj.data->qpos[0] - x_before) / env->mj.dt;
    walker2d_observe(env);
    const int healthy = walker2d_is_healthy(env);
    const double forward_reward = env->forward_reward_weight * x_velocity;
    const double healthy_reward = healthy * env->healthy_reward;
    const float ctrl_cost = shoal_mj_control_cost(&env->mj, env->ctrl_cost_weight);
    env->mj.base.rewards[0] = (float)((forward_reward + healthy_reward) - ctrl_cost);
    env->mj.base.stats[0] += (float)forward_reward;
    env->mj.base.stats[1] -= ctrl_cost;
    env->mj.base.stats[2] += (float)healthy_reward;
    if (!healthy && env->terminate_when_unhealthy) return shoal_mj_terminate(&env->mj);
    return SHOAL_EPISODE_RUNNING;
}

SHOAL_MJ_TASK(walker2d, Walker2d, "Walker2d-v5", 1000, walker2d_params, walker2d_stats)
