/* Ant-v5 (gymnasium/envs/mujoco/ant_v5.py): walk forward in x; terminates when unhealthy.
 * observation: qpos[2:] (qpos[0:] without exclude_current_positions_from_observation), qvel, and with
 *   include_cfrc_ext_in_observation the external contact forces clip(cfrc_ext, contact_force_range)[1:]
 * reward: forward_reward_weight * dx/dt of main_body + healthy_reward * healthy
 *         - (ctrl_cost_weight * sum(action^2) + contact_cost_weight * sum(clip(cfrc_ext)^2))
 * healthy: (qpos, qvel) all finite and healthy_z_range[0] <= qpos[2] <= healthy_z_range[1] */
#include "shoal_mujoco.h"

typedef struct Ant {
    shoal_mj mj;
    double forward_reward_weight;
    double ctrl_cost_weight;
    double contact_cost_weight;
    double healthy_reward;
    int32_t main_body;
    int32_t terminate_when_unhealthy;
    double healthy_z_range[2];
    double contact_force_range[2];
    int32_t exclude_current_positions_from_observation;
    int32_t include_cfrc_ext_in_observation;
} Ant;

static const shoal_param ant_params[] = {
    SHOAL_MJ_PARAMS(Ant, "ant.xml", 5, 0.1),
    SHOAL_PARAM_DOUBLE(Ant, forward_reward_weight, 1.0, -INFINITY, INFINITY, "weight of the forward velocity"),
    SHOAL_PARAM_DOUBLE(Ant, ctrl_cost_weight, 0.5, -INFINITY, INFINITY, "weight of sum(action^2)"),
    SHOAL_PARAM_DOUBLE(Ant, contact_cost_weight, 5e-4, -INFINITY, INFINITY, "weight of sum(contact force^2)"),
    SHOAL_PARAM_DOUBLE(Ant, healthy_reward, 1.0, -INFINITY, INFINITY, "reward of every healthy step"),
    SHOAL_PARAM_INT(Ant, main_body, 1, 0, 1e6, "id of the body whose x velocity is rewarded"),
    SHOAL_PARAM_FLAG(Ant, terminate_when_unhealthy, 1, 0, "end the episode when the ant is unhealthy"),
    SHOAL_PARAM_RANGE(Ant, healthy_z_range, 0.2, 1.0, -INFINITY, INFINITY, "closed range of the torso's z"),
    SHOAL_PARAM_RANGE(Ant, contact_force_range, -1.0, 1.0, -INFINITY, INFINITY, "contact forces are clipped to it"),
    SHOAL_PARAM_FLAG(Ant, exclude_current_positions_from_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "leave the x and y positions out of the observation"),
    SHOAL_PARAM_FLAG(Ant, include_cfrc_ext_in_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "append the clipped contact forces of every body but the world to the observation"),
};

static const char* const ant_stats[] = {"reward_forward", "reward_ctrl", "reward_contact", "reward_survive"};

static int ant_configure(shoal_env_spec* spec, const void* params, char* error) {
    const Ant* env = (const Ant*)params;
    const mjModel* model = shoal_mj_configure(spec, &env->mj, error);
    if (!model) return 1;
    if (env->main_body >= model->nbody) {
        snprintf(error, SHOAL_ERROR_CAPACITY, "main_body=%d, but %s has %d bodies", (int)env->main_body,
                 env->mj.xml_file, (int)model->nbody);
        return 1;
    }
    spec->obs_shape[0] = model->nq + model->nv - 2 * (env->exclude_current_positions_from_observation ? 1 : 0) +
                         (env->include_cfrc_ext_in_observation ? 6 * (model->nbody - 1) : 0);
    return 0;
}

static void ant_observe(Ant* env) {
    const int skip = env->exclude_current_positions_from_observation ? 2 : 0;
    const mjData* d = env->mj.data;
    const mjModel* m = env->mj.model;
    int at = shoal_mj_put(&env->mj, 0, d->qpos + skip, m->nq - skip);
    at = shoal_mj_put(&env->mj, at, d->qvel, m->nv);
    if (env->include_cfrc_ext_in_observation)
        shoal_mj_put_clipped(&env->mj, at, d->cfrc_ext + 6, 6 * (m->nbody - 1), env->contact_force_range[0],
                             env->contact_force_range[1]);
}

static double ant_contact_cost(const Ant* env) {
    const double sum = shoal_mj_sum_clipped_squares(env->mj.data->cfrc_ext, 6 * env->mj.model->nbody,
                                                    env->contact_force_range[0], env->contact_force_range[1]);
    return env->contact_cost_weight * sum;
}

static int ant_is_healthy(const Ant* env) {
    const mjModel* m = env->mj.model;
    const mjData* d = env->mj.data;
    for (int i = 0; i < m->nq; ++i)
        if (!isfinite(d->qpos[i])) return 0;
    for (int i = 0; i < m->nv; ++i)
        if (!isfinite(d->qvel[i])) return 0;
    return env->healthy_z_range[0] <= d->qpos[2] && d->qpos[2] <= env->healthy_z_range[1];
}

static int ant_init(Ant* env) {
    return shoal_mj_init(&env->mj);
}

static void ant_reset(Ant* env) {
    shoal_mj_reset(&env->mj, SHOAL_MJ_QVEL_NORMAL);
    ant_observe(env);
}

static int ant_step(Ant* env) {
    const double x_before = env->mj.data->xpos[3 * env->main_body];
    shoal_mj_simulate(&env->mj, 1);
    const double x_velocity = (env->mj.data->xpos[3 * env->main_body] - x_before) / env->mj.dt;
    ant_observe(env);
    const int healthy = ant_is_healthy(env);
    const double forward_reward = x_velocity * env->forward_reward_weight;
    const double healthy_reward = healthy * env->healthy_reward;
    const float ctrl_cost = shoal_mj_control_cost(&env->mj, env->ctrl_cost_weight);
    const double contact_cost = ant_contact_cost(env);
    env->mj.base.rewards[0] = (float)((forward_reward + healthy_reward) - (ctrl_cost + contact_cost));
    env->mj.base.stats[0] += (float)forward_reward;
    env->mj.base.stats[1] -= ctrl_cost;
    env->mj.base.stats[2] -= (float)contact_cost;
    env->mj.base.stats[3] += (float)healthy_reward;
    if (!healthy && env->terminate_when_unhealthy) return shoal_mj_terminate(&env->mj);
    return SHOAL_EPISODE_RUNNING;
}

SHOAL_MJ_TASK(ant, Ant, "Ant-v5", 1000, ant_params, ant_stats)
