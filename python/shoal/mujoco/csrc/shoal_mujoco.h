/* shoal_mujoco.h — what every MuJoCo task of shoal.mujoco shares (and a user's own task can use).
 *
 * A task is a native env (shoal/env.h) whose struct starts with `shoal_mj mj` (itself starting with the
 * `shoal_env base` the SDK requires). The vector's configure() loads the MJCF once into one mjModel,
 * shared read-only by every env (base.shared); each env makes its own mjData in init() and frees it in
 * close(). The action space is the model's ctrlrange, one Box dimension per actuator, as Gymnasium's
 * MujocoEnv makes it. Everything here follows gymnasium/envs/mujoco/mujoco_env.py (v5 tasks):
 *   reset:  mj_resetData, then qpos = qpos0 + U(-s, s), qvel = 0 + s * N(0, 1) (s = reset_noise_scale,
 *           drawn from the env's own stream), then mj_forward;
 *   step:   ctrl = action, frame_skip x mj_step (and mj_rnePostConstraint for tasks that read cfrc_ext),
 *           dt = opt.timestep * frame_skip. The action is the caller's as given (outside the ctrlrange
 *           too: MuJoCo clamps the controls it applies itself, and the control costs read the raw action).
 *   instability: MuJoCo's own reset of an unstable simulation (bad qpos, qvel or qacc: NaN or huge
 *           values; it warns and calls mj_resetData) lets the env run on, as Gymnasium's does, counted in
 *           the episode stat "instability_resets"; on_instability="raise" makes it the env's EnvError.
 * Compile with -ffp-contract=off: fused multiply-adds would change the last bits of rewards that
 * Gymnasium computes with separate operations.
 */
#pragma once

#include <math.h>
#include <mujoco/mujoco.h>
#include <setjmp.h>

#include "shoal/env.h"

/** The part of a task's env struct that shoal_mj_* functions read and write. */
typedef struct shoal_mj {
    shoal_env base;
    mjData* data;
    const mjModel* model;
    /* parameters every task has (SHOAL_MJ_PARAMS) */
    const char* xml_file;
    int32_t frame_skip;
    double reset_noise_scale;
    const char* on_instability; /* "reset" (MuJoCo's reset, counted) or "raise" (EnvError) */
    double dt;                  /* model->opt.timestep * frame_skip */
    int32_t raise_on_warning;   /* on_instability == "raise": a MuJoCo warning while stepping fails the env */
    int32_t resets_stat;        /* index of "instability_resets" in base.stats */
    jmp_buf escape;             /* where a MuJoCo error in this env's callbacks returns to (shoal_mj_on_error) */
} shoal_mj;

/** The vector's shared state: the model, the action bounds taken from it, and the task's stat names
 * followed by "instability_resets". */
typedef struct shoal_mj_shared {
    mjModel* model;
    float ctrl_low[SHOAL_MAX_ACTION_DIMS];
    float ctrl_high[SHOAL_MAX_ACTION_DIMS];
    const char* stat_names[SHOAL_MAX_STATS];
    int32_t resets_stat;
    int32_t raise_on_warning;
} shoal_mj_shared;

/** The model parameters of shoal_mj (xml_file, frame_skip, on_instability), as entries of a task's
 * parameter table (TYPE: the task's struct); for tasks whose reset has no noise scale (Reacher, Pusher). */
#define SHOAL_MJ_MODEL_PARAMS(TYPE, XML_FILE, FRAME_SKIP)                                               \
    {"xml_file",                                                                                        \
     SHOAL_PARAM_TEXT,                                                                                  \
     offsetof(TYPE, mj.xml_file),                                                                       \
     0,                                                                                                 \
     0,                                                                                                 \
     0,                                                                                                 \
     "path of the MJCF model (a bare name: Gymnasium's asset of that name)",                            \
     SHOAL_PARAM_PER_VECTOR,                                                                            \
     0,                                                                                                 \
     (XML_FILE)},                                                                                       \
        {"frame_skip",                                                                                  \
         SHOAL_PARAM_INT32,                                                                             \
         offsetof(TYPE, mj.frame_skip),                                                                 \
         (FRAME_SKIP),                                                                                  \
         1,                                                                                             \
         1e6,                                                                                           \
         "mj_step calls per env step",                                                                  \
         0,                                                                                             \
         0,                                                                                             \
         NULL},                                                                                         \
        {"on_instability",                                                                              \
         SHOAL_PARAM_TEXT,                                                                              \
         offsetof(TYPE, mj.on_instability),                                                             \
         0,                                                                                             \
         0,                                                                                             \
         0,                                                                                             \
         "reset: MuJoCo resets an unstable simulation and the env runs on, as Gymnasium's (counted in " \
         "instability_resets); raise: any MuJoCo warning while stepping is an EnvError naming the env", \
         SHOAL_PARAM_PER_VECTOR,                                                                        \
         0,                                                                                             \
         "reset"}

/** Every parameter of shoal_mj (the model's and reset_noise_scale), as entries of a parameter table. */
#define SHOAL_MJ_PARAMS(TYPE, XML_FILE, FRAME_SKIP, RESET_NOISE_SCALE)                                          \
    SHOAL_MJ_MODEL_PARAMS(TYPE, XML_FILE, FRAME_SKIP), {                                                        \
        "reset_noise_scale", SHOAL_PARAM_FLOAT64, offsetof(TYPE, mj.reset_noise_scale), (RESET_NOISE_SCALE), 0, \
            INFINITY, "scale of the noise added to the initial qpos (uniform) and qvel (normal)", 0, 0, NULL    \
    }

/* MuJoCo's warnings (mju_user_warning, one pointer per process) are routed instead of printed and
 * written to MUJOCO_LOG.TXT in the working directory: while this library loads a model (configure(), on
 * the Python thread holding the GIL), its warnings are kept for Python (shoal_mj_take_load_warnings:
 * Python's warnings, shoal.mujoco.MujocoWarning); while it steps an env on a thread, a warning fails that
 * env (shoal.EnvError with MuJoCo's text) under on_instability="raise", and is counted from mjData
 * otherwise (shoal_mj_simulate), as Gymnasium's env runs on after it; any other warning (another library's, Gymnasium's
 * own envs') goes to the handler installed before, or to MuJoCo's default output if there was none. Every task library
 * chains itself in once; libraries are never unloaded. Thread-local state is two words (the load-time warnings of the
 * one GIL-holding loader are a plain buffer). */
#define SHOAL_MJ_WARNING_CAPACITY 1024
static SHOAL_THREAD_LOCAL int shoal_mj_loading SHOAL_UNUSED;
static SHOAL_THREAD_LOCAL struct shoal_mj* shoal_mj_stepping SHOAL_UNUSED;
static char shoal_mj_load_warnings[SHOAL_MJ_WARNING_CAPACITY] SHOAL_UNUSED; /* guarded by the GIL */
static void (*shoal_mj_previous_warning)(const char*) SHOAL_UNUSED = NULL;
static int shoal_mj_warnings_routed SHOAL_UNUSED = 0;

static SHOAL_UNUSED void shoal_mj_on_warning(const char* message) {
    if (shoal_mj_loading) {
        const size_t used = strlen(shoal_mj_load_warnings);
        snprintf(shoal_mj_load_warnings + used, sizeof shoal_mj_load_warnings - used, "%s\n", message);
    } else if (shoal_mj_stepping) {
        /* on_instability="reset": Gymnasium's behaviour, MuJoCo's own reset (or zeroed controls) and on;
         * shoal_mj_simulate counts the warnings from mjData */
        shoal_mj* mj = shoal_mj_stepping;
        if (mj->raise_on_warning && !mj->base.failed) shoal_env_fail(&mj->base, "MuJoCo: %s", message);
    } else if (shoal_mj_previous_warning) {
        shoal_mj_previous_warning(message);
    } else { /* MuJoCo's own default */
        mju_writeLog("WARNING", message);
        printf("WARNING: %s\n\n", message);
    }
}

/* MuJoCo's errors (mju_user_error: a stack overflow of the arena, ...) would exit the process by default.
 * While this library runs an env's callback (shoal_mj_stepping, set by SHOAL_MJ_TASK's guards) an error
 * fails that env (shoal.EnvError with MuJoCo's text) and leaves the callback through the env's `escape`;
 * its mjData is left mid-step, and the vector is not stepped again (EnvError closes it). Any other error
 * goes to the handler installed before, or to MuJoCo's default (print, log, exit). */
static void (*shoal_mj_previous_error)(const char*) SHOAL_UNUSED = NULL;

static SHOAL_UNUSED void shoal_mj_on_error(const char* message) {
    shoal_mj* mj = shoal_mj_stepping;
    if (mj) {
        shoal_mj_stepping = NULL;
        if (!mj->base.failed) shoal_env_fail(&mj->base, "MuJoCo error: %s", message);
        longjmp(mj->escape, 1);
    }
    if (shoal_mj_previous_error) {
        shoal_mj_previous_error(message);
    } else { /* MuJoCo's own default */
        mju_writeLog("ERROR", message);
        printf("ERROR: %s\n\n", message);
        exit(EXIT_FAILURE);
    }
}

static inline SHOAL_UNUSED void shoal_mj_route_warnings(void) {
    if (shoal_mj_warnings_routed) return;
    shoal_mj_previous_warning = mju_user_warning;
    mju_user_warning = shoal_mj_on_warning;
    shoal_mj_previous_error = mju_user_error;
    mju_user_error = shoal_mj_on_error;
    shoal_mj_warnings_routed = 1;
}

static inline SHOAL_UNUSED void shoal_mj_release(void* shared) {
    shoal_mj_shared* state = (shoal_mj_shared*)shared;
    if (state->model) mj_deleteModel(state->model);
    free(state);
}

/** The configure() part every task shares: loads `mj->xml_file` (MuJoCo's message on failure), makes
 * it the vector's shared state and the actuators' ctrlranges its action space. Returns the model, or
 * NULL with `error` written. The task then sets spec->obs_shape from the model. */
static inline SHOAL_UNUSED const mjModel* shoal_mj_configure(shoal_env_spec* spec, const shoal_mj* mj, char* error) {
    char message[SHOAL_ERROR_CAPACITY - 40] = "";
    shoal_mj_route_warnings();
    shoal_mj_loading = 1;
    mjModel* model = mj_loadXML(mj->xml_file, NULL, message, (int)sizeof message);
    shoal_mj_loading = 0;
    if (!model) {
        snprintf(error, SHOAL_ERROR_CAPACITY, "cannot load %s: %s", mj->xml_file, message);
        return NULL;
    }
    if (model->nu < 1 || model->nu > SHOAL_MAX_ACTION_DIMS) {
        snprintf(error, SHOAL_ERROR_CAPACITY, "%s has %d actuators (shoal.mujoco holds 1 to %d)", mj->xml_file,
                 (int)model->nu, SHOAL_MAX_ACTION_DIMS);
        mj_deleteModel(model);
        return NULL;
    }
    shoal_mj_shared* state = (shoal_mj_shared*)calloc(1, sizeof *state);
    if (!state) {
        snprintf(error, SHOAL_ERROR_CAPACITY, "out of memory");
        mj_deleteModel(model);
        return NULL;
    }
    state->model = model;
    if (strcmp(mj->on_instability, "reset") != 0 && strcmp(mj->on_instability, "raise") != 0) {
        snprintf(error, SHOAL_ERROR_CAPACITY, "on_instability must be 'reset' or 'raise', got '%.60s'",
                 mj->on_instability);
        shoal_mj_release(state);
        return NULL;
    }
    state->raise_on_warning = strcmp(mj->on_instability, "raise") == 0;
    /* The task's stats, then the count of MuJoCo's resets of an unstable simulation (every task has it). */
    if (spec->num_stats >= SHOAL_MAX_STATS) {
        snprintf(error, SHOAL_ERROR_CAPACITY, "%d stats: a MuJoCo task has at most %d (shoal adds instability_resets)",
                 (int)spec->num_stats, SHOAL_MAX_STATS - 1);
        shoal_mj_release(state);
        return NULL;
    }
    for (int32_t i = 0; i < spec->num_stats; ++i) state->stat_names[i] = spec->stat_names[i];
    state->resets_stat = spec->num_stats;
    state->stat_names[state->resets_stat] = "instability_resets";
    spec->stat_names = state->stat_names;
    spec->num_stats = state->resets_stat + 1;
    /* Gymnasium: Box(ctrlrange as float32). The core's fast check gets the range every dimension
     * shares; actions outside it go to the exact per-dimension check (NaN: there is none). */
    float low = -INFINITY, high = INFINITY;
    for (int i = 0; i < model->nu; ++i) {
        state->ctrl_low[i] = (float)model->actuator_ctrlrange[2 * i];
        state->ctrl_high[i] = (float)model->actuator_ctrlrange[2 * i + 1];
        if (state->ctrl_low[i] > low) low = state->ctrl_low[i];
        if (state->ctrl_high[i] < high) high = state->ctrl_high[i];
    }
    spec->action_kind = SHOAL_ACTION_BOX;
    spec->action_dims = model->nu;
    spec->action_lows = state->ctrl_low;
    spec->action_highs = state->ctrl_high;
    spec->action_low = low <= high ? low : NAN;
    spec->action_high = low <= high ? high : NAN;
    spec->shared = state;
    spec->release_shared = shoal_mj_release;
    return model;
}

/** init(): the env's own mjData. */
static inline SHOAL_UNUSED int shoal_mj_init(shoal_mj* mj) {
    const shoal_mj_shared* shared = (const shoal_mj_shared*)mj->base.shared;
    mj->model = shared->model;
    mj->raise_on_warning = shared->raise_on_warning;
    mj->resets_stat = shared->resets_stat;
    mj->dt = mj->model->opt.timestep * mj->frame_skip;
    mj->data = mj_makeData(mj->model);
    if (!mj->data) {
        shoal_env_fail(&mj->base, "mj_makeData failed (out of memory?)");
        return 1;
    }
    return 0;
}

static inline SHOAL_UNUSED void shoal_mj_close(shoal_mj* mj) {
    if (mj->data) mj_deleteData(mj->data);
    mj->data = NULL;
}

/** A standard normal draw from the env's stream (Box-Muller; the second value is dropped, so each
 * draw depends on the stream alone). */
static inline SHOAL_UNUSED double shoal_mj_normal(shoal_rng* rng) {
    const double u = 1.0 - shoal_rng_double(rng); /* (0, 1]: log() stays finite */
    const double v = shoal_rng_double(rng);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/** How a task draws its initial qvel noise: Gymnasium's tasks differ. */
typedef enum shoal_mj_qvel_noise {
    SHOAL_MJ_QVEL_UNIFORM = 0, /* 0 + U(-s, s) */
    SHOAL_MJ_QVEL_NORMAL = 1,  /* 0 + s * N(0, 1) */
} shoal_mj_qvel_noise;

/** Gymnasium's reset(): mj_resetData, qpos = qpos0 + U(-s, s), qvel as `qvel_noise` says, mj_forward. */
static inline SHOAL_UNUSED void shoal_mj_reset(shoal_mj* mj, shoal_mj_qvel_noise qvel_noise) {
    const mjModel* m = mj->model;
    mjData* d = mj->data;
    mj_resetData(m, d);
    const double s = mj->reset_noise_scale, low = -s, high = s;
    shoal_rng* rng = &mj->base.rng;
    for (int i = 0; i < m->nq; ++i) d->qpos[i] = m->qpos0[i] + (low + (high - low) * shoal_rng_double(rng));
    for (int i = 0; i < m->nv; ++i)
        d->qvel[i] = qvel_noise == SHOAL_MJ_QVEL_NORMAL ? 0.0 + s * shoal_mj_normal(rng)
                                                        : 0.0 + (low + (high - low) * shoal_rng_double(rng));
    mj_forward(m, d);
}

/** low + (high - low) * U[0, 1) from the env's stream (np.random.uniform's formula). */
static inline SHOAL_UNUSED double shoal_mj_uniform(shoal_mj* mj, double low, double high) {
    return low + (high - low) * shoal_rng_double(&mj->base.rng);
}

/** np.linalg.norm of a 3-vector: sqrt(x.dot(x)), the dot product as OpenBLAS's ddot computes it for
 * 3 values on x86-64 with FMA (each product fused into the running sum). */
static inline SHOAL_UNUSED double shoal_mj_norm3(const double v[3]) {
    return sqrt(fma(v[2], v[2], fma(v[1], v[1], v[0] * v[0])));
}

/** The id of body `name` in `m`, or -1 with `error` written (configure()'s check of a task's model). */
static inline SHOAL_UNUSED int shoal_mj_body(const mjModel* m, const char* xml_file, const char* name, char* error) {
    const int id = mj_name2id(m, mjOBJ_BODY, name);
    if (id < 0) snprintf(error, SHOAL_ERROR_CAPACITY, "%s has no body named %s", xml_file, name);
    return id;
}

/** np.clip(x, low, high) (NaN stays NaN). */
static inline SHOAL_UNUSED double shoal_mj_clip(double x, double low, double high) {
    return x < low ? low : x > high ? high : x;
}

/** Copies n doubles clipped to [low, high] into the observation from element `at`; returns the next. */
static inline SHOAL_UNUSED int shoal_mj_put_clipped(shoal_mj* mj, int at, const mjtNum* values, int n, double low,
                                                    double high) {
    double* out = (double*)mj->base.observations + at;
    for (int i = 0; i < n; ++i) out[i] = shoal_mj_clip(values[i], low, high);
    return at + n;
}

/** Ends the episode as a termination (Gymnasium's terminated=True). */
static inline SHOAL_UNUSED int shoal_mj_terminate(shoal_mj* mj) {
    mj->base.terminals[0] = 1;
    return SHOAL_EPISODE_OVER;
}

/* The rare part of a step after mj_step left warnings in mjData (out of the loop): MuJoCo's resets of an
 * unstable simulation are added to the episode's instability_resets, and every count is cleared, so
 * that the next step's warnings are seen (and MuJoCo's handler called again) on their own. Under
 * on_instability="raise" a reset fails the env with the warning's DOF and time. */
static SHOAL_UNUSED void shoal_mj_take_warnings(shoal_mj* mj) {
    mjData* d = mj->data;
    const int resets =
        d->warning[mjWARN_BADQPOS].number + d->warning[mjWARN_BADQVEL].number + d->warning[mjWARN_BADQACC].number;
    if (resets > 0 && mj->raise_on_warning) { /* more precise than MuJoCo's text, which failed it first */
        const int which = d->warning[mjWARN_BADQACC].number   ? mjWARN_BADQACC
                          : d->warning[mjWARN_BADQVEL].number ? mjWARN_BADQVEL
                                                              : mjWARN_BADQPOS;
        shoal_env_fail(&mj->base, "MuJoCo: the simulation is unstable (NaN, Inf or huge %s at DOF %d, time %g)",
                       which == mjWARN_BADQACC   ? "acceleration"
                       : which == mjWARN_BADQVEL ? "velocity"
                                                 : "position",
                       d->warning[which].lastinfo, d->time);
    }
    mj->base.stats[mj->resets_stat] += (float)resets;
    for (int i = 0; i < mjNWARNING; ++i) d->warning[i].number = 0;
}

/** Gymnasium's do_simulation(): ctrl = the env's actions, frame_skip steps; with `post_constraint`
 * also mj_rnePostConstraint (cacc, cfrc_int, cfrc_ext), for tasks whose reward reads them. When the
 * simulation becomes unstable, MuJoCo resets the state itself (mj_resetData: ctrl too) and warns; the
 * env runs on as Gymnasium's does, and the reset counts in instability_resets (on_instability="raise":
 * the env's EnvError instead). Warnings are read after each mj_step, since a reset clears the counts. */
static inline SHOAL_UNUSED void shoal_mj_simulate(shoal_mj* mj, int post_constraint) {
    const mjModel* m = mj->model;
    mjData* d = mj->data;
    const float* actions = (const float*)mj->base.actions;
    for (int i = 0; i < m->nu; ++i) d->ctrl[i] = actions[i];
    shoal_mj* const outer = shoal_mj_stepping; /* SHOAL_MJ_TASK's guard has set it already */
    shoal_mj_stepping = mj;
    for (int32_t k = 0; k < mj->frame_skip; ++k) {
        mj_step(m, d);
        int warned = 0;
        for (int i = 0; i < mjNWARNING; ++i) warned |= d->warning[i].number;
        if (warned) shoal_mj_take_warnings(mj);
    }
    if (post_constraint) mj_rnePostConstraint(m, d);
    shoal_mj_stepping = outer;
}

/* numpy's float32 sum (pairwise_sum of numpy/_core/src/umath/loops_utils.h: sequential below 8 values, 8
 * lanes up to 128, halves beyond), so costs Gymnasium computes with np.sum on float32 actions are
 * bit for bit the same here. */
static inline SHOAL_UNUSED float shoal_mj_sum_f32(const float* a, int n) {
    if (n < 8) {
        float sum = 0.0f;
        for (int i = 0; i < n; ++i) sum += a[i];
        return sum;
    }
    if (n <= 128) {
        float r[8];
        for (int k = 0; k < 8; ++k) r[k] = a[k];
        int i = 8;
        for (; i + 8 <= n; i += 8)
            for (int k = 0; k < 8; ++k) r[k] += a[i + k];
        float sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) sum += a[i];
        return sum;
    }
    int half = n / 2;
    half -= half % 8;
    return shoal_mj_sum_f32(a, half) + shoal_mj_sum_f32(a + half, n - half);
}

/* The same pairwise sum over doubles (np.sum of a float64 array). */
static inline SHOAL_UNUSED double shoal_mj_sum_f64(const double* a, int n) {
    if (n < 8) {
        double sum = 0.0;
        for (int i = 0; i < n; ++i) sum += a[i];
        return sum;
    }
    if (n <= 128) {
        double r[8];
        for (int k = 0; k < 8; ++k) r[k] = a[k];
        int i = 8;
        for (; i + 8 <= n; i += 8)
            for (int k = 0; k < 8; ++k) r[k] += a[i + k];
        double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) sum += a[i];
        return sum;
    }
    int half = n / 2;
    half -= half % 8;
    return shoal_mj_sum_f64(a, half) + shoal_mj_sum_f64(a + half, n - half);
}

/* np.sum(np.square(np.clip(a, low, high))) of a float64 array, in the pairwise order of np.sum, the
 * squares made on the fly (contact costs: no scratch array per step). */
static inline SHOAL_UNUSED double shoal_mj_sum_clipped_squares(const double* a, int n, double low, double high) {
#define SHOAL_MJ_SQ(I) (shoal_mj_clip(a[I], low, high) * shoal_mj_clip(a[I], low, high))
    if (n < 8) {
        double sum = 0.0;
        for (int i = 0; i < n; ++i) sum += SHOAL_MJ_SQ(i);
        return sum;
    }
    if (n <= 128) {
        double r[8];
        for (int k = 0; k < 8; ++k) r[k] = SHOAL_MJ_SQ(k);
        int i = 8;
        for (; i + 8 <= n; i += 8)
            for (int k = 0; k < 8; ++k) r[k] += SHOAL_MJ_SQ(i + k);
        double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; ++i) sum += SHOAL_MJ_SQ(i);
        return sum;
    }
#undef SHOAL_MJ_SQ
    int half = n / 2;
    half -= half % 8;
    return shoal_mj_sum_clipped_squares(a, half, low, high) +
           shoal_mj_sum_clipped_squares(a + half, n - half, low, high);
}

/** Gymnasium's control cost with float32 actions: weight * np.sum(np.square(action)), which numpy
 * computes in float32 (a Python float times a float32 is a float32). */
static inline SHOAL_UNUSED float shoal_mj_control_cost(const shoal_mj* mj, double weight) {
    const float* actions = (const float*)mj->base.actions;
    float squares[SHOAL_MAX_ACTION_DIMS];
    const int nu = mj->model->nu;
    for (int i = 0; i < nu; ++i) squares[i] = actions[i] * actions[i];
    return (float)weight * shoal_mj_sum_f32(squares, nu);
}

/** Copies n doubles into the observation from element `at` on; returns the next element. */
static inline SHOAL_UNUSED int shoal_mj_put(shoal_mj* mj, int at, const mjtNum* values, int n) {
    memcpy((double*)mj->base.observations + at, values, (size_t)n * sizeof(double));
    return at + n;
}

/** Exported by every task library (MujocoEnv.physics_state reads it through ctypes): the sizes of an
 * env's qpos and qvel, and, where `qpos`/`qvel` are not NULL, copies of them. `env` is the env's struct. */
/** Exported by every task library: the warnings of the models loaded on this thread since the last
 * call (one a line; empty if none), copied into `out` and forgotten. */
#define SHOAL_MJ_EXPORT_LOAD_WARNINGS                                                            \
    SHOAL_EXTERN_C SHOAL_VISIBLE void shoal_mj_take_load_warnings(char* out, int32_t capacity) { \
        snprintf(out, (size_t)capacity, "%s", shoal_mj_load_warnings);                           \
        shoal_mj_load_warnings[0] = 0;                                                           \
    }

#define SHOAL_MJ_EXPORT_STATE                                                                                         \
    SHOAL_EXTERN_C SHOAL_VISIBLE void shoal_mj_physics_state(const void* env, int32_t* nq, int32_t* nv, double* qpos, \
                                                             double* qvel) {                                          \
        const shoal_mj* mj = (const shoal_mj*)env;                                                                    \
        *nq = (int32_t)mj->model->nq;                                                                                 \
        *nv = (int32_t)mj->model->nv;                                                                                 \
        if (qpos) memcpy(qpos, mj->data->qpos, sizeof(double) * (size_t)mj->model->nq);                               \
        if (qvel) memcpy(qvel, mj->data->qvel, sizeof(double) * (size_t)mj->model->nv);                               \
    }

/* The task's callbacks run with MuJoCo's errors routed to the env (shoal_mj_on_error): `escape` is set
 * here, once per call (a setjmp: a few instructions against the physics). */
#define SHOAL_MJ_GUARDS(NAME, TYPE)                                   \
    static int NAME##_guarded_init(TYPE* env) {                       \
        volatile int result = 1;                                      \
        if (setjmp(env->mj.escape) == 0) {                            \
            shoal_mj_stepping = &env->mj;                             \
            result = NAME##_init(env);                                \
        }                                                             \
        shoal_mj_stepping = NULL;                                     \
        return result;                                                \
    }                                                                 \
    static void NAME##_guarded_reset(TYPE* env) {                     \
        if (setjmp(env->mj.escape) == 0) {                            \
            shoal_mj_stepping = &env->mj;                             \
            NAME##_reset(env);                                        \
        }                                                             \
        shoal_mj_stepping = NULL;                                     \
    }                                                                 \
    static int NAME##_guarded_step(TYPE* env) {                       \
        volatile int result = SHOAL_EPISODE_RUNNING; /* failed env */ \
        if (setjmp(env->mj.escape) == 0) {                            \
            shoal_mj_stepping = &env->mj;                             \
            result = NAME##_step(env);                                \
        }                                                             \
        shoal_mj_stepping = NULL;                                     \
        return result;                                                \
    }

/** The spec of task NAME (C identifier) with Gymnasium id ID: a Box of float64 observations whose
 * shape and the actions CONFIGURE sets, the 1000-step time limit of Gymnasium's registration (or
 * MAX_EPISODE_STEPS), PARAMS and STATS tables. Callbacks: NAME##_init/_reset/_step/_close/_configure. */
#define SHOAL_MJ_TASK(NAME, TYPE, ID, MAX_EPISODE_STEPS, PARAMS, STATS)                             \
    SHOAL_MJ_GUARDS(NAME, TYPE)                                                                     \
    SHOAL_ENV_CALLBACKS(NAME, TYPE, NAME##_guarded_init, NAME##_guarded_reset, NAME##_guarded_step) \
    static void shoal__##NAME##_close(void* env) {                                                  \
        shoal_mj_close(&((TYPE*)env)->mj);                                                          \
    }                                                                                               \
    static const shoal_env_spec NAME##_spec = {                                                     \
        .abi_version = SHOAL_ABI_VERSION,                                                           \
        .name = ID,                                                                                 \
        .doc = "Gymnasium's " ID " (MuJoCo), as a native env",                                      \
        .env_size = sizeof(TYPE),                                                                   \
        .env_align = SHOAL_ALIGNOF(TYPE),                                                           \
        .num_agents = 1,                                                                            \
        .obs_dtype = SHOAL_FLOAT64,                                                                 \
        .obs_ndim = 1,                                                                              \
        .obs_shape = {1},                                                                           \
        .obs_low = -INFINITY,                                                                       \
        .obs_high = INFINITY,                                                                       \
        .action_kind = SHOAL_ACTION_BOX,                                                            \
        .action_dims = 1,                                                                           \
        .action_low = -1.0f,                                                                        \
        .action_high = 1.0f,                                                                        \
        .max_episode_steps = (MAX_EPISODE_STEPS),                                                   \
        .params = PARAMS,                                                                           \
        .num_params = SHOAL_COUNT(PARAMS),                                                          \
        .stat_names = STATS,                                                                        \
        .num_stats = SHOAL_COUNT(STATS),                                                            \
        .init = shoal__##NAME##_init,                                                               \
        .reset = shoal__##NAME##_reset,                                                             \
        .step = shoal__##NAME##_step,                                                               \
        .close = shoal__##NAME##_close,                                                             \
        .class_name = #TYPE,                                                                        \
        .step_range = shoal__##NAME##_step_range,                                                   \
        .configure = NAME##_configure,                                                              \
    };                                                                                              \
    SHOAL_EXPORT_ENV(NAME, NAME##_spec)                                                             \
    SHOAL_MJ_EXPORT_STATE                                                                           \
    SHOAL_MJ_EXPORT_LOAD_WARNINGS
