/* The template of a user's own MuJoCo task: drive the cart of slider.xml to x = target and stay there.
 *
 * A task is a shoal native env whose struct starts with `shoal_mj mj` (shoal_mujoco.h, shipped with
 * shoal.mujoco): configure() loads the model once per vector, each env steps its own mjData. Write the
 * observation and reward reading mjData directly; keep per-step work free of allocation and I/O.
 * Build and load it with shoal.mujoco.source_class("slider_reach.c", "slider_reach") (see run_slider_reach.py).
 *
 * observation: qpos, qvel, target - qpos[0]
 * reward: -|target - x| - ctrl_cost_weight * action^2; terminates when |target - x| < tolerance */
#include "shoal_mujoco.h"

typedef struct SliderReach {
    shoal_mj mj; /* first: the SDK's base and the MuJoCo state */
    double target;
    double tolerance;
    double ctrl_cost_weight;
} SliderReach;

static const shoal_param slider_reach_params[] = {
    SHOAL_MJ_PARAMS(SliderReach, "slider.xml", 2, 0.1), /* xml_file, frame_skip, reset_noise_scale */
    SHOAL_PARAM_DOUBLE(SliderReach, target, 1.0, -3.0, 3.0, "where the cart should go"),
    SHOAL_PARAM_DOUBLE(SliderReach, tolerance, 0.01, 0.0, INFINITY, "distance that counts as arrived"),
    SHOAL_PARAM_DOUBLE(SliderReach, ctrl_cost_weight, 0.01, 0.0, INFINITY, "weight of action^2"),
};

static const char* const slider_reach_stats[] = {"reward_distance", "reward_ctrl"};

/* Once per vector: load the model (shoal_mj_configure), then size the observation from it. */
static int slider_reach_configure(shoal_env_spec* spec, const void* params, char* error) {
    const mjModel* model = shoal_mj_configure(spec, &((const SliderReach*)params)->mj, error);
    if (!model) return 1;
    spec->obs_shape[0] = model->nq + model->nv + 1;
    return 0;
}

static void slider_reach_observe(SliderReach* env) {
    const mjData* d = env->mj.data;
    int at = shoal_mj_put(&env->mj, 0, d->qpos, env->mj.model->nq);
    at = shoal_mj_put(&env->mj, at, d->qvel, env->mj.model->nv);
    ((double*)env->mj.base.observations)[at] = env->target - d->qpos[0];
}

static int slider_reach_init(SliderReach* env) {
    return shoal_mj_init(&env->mj);
}

static void slider_reach_reset(SliderReach* env) {
    shoal_mj_reset(&env->mj, SHOAL_MJ_QVEL_UNIFORM);
    slider_reach_observe(env);
}

static int slider_reach_step(SliderReach* env) {
    shoal_mj_simulate(&env->mj, 0);
    slider_reach_observe(env);
    const double distance = fabs(env->target - env->mj.data->qpos[0]);
    const float ctrl_cost = shoal_mj_control_cost(&env->mj, env->ctrl_cost_weight);
    env->mj.base.rewards[0] = (float)(-distance - ctrl_cost);
    env->mj.base.stats[0] -= (float)distance;
    env->mj.base.stats[1] -= ctrl_cost;
    return distance < env->tolerance ? shoal_mj_terminate(&env->mj) : SHOAL_EPISODE_RUNNING;
}

/* The spec and its export: name, struct, id, time limit (steps), parameter and stat tables. */
SHOAL_MJ_TASK(slider_reach, SliderReach, "SliderReach-v0", 200, slider_reach_params, slider_reach_stats)
