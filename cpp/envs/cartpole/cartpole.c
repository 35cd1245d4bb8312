/* cartpole — balance a pole on a cart, bit-identical to gymnasium 1.x CartPole-v1.
 *
 * The dynamics are gymnasium's (Barto, Sutton & Anderson 1983, with Florian's 2005 correction of
 * the equations): float64 state, explicit Euler integration every tau = 0.02 s, and the same
 * order of floating-point operations, so every step matches gymnasium bit for bit from the same
 * state. The physics constants are compile-time doubles equal to gymnasium's Python floats;
 * cartpole therefore takes no parameters (float32 params could not hold 9.8 or 0.02 exactly).
 *
 *   observation  float32 {4}: x, x_dot, theta, theta_dot (the state rounded to float32)
 *   action       Discrete(2): 0 pushes the cart left, 1 pushes it right
 *   reward       1.0 on every step, the terminating one included
 *   terminal     |x| > 2.4 or |theta| > 12 degrees
 *   time limit   500 steps (a truncation, applied by the core)
 *   reset        every state component uniform in [-0.05, 0.05) from the env's rng
 *
 * Differences from gymnasium: only the reset draws (shoal's PCG32 stream instead of numpy's
 * generator), and actions other than 0 and 1 push left instead of failing an assert.
 */
#include <math.h>

#include "shoal/env.h"

/* Bit-exactness: a fused multiply-add rounds once where gymnasium rounds twice. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#define CARTPOLE_GRAVITY 9.8
#define CARTPOLE_MASSCART 1.0
#define CARTPOLE_MASSPOLE 0.1
#define CARTPOLE_TOTAL_MASS (CARTPOLE_MASSPOLE + CARTPOLE_MASSCART)
#define CARTPOLE_LENGTH 0.5 /* half the pole's length */
#define CARTPOLE_POLEMASS_LENGTH (CARTPOLE_MASSPOLE * CARTPOLE_LENGTH)
#define CARTPOLE_FORCE_MAG 10.0
#define CARTPOLE_TAU 0.02             /* seconds between state updates */
#define CARTPOLE_PI 3.141592653589793 /* math.pi */
#define CARTPOLE_THETA_THRESHOLD (12 * 2 * CARTPOLE_PI / 360)
#define CARTPOLE_X_THRESHOLD 2.4
#define CARTPOLE_RESET_BOUND 0.05

typedef struct Cartpole {
    shoal_env base;
    /* The float64 state. Keep these four fields first after `base` and in this order: the Python
     * tests read and write them at byte offset round_up(sizeof(shoal_env), 8) of the struct. */
    double x;
    double x_dot;
    double theta;
    double theta_dot;
} Cartpole;

_Static_assert(offsetof(Cartpole, x) == (sizeof(shoal_env) + 7) / 8 * 8,
               "the Python tests expect the state right after base");

static void cartpole_write_observation(Cartpole* env) {
    float* observation = (float*)env->base.observations;
    observation[0] = (float)env->x;
    observation[1] = (float)env->x_dot;
    observation[2] = (float)env->theta;
    observation[3] = (float)env->theta_dot;
}

static int cartpole_init(Cartpole* env) {
    (void)env;
    return 0;
}

static double cartpole_draw(Cartpole* env) {
    return -CARTPOLE_RESET_BOUND + 2 * CARTPOLE_RESET_BOUND * shoal_rng_double(&env->base.rng);
}

static void cartpole_reset(Cartpole* env) {
    env->x = cartpole_draw(env);
    env->x_dot = cartpole_draw(env);
    env->theta = cartpole_draw(env);
    env->theta_dot = cartpole_draw(env);
    cartpole_write_observation(env);
}

static int cartpole_step(Cartpole* env) {
    const int32_t action = ((const int32_t*)env->base.actions)[0];
    const double force = action == 1 ? CARTPOLE_FORCE_MAG : -CARTPOLE_FORCE_MAG;
    const double costheta = cos(env->theta);
    const double sintheta = sin(env->theta);

    /* Each expression groups left to right exactly like gymnasium's Python source. */
    const double temp =
        (force + CARTPOLE_POLEMASS_LENGTH * (env->theta_dot * env->theta_dot) * sintheta) / CARTPOLE_TOTAL_MASS;
    const double thetaacc =
        (CARTPOLE_GRAVITY * sintheta - costheta * temp) /
        (CARTPOLE_LENGTH * (4.0 / 3.0 - CARTPOLE_MASSPOLE * (costheta * costheta) / CARTPOLE_TOTAL_MASS));
    const double xacc = temp - CARTPOLE_POLEMASS_LENGTH * thetaacc * costheta / CARTPOLE_TOTAL_MASS;

    /* Explicit Euler: positions advance with the old velocities. */
    env->x = env->x + CARTPOLE_TAU * env->x_dot;
    env->x_dot = env->x_dot + CARTPOLE_TAU * xacc;
    env->theta = env->theta + CARTPOLE_TAU * env->theta_dot;
    env->theta_dot = env->theta_dot + CARTPOLE_TAU * thetaacc;
    cartpole_write_observation(env);

    const int terminated = env->x < -CARTPOLE_X_THRESHOLD || env->x > CARTPOLE_X_THRESHOLD ||
                           env->theta < -CARTPOLE_THETA_THRESHOLD || env->theta > CARTPOLE_THETA_THRESHOLD;
    env->base.rewards[0] = 1.0f;
    if (!terminated) return SHOAL_EPISODE_RUNNING;
    env->base.terminals[0] = 1;
    return SHOAL_EPISODE_OVER;
}

SHOAL_ENV_CALLBACKS(cartpole, Cartpole, cartpole_init, cartpole_reset, cartpole_step)

static const shoal_env_spec cartpole_spec = {
    SHOAL_SPEC_CALLBACKS(cartpole, Cartpole),
    .class_name = "CartPole",
    .doc = "Balance a pole on a moving cart: gymnasium's CartPole-v1, bit for bit.",
    .num_agents = 1,
    .obs_dtype = SHOAL_FLOAT32,
    .obs_ndim = 1,
    .obs_shape = {4},
    .obs_low = -INFINITY,
    .obs_high = INFINITY,
    .action_kind = SHOAL_ACTION_DISCRETE,
    .action_dims = 1,
    .action_nvec = {2},
    .max_episode_steps = 500,
};

SHOAL_EXPORT_ENV(cartpole, cartpole_spec)
