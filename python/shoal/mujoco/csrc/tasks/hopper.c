/* Hopper-v5 (gymnasium/envs/mujoco/hopper_v5.py): hop forward; terminates when unhealthy.
 * observation: qpos[1:] (qpos[0:] without exclude_current_positions_from_observation), clip(qvel, -10, 10)
 * reward: forward_reward_weight * dx/dt + healthy_reward * healthy - ctrl_cost_weight * sum(action^2)
 * healthy: every value of (qpos, qvel)[2:] in healthy_state_range, qpos[1] (z) in healthy_z_range and
 * qpos[2] (angle) in healthy_angle_range, all open intervals */
#include "shoal_mujoco.h"

typedef struct Hopper {
    shoal_mj mj;
    double forward_reward_weight;
    double ctrl_cost_weight;
    double healthy_reward;
    int32_t terminate_when_unhealthy;
    double healthy_state_range[2];
    double healthy_z_range[2];
    double healthy_angle_range[2];
    int32_t exclude_current_positions_from_observation;
} Hopper;

static const shoal_param hopper_params[] = {
    SHOAL_MJ_PARAMS(Hopper, "hopper.xml", 4, 5e-3),
    SHOAL_PARAM_DOUBLE(Hopper, forward_reward_weight, 1.0, -INFINITY, INFINITY, "weight of the forward velocity"),
    SHOAL_PARAM_DOUBLE(Hopper, ctrl_cost_weight, 1e-3, -INFINITY, INFINITY, "weight of sum(action^2)"),
    SHOAL_PARAM_DOUBLE(Hopper, healthy_reward, 1.0, -INFINITY, INFINITY, "reward of every healthy step"),
    SHOAL_PARAM_FLAG(Hopper, terminate_when_unhealthy, 1, 0, "end the episode when the hopper is unhealthy"),
    SHOAL_PARAM_RANGE(Hopper, healthy_state_range, -100.0, 100.0, -INFINITY, INFINITY,
                      "open range of every value of (qpos, qvel)[2:] while healthy"),
    SHOAL_PARAM_RANGE(Hopper, healthy_z_range, 0.7, INFINITY, -INFINITY, INFINITY, "open range of the torso's z"),
    SHOAL_PARAM_RANGE(Hopper, healthy_angle_range, -0.2, 0.2, -INFINITY, INFINITY, "open range of the torso's angle"),
    SHOAL_PARAM_FLAG(Hopper, exclude_current_positions_from_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "leave the x position out of the observation"),
};

static const char* const hopper_stats[] = {"reward_forward", "reward_ctrl", "reward_survive"};

static int hopper_configure(shoal_env_spec* spec, const void* params, char* error) {
    const Hopper* env = (const Hopper*)params;
    const mjModel* model = shoal_mj_configure(spec, &env->mj, error);
    if (!model) return 1;
    spec->obs_shape[0] = model->nq + model->nv - (env->exclude_current_positions_from_observation ? 1 : 0);
    return 0;
}

static int hopper_in(const double range[2], double x) {
    return range[0] < x && x < range[1];
}

static int hopper_is_healthy(const Hopper* env) {
    const mjModel* m = env->mj.model;
    const mjData* d = env->mj.data;
    for (int i = 2; i < m->nq; ++i)
        if (!hopper_in(env->healthy_state_range, d->qpos[i])) return 0;
    for (int i = 0; i < m->nv; ++i)
        if (!hopper_in(env->healthy_state_range, d->qvel[i])) return 0;
    return hopper_in(env->healthy_z_range, d->qpos[1]) && hopper_in(env->healthy_angle_range, d->qpos[2]);
}

static void hopper_observe(Hopper* env) {
    const int skip = env->exclude_current_positions_from_observation ? 1 : 0;
    const mjData* d = env->mj.data;
    const int at = shoal_mj_put(&env->mj, 0, d->qpos + skip, env->mj.model->nq - skip);
    shoal_mj_put_clipped(&env->mj, at, d->qvel, env->mj.model->nv, -10.0, 10.0);
}

static int hopper_init(Hopper* env) {
    return shoal_mj_init(&env->mj);
}

static void hopper_reset(Hopper* env) {
    shoal_mj_reset(&env->mj, SHOAL_MJ_QVEL_UNIFORM);
    hopper_observe(env);
}

static int hopper_step(Hopper* env) {
    const double x_before = env->mj.data->qpos[0];
    shoal_mj_simulate(&env->mj, 0);
    const double x_velocity = (env->mj.data->qpos[0] - x_before) / env->mj.dt;
    hopper_observe(env);
    const int healthy = hopper_is_healthy(env);
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

SHOAL_MJ_TASK(hopper, Hopper, "Hopper-v5", 1000, hopper_params, hopper_stats)
