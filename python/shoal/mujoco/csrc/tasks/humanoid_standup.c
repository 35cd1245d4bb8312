/* HumanoidStandup-v5 (gymnasium/envs/mujoco/humanoidstandup_v5.py): stand up from lying; never terminates.
 * observation: qpos[2:] (qpos[0:] without exclude_current_positions_from_observation), qvel, and each
 *   included: cinert[1:], cvel[1:], qfrc_actuator[6:], cfrc_ext[1:]
 * reward: qpos[2] / opt.timestep - ctrl_cost_weight * sum(ctrl^2)
 *         - clip(impact_cost_weight * sum(cfrc_ext^2), impact_cost_range) + 1
 *   (Gymnasium v5 accepts uph_cost_weight and does not use it; so does shoal) */
#include "shoal_mujoco.h"

typedef struct HumanoidStandup {
    shoal_mj mj;
    double uph_cost_weight;
    double ctrl_cost_weight;
    double impact_cost_weight;
    double impact_cost_range[2];
    int32_t exclude_current_positions_from_observation;
    int32_t include_cinert_in_observation;
    int32_t include_cvel_in_observation;
    int32_t include_qfrc_actuator_in_observation;
    int32_t include_cfrc_ext_in_observation;
} HumanoidStandup;

static const shoal_param humanoid_standup_params[] = {
    SHOAL_MJ_PARAMS(HumanoidStandup, "humanoidstandup.xml", 5, 1e-2),
    SHOAL_PARAM_DOUBLE(HumanoidStandup, uph_cost_weight, 1.0, -INFINITY, INFINITY,
                       "accepted as Gymnasium v5 does, which does not use it"),
    SHOAL_PARAM_DOUBLE(HumanoidStandup, ctrl_cost_weight, 0.1, -INFINITY, INFINITY, "weight of sum(ctrl^2)"),
    SHOAL_PARAM_DOUBLE(HumanoidStandup, impact_cost_weight, 0.5e-6, -INFINITY, INFINITY, "weight of sum(cfrc_ext^2)"),
    SHOAL_PARAM_RANGE(HumanoidStandup, impact_cost_range, -INFINITY, 10.0, -INFINITY, INFINITY,
                      "the impact cost is clipped to it"),
    SHOAL_PARAM_FLAG(HumanoidStandup, exclude_current_positions_from_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "leave the x and y positions out of the observation"),
    SHOAL_PARAM_FLAG(HumanoidStandup, include_cinert_in_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "append cinert[1:] (the bodies' inertia about the centre of mass)"),
    SHOAL_PARAM_FLAG(HumanoidStandup, include_cvel_in_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "append cvel[1:] (the bodies' velocities about the centre of mass)"),
    SHOAL_PARAM_FLAG(HumanoidStandup, include_qfrc_actuator_in_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "append qfrc_actuator[6:] (the actuator forces)"),
    SHOAL_PARAM_FLAG(HumanoidStandup, include_cfrc_ext_in_observation, 1, SHOAL_PARAM_PER_VECTOR,
                     "append cfrc_ext[1:] (the external contact forces)"),
};

static const char* const humanoid_standup_stats[] = {"reward_linup", "reward_quadctrl", "reward_impact"};

static int humanoid_standup_configure(shoal_env_spec* spec, const void* params, char* error) {
    const HumanoidStandup* env = (const HumanoidStandup*)params;
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

static void humanoid_standup_observe(HumanoidStandup* env) {
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

static int humanoid_standup_init(HumanoidStandup* env) {
    return shoal_mj_init(&env->mj);
}

static void humanoid_standup_reset(HumanoidStandup* env) {
    shoal_mj_reset(&env->mj, SHOAL_MJ_QVEL_UNIFORM);
    humanoid_standup_observe(env);
}

static int humanoid_standup_step(HumanoidStandup* env) {
    const mjModel* m = env->mj.model;
    const mjData* d = env->mj.data;
    shoal_mj_simulate(&env->mj, 1);
    humanoid_standup_observe(env);
    const double uph_cost = (d->qpos[2] - 0) / m->opt.timestep;
    const double ctrl_cost = env->ctrl_cost_weight * shoal_mj_sum_clipped_squares(d->ctrl, m->nu, -INFINITY, INFINITY);
    const double impact_cost = shoal_mj_clip(
        env->impact_cost_weight * shoal_mj_sum_clipped_squares(d->cfrc_ext, 6 * m->nbody, -INFINITY, INFINITY),
        env->impact_cost_range[0], env->impact_cost_range[1]);
    env->mj.base.rewards[0] = (float)(uph_cost - ctrl_cost - impact_cost + 1);
    env->mj.base.stats[0] += (float)uph_cost;
    env->mj.base.stats[1] -= (float)ctrl_cost;
    env->mj.base.stats[2] -= (float)impact_cost;
    return SHOAL_EPISODE_RUNNING;
}

SHOAL_MJ_TASK(humanoid_standup, HumanoidStandup, "HumanoidStandup-v5", 1000, humanoid_standup_params,
              humanoid_standup_stats)
