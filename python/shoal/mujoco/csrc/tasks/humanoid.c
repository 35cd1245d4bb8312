/* Humanoid-v5 (gymnasium/envs/mujoco/humanoid_v5.py): walk forward without falling; terminates when unhealthy.
 * observation: qpos[2:] (qpos[0:] without exclude_current_positions_from_observation), qvel, and each
 *   included: cinert[1:], cvel[1:], qfrc_actuator[6:], cfrc_ext[1:]
 * reward: forward_reward_weight * d(mass centre x)/dt + healthy_reward * healthy
 *         - (ctrl_cost_weight * sum(ctrl^2) + clip(contact_cost_weight * sum(cfrc_ext^2), contact_cost_range))
 * healthy: healthy_z_range[0] < qpos[2] < healthy_z_range[1] */
#include "shoal_mujoco.h"

typedef struct Humanoid {
    shoal_mj mj;
    double forward_reward_weight;
    double ctrl_cost_weight;
    double contact_cost_weight;
    double contact_cost_range[2];
    double healthy_reward;
    int32_t terminate_when_unhealthy;
    double healthy_z_range[2];
    int32_t exclude_current_positions_from_observation;
    int32_t include_cinert_in_observation;
    int32_t include_cvel_in_observation;
    int32_t include_qfrc_actuator_in_observation;
    int32_t include_cfrc_ext_in_observation;
    double total_mass; /* np.sum(body_mass), in numpy's order */
} Humanoid;

static const shoal_param humanoid_params[] = {
    SHOAL_MJ_PARAMS(Humanoid, "humanoid.xml", 5, 1e-2),
    SHOAL_PARAM_DOUBLE(Humanoid, forward_reward_weight, 1.25, -INFINITY, INFINITY, "weight of the forward velocity"),
    SHOAL_PARAM_DOUBLE(Humanoid, ctrl_cost_weight, 0.1, -INFINITY, INFINITY, "weight of sum(ctrl^2)"),
    SHOAL_PARAM_DOUBLE(Humanoid, contact_cost_weight, 5e-7, -INFINITY, INFINITY, "weight of sum(cfrc_ext^2)"),
    SHOAL_PARAM_RANGE(Humanoid, contact_cost_range, -INFINITY, 10.0, -INFINITY, INFINITY,
                      "the contact cost is clipped to it"),
    SHOAL_PARAM_DOUBLE(Humanoid, healthy_reward, 5.0, -INFINITY, INFINITY, "reward of every healthy step"),
    SHOAL_PARAM_FLAG(Humanoid, terminate_when_unhealthy, 1, 0, "end the episode when the humanoid is unhealthy"),
    SHOAL_PARAM_RANGE(Humanoid, healthy_z_range, 1.0, 2.0, -INFINITY, INFINITY, "open range of the torso's z"),
    SHOAL_PARAM_FLAG(Humanoid, exclude_current_positions_from_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "leave the x and y positions out of the observation"),
    SHOAL_PARAM_FLAG(Humanoid, include_cinert_in_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "append cinert[1:] (the bodies' inertia about the centre of mass)"),
    SHOAL_PARAM_FLAG(Humanoid, include_cvel_in_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "append cvel[1:] (the bodies' velocities about the centre of mass)"),
    SHOAL_PARAM_FLAG(Humanoid, include_qfrc_actuator_in_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "append qfrc_actuator[6:] (the actuator forces)"),
    SHOAL_PARAM_FLAG(Humanoid, include_cfrc_ext_in_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "append cfrc_ext[1:] (the external contact forces)"),
};

static const char* const humanoid_stats[] = {"reward_survive", "reward_forward", "reward_ctrl", "reward_contact"};

static int humanoid_configure(shoal_env_spec* spec, const void* params, char* error) {
    const Humanoid* env = (const Humanoid*)params;
    const mjModel* m = shoal_mj_configure(spec, &env->mj, error);
    if (!m) return 1;
    const int bodies = m->nbody - 1;
    spec->obs_shape[0] = m->nq + m->nv - 2 * (env->exclude_current_positions_from_observation ? 1 : 0) +
                         (env->include_cinert_in_observation ? 10 * bodies : 0) +
                         (env->include_cvel_in_observation ? 6 * bodies : 0) +
                         (env->include_qfrc_actuator_in_observation ? m->nv - 6 : 0) +
                         (env->include_cfrc_ext_in_observation ? 6 * bodies : 0);
    return 0;
}

static void humanoid_observe(Humanoid* env) {
    const int skip = env->exclude_current_positions_from_observation ? 2 : 0;
    const mjData* d = env->mj.data;
    const mjModel* m = env->mj.model;
    const int bodies = m->nbody - 1;
    int at = shoal_mj_put(&env->mj, 0, d->qpos + skip, m->nq - skip);
    at = shoal_mj_put(&env->mj, at, d->qvel, m->nv);
    if (env->include_cinert_in_observation) at = shoal_mj_put(&env->mj, at, d->cinert + 10, 10 * bodies);
    if (env->include_cvel_in_observation) at = shoal_mj_put(&env->mj, at, d->cvel + 6, 6 * bodies);
    if (env->include_qfrc_actuator_in_observation) at = shoal_mj_put(&env->mj, at, d->qfrc_actuator + 6, m->nv - 6);
    if (env->include_cfrc_ext_in_observation) shoal_mj_put(&env->mj, at, d->cfrc_ext + 6, 6 * bodies);
}

/* x of the mass centre: np.einsum("b,bj->j", body_mass, xipos)[0] / np.sum(body_mass), einsum adding
 * the bodies' products in order. */
static double humanoid_mass_center_x(const Humanoid* env) {
    const mjModel* m = env->mj.model;
    const mjData* d = env->mj.data;
    double num = 0.0;
    for (int b = 0; b < m->nbody; ++b) num += m->body_mass[b] * d->xipos[3 * b];
    return num / env->total_mass;
}

static int humanoid_init(Humanoid* env) {
    if (shoal_mj_init(&env->mj) != 0) return 1;
    env->total_mass = shoal_mj_sum_f64(env->mj.model->body_mass, env->mj.model->nbody);
    return 0;
}

static void humanoid_reset(Humanoid* env) {
    shoal_mj_reset(&env->mj, SHOAL_MJ_QVEL_UNIFORM);
    humanoid_observe(env);
}

static int humanoid_step(Humanoid* env) {
    const mjModel* m = env->mj.model;
    const mjData* d = env->mj.data;
    const double x_before = humanoid_mass_center_x(env);
    shoal_mj_simulate(&env->mj, 1);
    const double x_velocity = (humanoid_mass_center_x(env) - x_before) / env->mj.dt;
    humanoid_observe(env);
    const int healthy = env->healthy_z_range[0] < d->qpos[2] && d->qpos[2] < env->healthy_z_range[1];
    const double forward_reward = env->forward_reward_weight * x_velocity;
    const double healthy_reward = healthy * env->healthy_reward;
    const double ctrl_cost = env->ctrl_cost_weight * shoal_mj_sum_clipped_squares(d->ctrl, m->nu, -INFINITY, INFINITY);
    const double contact_cost = shoal_mj_clip(
        env->contact_cost_weight * shoal_mj_sum_clipped_squares(d->cfrc_ext, 6 * m->nbody, -INFINITY, INFINITY),
        env->contact_cost_range[0], env->contact_cost_range[1]);
    env->mj.base.rewards[0] = (float)((forward_reward + healthy_reward) - (ctrl_cost + contact_cost));
    env->mj.base.stats[0] += (float)healthy_reward;
    env->mj.base.stats[1] += (float)forward_reward;
    env->mj.base.stats[2] -= (float)ctrl_cost;
    env->mj.base.stats[3] -= (float)contact_cost;
    if (!healthy && env->terminate_when_unhealthy) return shoal_mj_terminate(&env->mj);
    return SHOAL_EPISODE_RUNNING;
}

SHOAL_MJ_TASK(humanoid, Humanoid, "Humanoid-v5", 1000, humanoid_params, humanoid_stats)
