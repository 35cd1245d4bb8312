/* Pusher-v5 (gymnasium/envs/mujoco/pusher_v5.py): push the object to the goal with the arm; never terminates.
 * observation: qpos[:-4], qvel[:-4] (the arm's 7 joints; the last 4 are the object's and the goal's
 *   slides), the positions of the bodies tips_arm, object, goal
 * reward: -reward_dist_weight * |object - goal| - reward_control_weight * sum(action^2)
 *         - reward_near_weight * |object - tips_arm|
 * reset: qpos = qpos0 with the object at (U(-0.3, 0), U(-0.2, 0.2)) redrawn until farther than 0.17
 *   from the goal (0, 0); qvel = U(-0.005, 0.005) with the object's and goal's qvel[-4:] = 0 */
#include "shoal_mujoco.h"

typedef struct Pusher {
    shoal_mj mj;
    double reward_near_weight;
    double reward_dist_weight;
    double reward_control_weight;
    int tips_arm, object, goal; /* body ids */
} Pusher;

static const shoal_param pusher_params[] = {
    SHOAL_MJ_MODEL_PARAMS(Pusher, "pusher_v5.xml", 5),
    SHOAL_PARAM_DOUBLE(Pusher, reward_near_weight, 0.5, -INFINITY, INFINITY,
                       "weight of the arm's tip's distance to the object"),
    SHOAL_PARAM_DOUBLE(Pusher, reward_dist_weight, 1.0, -INFINITY, INFINITY,
                       "weight of the object's distance to the goal"),
    SHOAL_PARAM_DOUBLE(Pusher, reward_control_weight, 0.1, -INFINITY, INFINITY, "weight of sum(action^2)"),
};

static const char* const pusher_stats[] = {"reward_dist", "reward_ctrl", "reward_near"};

static int pusher_configure(shoal_env_spec* spec, const void* params, char* error) {
    const Pusher* env = (const Pusher*)params;
    const mjModel* m = shoal_mj_configure(spec, &env->mj, error);
    if (!m) return 1;
    if (shoal_mj_body(m, env->mj.xml_file, "tips_arm", error) < 0 ||
        shoal_mj_body(m, env->mj.xml_file, "object", error) < 0 ||
        shoal_mj_body(m, env->mj.xml_file, "goal", error) < 0)
        return 1;
    if (m->nq < 5 || m->nv < 5) {
        snprintf(error, SHOAL_ERROR_CAPACITY, "%s needs arm joints and 4 object/goal slides (has nq=%d, nv=%d)",
                 env->mj.xml_file, (int)m->nq, (int)m->nv);
        return 1;
    }
    spec->obs_shape[0] = (m->nq - 4) + (m->nv - 4) + 9;
    return 0;
}

static void pusher_observe(Pusher* env) {
    const mjModel* m = env->mj.model;
    const mjData* d = env->mj.data;
    int at = shoal_mj_put(&env->mj, 0, d->qpos, m->nq - 4);
    at = shoal_mj_put(&env->mj, at, d->qvel, m->nv - 4);
    at = shoal_mj_put(&env->mj, at, d->xpos + 3 * env->tips_arm, 3);
    at = shoal_mj_put(&env->mj, at, d->xpos + 3 * env->object, 3);
    shoal_mj_put(&env->mj, at, d->xpos + 3 * env->goal, 3);
}

static int pusher_init(Pusher* env) {
    if (shoal_mj_init(&env->mj) != 0) return 1;
    env->tips_arm = mj_name2id(env->mj.model, mjOBJ_BODY, "tips_arm");
    env->object = mj_name2id(env->mj.model, mjOBJ_BODY, "object");
    env->goal = mj_name2id(env->mj.model, mjOBJ_BODY, "goal");
    return 0;
}

static void pusher_reset(Pusher* env) {
    const mjModel* m = env->mj.model;
    mjData* d = env->mj.data;
    mj_resetData(m, d); /* qpos = qpos0, qvel = 0 */
    double object[2];
    do {
        object[0] = shoal_mj_uniform(&env->mj, -0.3, 0.0);
        object[1] = shoal_mj_uniform(&env->mj, -0.2, 0.2);
    } while (!(sqrt(object[0] * object[0] + object[1] * object[1]) > 0.17));
    d->qpos[m->nq - 4] = object[0];
    d->qpos[m->nq - 3] = object[1];
    d->qpos[m->nq - 2] = d->qpos[m->nq - 1] = 0.0;
    for (int i = 0; i < m->nv; ++i) d->qvel[i] = 0.0 + shoal_mj_uniform(&env->mj, -0.005, 0.005);
    for (int i = m->nv - 4; i < m->nv; ++i) d->qvel[i] = 0.0;
    mj_forward(m, d);
    pusher_observe(env);
}

static int pusher_step(Pusher* env) {
    const mjData* d = env->mj.data;
    shoal_mj_simulate(&env->mj, 0);
    pusher_observe(env);
    double to_tip[3], to_goal[3];
    for (int k = 0; k < 3; ++k) {
        to_tip[k] = d->xpos[3 * env->object + k] - d->xpos[3 * env->tips_arm + k];
        to_goal[k] = d->xpos[3 * env->object + k] - d->xpos[3 * env->goal + k];
    }
    const double reward_near = -shoal_mj_norm3(to_tip) * env->reward_near_weight;
    const double reward_dist = -shoal_mj_norm3(to_goal) * env->reward_dist_weight;
    /* float32, as numpy computes -sum(square(float32 action)) * weight */
    const float reward_ctrl = -shoal_mj_control_cost(&env->mj, env->reward_control_weight);
    env->mj.base.rewards[0] = (float)(reward_dist + reward_ctrl + reward_near);
    env->mj.base.stats[0] += (float)reward_dist;
    env->mj.base.stats[1] += reward_ctrl;
    env->mj.base.stats[2] += (float)reward_near;
    return SHOAL_EPISODE_RUNNING;
}

SHOAL_MJ_TASK(pusher, Pusher, "Pusher-v5", 100, pusher_params, pusher_stats)
