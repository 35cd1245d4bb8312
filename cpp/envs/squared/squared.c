/* squared — walk from the centre of a small grid to a target on its border.
 *
 *   observation  uint8 {11, 11}: the whole grid, 0 = empty, 1 = agent, 2 = target
 *                (a cell holding both shows the agent)
 *   action       Discrete(5): 0 noop, 1 up, 2 down, 3 left, 4 right; a move off the grid
 *                leaves the agent where it is, and any other action value is a noop
 *   reward       +1 on the step that reaches the target (terminal), -0.01 on every other step
 *   time limit   60 steps (a truncation, applied by the core)
 *   reset        agent in the centre cell, target uniform over the 40 border cells
 *   stats        hit: 1 if the episode ended on the target, else 0
 *
 * The shortest path is 5 to 10 steps, so a random policy hits the target in a fraction of its
 * episodes and truncates in the rest.
 */
#include <string.h>

#include "shoal/env.h"

#define SQUARED_SIZE 11
#define SQUARED_CENTER (SQUARED_SIZE / 2)
#define SQUARED_BORDER_CELLS (4 * (SQUARED_SIZE - 1))

#define SQUARED_EMPTY 0
#define SQUARED_AGENT 1
#define SQUARED_TARGET 2

#define SQUARED_STAT_HIT 0

typedef struct Squared {
    shoal_env base;
    int32_t agent_row;
    int32_t agent_col;
    int32_t target_row;
    int32_t target_col;
} Squared;

static const char* const squared_stat_names[] = {"hit"};

/* Row and column offsets of the five actions. */
static const int32_t squared_moves[5][2] = {{0, 0}, {-1, 0}, {1, 0}, {0, -1}, {0, 1}};

static void squared_write_observation(Squared* env) {
    uint8_t* grid = (uint8_t*)env->base.observations;
    memset(grid, SQUARED_EMPTY, SQUARED_SIZE * SQUARED_SIZE);
    grid[env->target_row * SQUARED_SIZE + env->target_col] = SQUARED_TARGET;
    grid[env->agent_row * SQUARED_SIZE + env->agent_col] = SQUARED_AGENT;
}

static int squared_init(Squared* env) {
    (void)env;
    return 0;
}

static void squared_reset(Squared* env) {
    env->agent_row = SQUARED_CENTER;
    env->agent_col = SQUARED_CENTER;
    /* Border cells numbered clockwise from the top-left corner, SIZE - 1 per side. */
    const int32_t side_length = SQUARED_SIZE - 1;
    const int32_t cell = (int32_t)shoal_rng_below(&env->base.rng, SQUARED_BORDER_CELLS);
    const int32_t side = cell / side_length;
    const int32_t along = cell % side_length;
    switch (side) {
        case 0:
            env->target_row = 0;
            env->target_col = along;
            break;
        case 1:
            env->target_row = along;
            env->target_col = side_length;
            break;
        case 2:
            env->target_row = side_length;
            env->target_col = side_length - along;
            break;
        default:
            env->target_row = side_length - along;
            env->target_col = 0;
            break;
    }
    squared_write_observation(env);
}

static int32_t squared_clip(int32_t value) {
    return value < 0 ? 0 : value >= SQUARED_SIZE ? SQUARED_SIZE - 1 : value;
}

static int squared_step(Squared* env) {
    const int32_t action = ((const int32_t*)env->base.actions)[0];
    if (action > 0 && action < 5) {
        env->agent_row = squared_clip(env->agent_row + squared_moves[action][0]);
        env->agent_col = squared_clip(env->agent_col + squared_moves[action][1]);
    }
    squared_write_observation(env);
    if (env->agent_row == env->target_row && env->agent_col == env->target_col) {
        env->base.rewards[0] = 1.0f;
        env->base.terminals[0] = 1;
        env->base.stats[SQUARED_STAT_HIT] = 1.0f;
        return SHOAL_EPISODE_OVER;
    }
    env->base.rewards[0] = -0.01f;
    return SHOAL_EPISODE_RUNNING;
}

SHOAL_ENV_CALLBACKS(squared, Squared, squared_init, squared_reset, squared_step)

static const shoal_env_spec squared_spec = {
    SHOAL_SPEC_CALLBACKS(squared, Squared),
    .class_name = "Squared",
    .doc = "Walk from the centre of an 11x11 grid to a random target on its border.",
    .num_agents = 1,
    .obs_dtype = SHOAL_UINT8,
    .obs_ndim = 2,
    .obs_shape = {SQUARED_SIZE, SQUARED_SIZE},
    .obs_low = 0,
    .obs_high = 2,
    .action_kind = SHOAL_ACTION_DISCRETE,
    .action_dims = 1,
    .action_nvec = {5},
    .max_episode_steps = 60,
    .stat_names = squared_stat_names,
    .num_stats = SHOAL_COUNT(squared_stat_names),
};

SHOAL_EXPORT_ENV(squared, squared_spec)
