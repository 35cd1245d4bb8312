/* InvertedPendulum-v5 (gymnasium/envs/mujoco/inverted_pendulum_v5.py): keep the pole up.
 * observation: qpos, qvel
 * reward: 1 while the episode goes on, 0 on the step that ends it
 * terminates: an observation value not finite, or |qpos[1]| (the pole's angle) > 0.2 */
#include "shoal_mujoco.h"

typedef struct InvertedPendulum {
    shoal_mj mj;
} InvertedPendulum;

static const shoal_param inverted_pendulum_params[] = {
    SHOAL_MJ_PARAMS(InvertedPendulum, "inverted_pendulum.xml", 2, 0.01),
};

static const char* const inverted_pendulum_stats[] = {"reward_survive"};

static int inverted_pendulum_configure(shoal_env_spec* spec, const void* params, char* error) {
    const mjModel* model = shoal_mj_configure(spec, &((const InvertedPendulum*)params)->mj, error);
    if (!model) return 1;
    spec->obs_shape[0] = model->nq + model->nv;
    return 0;
}

static void inverted_pendulum_observe(InvertedPendulum* env) {
    const int at = shoal_mj_put(&env->mj, 0, env->mj.data->qpos, env->mj.model->nq);
    shoal_mj_put(&env->mj, at, env->mj.data->qvel, env->mj.model->nv);
}

static int inverted_pendulum_init(InvertedPendulum* env) {
    return shoal_mj_init(&env->mj);
}

static void inverted_pendulum_reset(InvertedPendulum* env) {
    shoal_mj_reset(&env->mj, SHOAL_MJ_QVEL_UNIFORM);
    inverted_pendulum_observe(env);
}

static int inverted_pendulum_step(InvertedPendulum* env) {
    shoal_mj_simulate(&env->mj, 0);
    inverted_pendulum_observe(env);
    const double* obs = (const double*)env->mj.base.observations;
    const int size = env->mj.model->nq + env->mj.model->nv;
    int terminated = fabs(obs[1]) > 0.2;
    for (int i = 0; i < size; ++i) terminated |= !isfinite(obs[i]);
    env->mj.base.rewards[0] = terminated ? 0.0f : 1.0f;
    env->mj.base.stats[0] += env->mj.base.rewards[0];
    return terminated ? shoal_mj_terminate(&env->mj) : SHOAL_EPISODE_RUNNING;
}

SHOAL_MJ_TASK(inverted_pendulum, InvertedPendulum, "InvertedPendulum-v5", 1000, inverted_pendulum_params,
              inverted_pendulum_stats)
