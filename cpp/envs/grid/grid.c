/* grid — four agents forage for food in a walled 16x16 world strewn with deadly traps.
 *
 *   agents       4 per env
 *   observation  uint8 {5, 5} per agent: the window centred on the agent, row-major, with codes
 *                0 empty, 1 wall, 2 trap, 3 agent (the centre cell is the agent itself), 4 food
 *   action       Discrete(5): 0 noop, 1 up, 2 down, 3 left, 4 right; any other value is a noop
 *   reward       +1 for each food item an agent steps on; eaten food respawns at once on a
 *                random empty cell, so there are always num_food items
 *   traps        an agent that steps on a trap dies: on that step terminals[a] = 1 and its
 *                observation is still its view (centred on the trap); from the next step until
 *                the env resets masks[a] = 0, its reward is 0, its observation is all zeros and
 *                its actions are ignored. A dead agent leaves the world.
 *   episode      over when every agent is dead; time limit 128 steps (a truncation)
 *   reset        traps, then food, then agents on distinct random empty cells
 *   stats        food_eaten, deaths (per episode, summed over agents)
 *
 * Agents move one after another in index order; a move into a wall or into a living agent
 * leaves the mover where it is.
 */
#include <string.h>

#include "shoal/env.h"

#define GRID_SIZE 16
#define GRID_AGENTS 4
#define GRID_VIEW 5
#define GRID_RADIUS (GRID_VIEW / 2)
#define GRID_INTERIOR_CELLS ((GRID_SIZE - 2) * (GRID_SIZE - 2))

#define GRID_EMPTY 0
#define GRID_WALL 1
#define GRID_TRAP 2
#define GRID_AGENT 3
#define GRID_FOOD 4

#define GRID_MAX_TRAPS 60
#define GRID_MAX_FOOD 60

#define GRID_STAT_FOOD_EATEN 0
#define GRID_STAT_DEATHS 1

/* Bounds keep an empty interior cell for every respawn, however the params are set. */
_Static_assert(GRID_MAX_TRAPS + GRID_MAX_FOOD + GRID_AGENTS < GRID_INTERIOR_CELLS, "grid too crowded");

typedef struct Grid {
    shoal_env base;
    int32_t num_traps; /* param */
    int32_t num_food;  /* param */
    int32_t row[GRID_AGENTS];
    int32_t col[GRID_AGENTS];
    uint8_t alive[GRID_AGENTS];
    uint8_t dead_shown[GRID_AGENTS]; /* the death step has been reported; mask the agent now */
    uint8_t cells[GRID_SIZE][GRID_SIZE];
} Grid;

static const shoal_param grid_params[] = {
    SHOAL_PARAM_INT(Grid, num_traps, 6, 0, GRID_MAX_TRAPS, "traps placed at random on every reset"),
    SHOAL_PARAM_INT(Grid, num_food, 8, 1, GRID_MAX_FOOD, "food items in the world at any time"),
};

static const char* const grid_stat_names[] = {"food_eaten", "deaths"};

/* Row and column offsets of the five actions. */
static const int32_t grid_moves[5][2] = {{0, 0}, {-1, 0}, {1, 0}, {0, -1}, {0, 1}};

static int grid_init(Grid* env) {
    if (env->num_traps < 0 || env->num_traps > GRID_MAX_TRAPS)
        shoal_env_fail(&env->base, "num_traps must be in [0, %d], got %d", GRID_MAX_TRAPS, env->num_traps);
    else if (env->num_food < 1 || env->num_food > GRID_MAX_FOOD)
        shoal_env_fail(&env->base, "num_food must be in [1, %d], got %d", GRID_MAX_FOOD, env->num_food);
    return env->base.failed;
}

/* A uniformly random empty interior cell (rejection sampling; at least a third is empty). */
static void grid_empty_cell(Grid* env, int32_t* row, int32_t* col) {
    for (;;) {
        const int32_t cell = (int32_t)shoal_rng_below(&env->base.rng, GRID_INTERIOR_CELLS);
        *row = 1 + cell / (GRID_SIZE - 2);
        *col = 1 + cell % (GRID_SIZE - 2);
        if (env->cells[*row][*col] == GRID_EMPTY) return;
    }
}

static void grid_place(Grid* env, uint8_t code) {
    int32_t row, col;
    grid_empty_cell(env, &row, &col);
    env->cells[row][col] = code;
}

static void grid_write_observations(Grid* env) {
    uint8_t* observations = (uint8_t*)env->base.observations;
    for (int32_t a = 0; a < GRID_AGENTS; ++a) {
        uint8_t* view = observations + a * GRID_VIEW * GRID_VIEW;
        if (!env->alive[a] && env->dead_shown[a]) {
            memset(view, 0, GRID_VIEW * GRID_VIEW);
            continue;
        }
        for (int32_t dr = 0; dr < GRID_VIEW; ++dr) {
            const int32_t r = env->row[a] + dr - GRID_RADIUS;
            for (int32_t dc = 0; dc < GRID_VIEW; ++dc) {
                const int32_t c = env->col[a] + dc - GRID_RADIUS;
                const int inside = r >= 0 && r < GRID_SIZE && c >= 0 && c < GRID_SIZE;
                view[dr * GRID_VIEW + dc] = inside ? env->cells[r][c] : GRID_WALL;
            }
        }
        /* A dying agent is already gone from the world; its last view is centred on the trap. */
        if (env->alive[a]) view[GRID_RADIUS * GRID_VIEW + GRID_RADIUS] = GRID_AGENT;
    }
}

static void grid_reset(Grid* env) {
    memset(env->cells, GRID_EMPTY, sizeof env->cells);
    for (int32_t i = 0; i < GRID_SIZE; ++i) {
        env->cells[0][i] = GRID_WALL;
        env->cells[GRID_SIZE - 1][i] = GRID_WALL;
        env->cells[i][0] = GRID_WALL;
        env->cells[i][GRID_SIZE - 1] = GRID_WALL;
    }
    for (int32_t i = 0; i < env->num_traps; ++i) grid_place(env, GRID_TRAP);
    for (int32_t i = 0; i < env->num_food; ++i) grid_place(env, GRID_FOOD);
    for (int32_t a = 0; a < GRID_AGENTS; ++a) {
        grid_empty_cell(env, &env->row[a], &env->col[a]);
        env->cells[env->row[a]][env->col[a]] = GRID_AGENT;
        env->alive[a] = 1;
        env->dead_shown[a] = 0;
    }
    grid_write_observations(env);
}

static int grid_step(Grid* env) {
    const int32_t* actions = (const int32_t*)env->base.actions;
    int32_t living = 0;
    for (int32_t a = 0; a < GRID_AGENTS; ++a) {
        if (!env->alive[a]) {
            /* Dead since an earlier step: the core set the mask to 1 only at reset. */
            env->dead_shown[a] = 1;
            env->base.masks[a] = 0;
            continue;
        }
        const int32_t action = actions[a];
        if (action > 0 && action < 5) {
            const int32_t row = env->row[a] + grid_moves[action][0];
            const int32_t col = env->col[a] + grid_moves[action][1];
            const uint8_t target = env->cells[row][col];
            if (target != GRID_WALL && target != GRID_AGENT) {
                env->cells[env->row[a]][env->col[a]] = GRID_EMPTY;
                env->row[a] = row;
                env->col[a] = col;
                if (target == GRID_TRAP) {
                    env->alive[a] = 0;
                    env->base.terminals[a] = 1;
                    env->base.stats[GRID_STAT_DEATHS] += 1.0f;
                    continue;
                }
                env->cells[row][col] = GRID_AGENT;
                if (target == GRID_FOOD) {
                    env->base.rewards[a] = 1.0f;
                    env->base.stats[GRID_STAT_FOOD_EATEN] += 1.0f;
                    grid_place(env, GRID_FOOD);
                }
            }
        }
        living += 1;
    }
    grid_write_observations(env);
    return living == 0 ? SHOAL_EPISODE_OVER : SHOAL_EPISODE_RUNNING;
}

SHOAL_ENV_CALLBACKS(grid, Grid, grid_init, grid_reset, grid_step)

static const shoal_env_spec grid_spec = {
    SHOAL_SPEC_CALLBACKS(grid, Grid),
    .class_name = "Grid",
    .doc = "Four agents with 5x5 views eat respawning food in a 16x16 world; stepping on a trap kills.",
    .num_agents = GRID_AGENTS,
    .obs_dtype = SHOAL_UINT8,
    .obs_ndim = 2,
    .obs_shape = {GRID_VIEW, GRID_VIEW},
    .obs_low = 0,
    .obs_high = GRID_FOOD,
    .action_kind = SHOAL_ACTION_DISCRETE,
    .action_dims = 1,
    .action_nvec = {5},
    .max_episode_steps = 128,
    .params = grid_params,
    .num_params = SHOAL_COUNT(grid_params),
    .stat_names = grid_stat_names,
    .num_stats = SHOAL_COUNT(grid_stat_names),
};

SHOAL_EXPORT_ENV(grid, grid_spec)
