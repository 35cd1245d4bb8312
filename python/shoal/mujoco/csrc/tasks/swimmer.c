/* Swimmer-v5 (gymnasium/envs/mujoco/swimmer_v5.py): swim forward; never terminates.
 * observation: qpos[2:] (qpos[0:] without exclude_current_positions_from_observation), qvel
 * reward: forward_reward_weight * dx/dt - ctrl_cost_weight * sum(action^2) */
#include "shoal_mujoco.h"

typedef struct Swimmer {
    shoal_mj mj;
    double forward_reward_weight;
    double ctrl_cost_weight;
    int32_t exclude_current_positions_from_observation;
} Swimmer;

static const shoal_param swimmer_params[] = {
    SHOAL_MJ_PARAMS(Swimmer, "swimmer.xml", 4, 0.1),
    SHOAL_PARAM_DOUBLE(Swimmer, forward_reward_weight, 1.0, -INFINITY, INFINITY, "weight of the forward velocity"),
    SHOAL_PARAM_DOUBLE(Swimmer, ctrl_cost_weight, 1e-4, -INFINITY, INFINITY, "weight of sum(action^2)"),
    SHOAL_PARAM_FLAG(Swimmer, exclude_current_positions_from_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "leave the x and y positions out of the observation"),
};

static const char* const swimmer_stats[] = {"reward_forward", "reward_ctrl"};

static int swimmer_configure(shoal_env_spec* spec, const void* params, char* error) {
    const Swimmer* env = (const Swimmer*)params;
    const mjModel* model = shoal_mj_configure(spec, &env->mj, error);
    if (!model) return 1;
    spec->obs_shape[0] = model->nq + model->nv - 2 * (env->exclude_current_positions_from_observation ? 1 : 0);
    return 0;
}

static void swimmer_observe(Swimmer* env) {
    const int skip = env->exclude_current_positions_from_observation ? 2 : 0;
    const mjData* d = env->mj.data;
    const int at = shoal_mj_put(&env->mj, 0, d->qpos + skip, env->mj.model->nq - skip);
    shoal_mj_put(&env->mj, at, d->qvel, env->mj.model->nv);
}

static int swimmer_init(Swimmer* env) {
    return shoal_mj_init(&env->mj);
}

static void swimmer_reset(Swimmer* env) {
    shoal_mj_reset(&env->mj, SHOAL_MJ_QVEL_UNIFORM);
    swimmer_observe(env);
}

static int swimmer_step(Swimmer* env) {
    const double x_before = env->mj.data->qpos[0];
    shoal_mj_simulate(&env->mj, 0);
    const double x_velocity = (env->mj.data->qpos[0] - x_before) / env->mj.dt;
    swimmer_observe(env);
    const double forward_reward = env->forward_reward_weight * x_velocity;
    const float ctrl_cost = shoal_mj_control_cost(&env->mj, env->ctrl_cost_weight);
    env->mj.base.rewards[0] = (float)(forward_reward - ctrl_cost);
    env->mj.base.stats[0] += (float)forward_reward;
    env->mj.base.stats[1] -= ctrl_cost;
    return SHOAL_EPISODE_RUNNING;
}

SHOAL_MJ_TASK(swimmer, Swimmer, "Swimmer-v5", 1000, swimmer_params, swimmer_stats)
