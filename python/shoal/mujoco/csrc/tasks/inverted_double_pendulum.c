/* InvertedDoublePendulum-v5 (gymnasium/envs/mujoco/inverted_double_pendulum_v5.py): keep both poles up.
 * observation: qpos[0] (the cart), sin(qpos[1:]), cos(qpos[1:]) (the hinges), clip(qvel, -10, 10),
 *   clip(qfrc_constraint[0], -10, 10)
 * reward: healthy_reward * (not terminated) - (0.01 x^2 + (y - 2)^2) - (1e-3 v1^2 + 5e-3 v2^2),
 *   (x, y) the tip's site (x, z), v1, v2 = qvel[1], qvel[2]
 * terminates: the tip's height y <= 1 */
#include "shoal_mujoco.h"

typedef struct InvertedDoublePendulum {
    shoal_mj mj;
    double healthy_reward;
} InvertedDoublePendulum;

static const shoal_param inverted_double_pendulum_params[] = {
    SHOAL_MJ_PARAMS(InvertedDoublePendulum, "inverted_double_pendulum.xml", 5, 0.1),
    SHOAL_PARAM_DOUBLE(InvertedDoublePendulum, healthy_reward, 10.0, -INFINITY, INFINITY,
                       "reward of every step that does not end the episode"),
};

static const char* const inverted_double_pendulum_stats[] = {"reward_survive", "distance_penalty", "velocity_penalty"};

static int inverted_double_pendulum_configure(shoal_env_spec* spec, const void* params, char* error) {
    const InvertedDoublePendulum* env = (const InvertedDoublePendulum*)params;
    const mjModel* model = shoal_mj_configure(spec, &env->mj, error);
    if (!model) return 1;
    if (model->nsite < 1 || model->nv < 3) {
        snprintf(error, SHOAL_ERROR_CAPACITY, "%s needs a tip site and 3 DOFs (has %d sites, %d DOFs)",
                 env->mj.xml_file, (int)model->nsite, (int)model->nv);
        return 1;
    }
    spec->obs_shape[0] = 1 + 2 * (model->nq - 1) + model->nv + 1;
    return 0;
}

static void inverted_double_pendulum_observe(InvertedDoublePendulum* env) {
    const mjModel* m = env->mj.model;
    const mjData* d = env->mj.data;
    double* obs = (double*)env->mj.base.observations;
    const int hinges = m->nq - 1;
    obs[0] = d->qpos[0];
    for (int i = 0; i < hinges; ++i) obs[1 + i] = sin(d->qpos[1 + i]);
    for (int i = 0; i < hinges; ++i) obs[1 + hinges + i] = cos(d->qpos[1 + i]);
    const int at = shoal_mj_put_clipped(&env->mj, 1 + 2 * hinges, d->qvel, m->nv, -10.0, 10.0);
    shoal_mj_put_clipped(&env->mj, at, d->qfrc_constraint, 1, -10.0, 10.0);
}

static int inverted_double_pendulum_init(InvertedDoublePendulum* env) {
    return shoal_mj_init(&env->mj);
}

static void inverted_double_pendulum_reset(InvertedDoublePendulum* env) {
    shoal_mj_reset(&env->mj, SHOAL_MJ_QVEL_NORMAL);
    inverted_double_pendulum_observe(env);
}

static int inverted_double_pendulum_step(InvertedDoublePendulum* env) {
    shoal_mj_simulate(&env->mj, 0);
    inverted_double_pendulum_observe(env);
    const mjData* d = env->mj.data;
    const double x = d->site_xpos[0], y = d->site_xpos[2];
    const int terminated = y <= 1;
    const double v1 = d->qvel[1], v2 = d->qvel[2];
    /* numpy scalars: x**2 is pow(x, 2) */
    const double distance_penalty = 0.01 * pow(x, 2) + pow(y - 2, 2);
    const double velocity_penalty = 1e-3 * pow(v1, 2) + 5e-3 * pow(v2, 2);
    const double alive_bonus = env->healthy_reward * (terminated ? 0 : 1);
    env->mj.base.rewards[0] = (float)(alive_bonus - distance_penalty - velocity_penalty);
    env->mj.base.stats[0] += (float)alive_bonus;
    env->mj.base.stats[1] -= (float)distance_penalty;
    env->mj.base.stats[2] -= (float)velocity_penalty;
    return terminated ? shoal_mj_terminate(&env->mj) : SHOAL_EPISODE_RUNNING;
}

SHOAL_MJ_TASK(inverted_double_pendulum, InvertedDoublePendulum, "InvertedDoublePendulum-v5", 1000,
              inverted_double_pendulum_params, inverted_double_pendulum_stats)
