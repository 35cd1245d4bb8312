/* Reacher-v5 (gymnasium/envs/mujoco/reacher_v5.py): move the fingertip to a random target; never terminates.
 * observation: cos(qpos[:2]), sin(qpos[:2]) (the arm's hinges), qpos[2:] (the target), qvel[:2],
 *   (fingertip - target)[:2] (the bodies' positions)
 * reward: -reward_dist_weight * |fingertip - target| - reward_control_weight * sum(action^2)
 * reset: qpos = qpos0 + U(-0.1, 0.1), the target's qpos[-2:] uniform in the disc of radius 0.2 (rejection
 *   sampling in the square), qvel = U(-0.005, 0.005) with the target's qvel[-2:] = 0 */
#include "shoal_mujoco.h"

typedef struct Reacher {
    shoal_mj mj;
    double reward_dist_weight;
    double reward_control_weight;
    int fingertip, target; /* body ids */
} Reacher;

static const shoal_param reacher_params[] = {
    SHOAL_MJ_MODEL_PARAMS(Reacher, "reacher.xml", 2),
    SHOAL_PARAM_DOUBLE(Reacher, reward_dist_weight, 1.0, -INFINITY, INFINITY,
                       "weight of the fingertip's distance to the target"),
    SHOAL_PARAM_DOUBLE(Reacher, reward_control_weight, 1.0, -INFINITY, INFINITY, "weight of sum(action^2)"),
};

static const char* const reacher_stats[] = {"reward_dist", "reward_ctrl"};

static int reacher_configure(shoal_env_spec* spec, const void* params, char* error) {
    const Reacher* env = (const Reacher*)params;
    const mjModel* m = shoal_mj_configure(spec, &env->mj, error);
    if (!m) return 1;
    if (shoal_mj_body(m, env->mj.xml_file, "fingertip", error) < 0 ||
        shoal_mj_body(m, env->mj.xml_file, "target", error) < 0)
        return 1;
    if (m->nq < 4 || m->nv < 4) {
        snprintf(error, SHOAL_ERROR_CAPACITY, "%s needs 2 arm and 2 target joints (has nq=%d, nv=%d)", env->mj.xml_file,
                 (int)m->nq, (int)m->nv);
        return 1;
    }
    spec->obs_shape[0] = 2 + 2 + (m->nq - 2) + 2 + 2;
    return 0;
}

static void reacher_observe(Reacher* env) {
    const mjData* d = env->mj.data;
    double* obs = (double*)env->mj.base.observations;
    obs[0] = cos(d->qpos[0]);
    obs[1] = cos(d->qpos[1]);
    obs[2] = sin(d->qpos[0]);
    obs[3] = sin(d->qpos[1]);
    int at = shoal_mj_put(&env->mj, 4, d->qpos + 2, env->mj.model->nq - 2);
    at = shoal_mj_put(&env->mj, at, d->qvel, 2);
    for (int k = 0; k < 2; ++k) obs[at + k] = d->xpos[3 * env->fingertip + k] - d->xpos[3 * env->target + k];
}

static int reacher_init(Reacher* env) {
    if (shoal_mj_init(&env->mj) != 0) return 1;
    env->fingertip = mj_name2id(env->mj.model, mjOBJ_BODY, "fingertip");
    env->target = mj_name2id(env->mj.model, mjOBJ_BODY, "target");
    return 0;
}

static void reacher_reset(Reacher* env) {
    const mjModel* m = env->mj.model;
    mjData* d = env->mj.data;
    mj_resetData(m, d);
    for (int i = 0; i < m->nq; ++i) d->qpos[i] = shoal_mj_uniform(&env->mj, -0.1, 0.1) + m->qpos0[i];
    double goal[2];
    do {
        goal[0] = shoal_mj_uniform(&env->mj, -0.2, 0.2);
        goal[1] = shoal_mj_uniform(&env->mj, -0.2, 0.2);
    } while (!(sqrt(goal[0] * goal[0] + goal[1] * goal[1]) < 0.2));
    d->qpos[m->nq - 2] = goal[0];
    d->qpos[m->nq - 1] = goal[1];
    for (int i = 0; i < m->nv; ++i) d->qvel[i] = 0.0 + shoal_mj_uniform(&env->mj, -0.005, 0.005);
    d->qvel[m->nv - 2] = d->qvel[m->nv - 1] = 0.0;
    mj_forward(m, d);
    reacher_observe(env);
}

static int reacher_step(Reacher* env) {
    const mjData* d = env->mj.data;
    shoal_mj_simulate(&env->mj, 0);
    reacher_observe(env);
    double vec[3];
    for (int k = 0; k < 3; ++k) vec[k] = d->xpos[3 * env->fingertip + k] - d->xpos[3 * env->target + k];
    const double reward_dist = -shoal_mj_norm3(vec) * env->reward_dist_weight;
    /* float32, as numpy computes -sum(square(float32 action)) * weight */
    const float reward_ctrl = -shoal_mj_control_cost(&env->mj, env->reward_control_weight);
    env->mj.base.rewards[0] = (float)(reward_dist + reward_ctrl);
    env->mj.base.stats[0] += (float)reward_dist;
    env->mj.base.stats[1] += reward_ctrl;
    return SHOAL_EPISODE_RUNNING;
}

SHOAL_MJ_TASK(reacher, Reacher, "Reacher-v5", 50, reacher_params, reacher_stats)
