/* limit.c — the "limit" of bench/bench_native.py: an env's own callbacks in a bare C loop.
 *
 * Compiled once per env by bench/native/CMakeLists.txt with the env's source included here
 * (SHOAL_LIMIT_SOURCE) and the flags the extension compiles env code with, so the env code is the
 * same machine code shoal runs. The loop keeps the semantics that make results comparable: the
 * caller's actions copied into the action buffer once per step, rewards and flags zeroed, same-step
 * reset, the time limit as truncations. What it leaves out is what shoal adds: episode returns and
 * logs, final observations, error checks, chunking, threads and Python.
 *
 *   double shoal_limit_sps(size_t num_envs, uint64_t steps_per_env)   env steps per second
 *   double shoal_limit_cpu_sps(size_t num_envs, uint64_t steps_per_env)   the same per CPU second
 *   double shoal_limit_sps_threads(size_t num_envs, uint64_t steps_per_env, unsigned threads)
 *       the same loop split into `threads` contiguous slices stepped by that many threads, which
 *       meet at a spinning barrier after every step (the caller copies the actions in between):
 *       the limit of a fork-join vector on this machine's CPUs, with nothing but the barrier added.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include SHOAL_LIMIT_SOURCE

#define SHOAL_LIMIT_CAT2(A, B) A##B
#define SHOAL_LIMIT_CAT(A, B) SHOAL_LIMIT_CAT2(A, B)
#define SHOAL_LIMIT_TRAMPOLINE(WHAT) SHOAL_LIMIT_CAT(SHOAL_LIMIT_CAT(shoal__, SHOAL_LIMIT_NAME), WHAT)
#define SHOAL_LIMIT_SPEC SHOAL_LIMIT_CAT(shoal_env_spec_, SHOAL_LIMIT_NAME)

/* Action batches generated in advance and cycled, like the Python timing loop. */
#define SHOAL_LIMIT_BATCHES 16
#define SHOAL_LIMIT_WARMUP_STEPS 20

static double shoal_limit_now_on(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double shoal_limit_now(void) {
    return shoal_limit_now_on(CLOCK_MONOTONIC);
}

static void shoal_limit_write_params(const shoal_env_spec* spec, unsigned char* env) {
    for (int32_t p = 0; p < spec->num_params; ++p) {
        const shoal_param* param = &spec->params[p];
        if (param->type == SHOAL_PARAM_INT32) {
            const int32_t value = (int32_t)param->default_value;
            memcpy(env + param->offset, &value, sizeof value);
        } else {
            const float value = (float)param->default_value;
            memcpy(env + param->offset, &value, sizeof value);
        }
    }
}

/* One step of every env: the bare loop, with the env's callbacks inlined like shoal's own loop. */
static SHOAL_FLATTEN void shoal_limit_step_all(unsigned char* envs, size_t stride, size_t num_envs, size_t agents,
                                               uint32_t max_episode_steps) {
    for (size_t i = 0; i < num_envs; ++i) {
        shoal_env* env = (shoal_env*)(envs + i * stride);
        for (size_t a = 0; a < agents; ++a) {
            env->rewards[a] = 0.0f;
            env->terminals[a] = 0;
            env->truncations[a] = 0;
        }
        int over = SHOAL_LIMIT_TRAMPOLINE(_step)(env) != SHOAL_EPISODE_RUNNING;
        env->tick += 1;
        if (max_episode_steps != 0 && env->tick >= max_episode_steps) {
            for (size_t a = 0; a < agents; ++a) env->truncations[a] = 1;
            over = 1;
        }
        if (over) {
            env->tick = 0;
            SHOAL_LIMIT_TRAMPOLINE(_reset)(env);
        }
    }
}

/* The envs, buffers and action batches of one measurement. */
typedef struct shoal_limit_vec {
    const shoal_env_spec* spec;
    size_t num_envs, agents, rows, stride, action_bytes;
    unsigned char* envs;
    unsigned char* observations;
    int32_t* actions;
    int32_t* batches;
    float* rewards;
    uint8_t* flags;
    char* errors;
    size_t initialized;
} shoal_limit_vec;

static void shoal_limit_free(shoal_limit_vec* v) {
    if (v->spec->close)
        for (size_t i = 0; i < v->initialized; ++i) v->spec->close(v->envs + i * v->stride);
    free(v->envs);
    free(v->observations);
    free(v->actions);
    free(v->batches);
    free(v->rewards);
    free(v->flags);
    free(v->errors);
}

/* Allocates and resets `num_envs` envs; 0 on success. */
static int shoal_limit_init(shoal_limit_vec* v, size_t num_envs) {
    const shoal_env_spec* spec = SHOAL_LIMIT_SPEC();
    memset(v, 0, sizeof *v);
    v->spec = spec;
    v->num_envs = num_envs;
    v->agents = (size_t)spec->num_agents;
    v->rows = num_envs * v->agents;
    size_t observation_bytes = spec->obs_dtype == SHOAL_FLOAT32 || spec->obs_dtype == SHOAL_INT32 ? 4 : 1;
    for (int32_t d = 0; d < spec->obs_ndim; ++d) observation_bytes *= (size_t)spec->obs_shape[d];
    v->action_bytes = (size_t)spec->action_dims * 4;
    v->stride = (spec->env_size + spec->env_align - 1) / spec->env_align * spec->env_align;
    const size_t rows = v->rows;

    v->envs = aligned_alloc(spec->env_align, v->stride * num_envs); /* packed: no padding */
    v->observations = malloc(rows * observation_bytes);
    v->actions = malloc(rows * v->action_bytes);
    v->batches = malloc(SHOAL_LIMIT_BATCHES * rows * v->action_bytes);
    v->rewards = malloc(rows * sizeof(float));
    v->flags = malloc(3 * rows);
    v->errors = malloc(num_envs * SHOAL_ERROR_CAPACITY);
    if (!v->envs || !v->observations || !v->actions || !v->batches || !v->rewards || !v->flags || !v->errors) return -1;
    memset(v->envs, 0, v->stride * num_envs);
    memset(v->actions, 0, rows * v->action_bytes);
    memset(v->flags, 0, 3 * rows);
    /* Actions uniform over each dimension's range (Box actions: 0.0f), from a fixed LCG. */
    uint64_t lcg = 12345;
    for (size_t k = 0; k < SHOAL_LIMIT_BATCHES * rows * (size_t)spec->action_dims; ++k) {
        lcg = lcg * 6364136223846793005ULL + 1442695040888963407ULL;
        const int32_t range = spec->action_kind == SHOAL_ACTION_BOX ? 1 : spec->action_nvec[k % spec->action_dims];
        v->batches[k] = spec->action_kind == SHOAL_ACTION_BOX ? 0 : (int32_t)((lcg >> 33) % (uint64_t)range);
    }
    for (size_t i = 0; i < num_envs; ++i) {
        shoal_env* env = (shoal_env*)(v->envs + i * v->stride);
        env->observations = v->observations + i * v->agents * observation_bytes;
        env->actions = (unsigned char*)v->actions + i * v->action_bytes * v->agents;
        env->rewards = v->rewards + i * v->agents;
        env->terminals = v->flags + i * v->agents;
        env->truncations = v->flags + rows + i * v->agents;
        env->masks = v->flags + 2 * rows + i * v->agents;
        env->env_index = (int64_t)i;
        env->num_agents = spec->num_agents;
        env->error = v->errors + i * SHOAL_ERROR_CAPACITY;
        shoal_limit_write_params(spec, (unsigned char*)env);
        if (SHOAL_LIMIT_TRAMPOLINE(_init)(env) != 0) return -1;
        v->initialized = i + 1;
        shoal_rng_seed(&env->rng, shoal_env_seed(0, i));
        SHOAL_LIMIT_TRAMPOLINE(_reset)(env);
    }
    return 0;
}

static void shoal_limit_copy_actions(const shoal_limit_vec* v, uint64_t t) {
    memcpy(v->actions, v->batches + (t % SHOAL_LIMIT_BATCHES) * v->rows * v->spec->action_dims,
           v->rows * v->action_bytes);
}

/* Envs [begin, end) of `v`, one step. */
static void shoal_limit_step_slice(const shoal_limit_vec* v, size_t begin, size_t end) {
    shoal_limit_step_all(v->envs + begin * v->stride, v->stride, end - begin, v->agents,
                         (uint32_t)v->spec->max_episode_steps);
}

/* shoal_limit_sps() with the timed loop measured on `clock`. */
static double shoal_limit_sps_on(size_t num_envs, uint64_t steps_per_env, clockid_t clock) {
    shoal_limit_vec v;
    double sps = -1.0;
    if (shoal_limit_init(&v, num_envs) == 0) {
        for (uint64_t t = 0; t < SHOAL_LIMIT_WARMUP_STEPS; ++t) {
            shoal_limit_copy_actions(&v, t);
            shoal_limit_step_slice(&v, 0, num_envs);
        }
        const double start = shoal_limit_now_on(clock);
        for (uint64_t t = 0; t < steps_per_env; ++t) {
            shoal_limit_copy_actions(&v, t);
            shoal_limit_step_slice(&v, 0, num_envs);
        }
        sps = (double)steps_per_env * (double)v.rows / (shoal_limit_now_on(clock) - start);
    }
    shoal_limit_free(&v);
    return sps;
}

/** Env steps per second of `num_envs` envs each stepped `steps_per_env` times (after a warm-up);
 * negative if the buffers cannot be allocated or an env fails to initialise. */
SHOAL_EXTERN_C SHOAL_VISIBLE double shoal_limit_sps(size_t num_envs, uint64_t steps_per_env) {
    return shoal_limit_sps_on(num_envs, steps_per_env, CLOCK_MONOTONIC);
}

/** Like shoal_limit_sps(), per second of this thread's CPU time (what other processes take left out;
 * allocation, init and warm-up are not timed). */
SHOAL_EXTERN_C SHOAL_VISIBLE double shoal_limit_cpu_sps(size_t num_envs, uint64_t steps_per_env) {
    return shoal_limit_sps_on(num_envs, steps_per_env, CLOCK_THREAD_CPUTIME_ID);
}

/* ---- the same loop on several threads, a spinning barrier after each step ----------------- */

#define SHOAL_LIMIT_MAX_THREADS 64

typedef struct shoal_limit_team {
    shoal_limit_vec* vec;
    unsigned threads;
    uint64_t steps;                                 /* warm-up included */
    _Alignas(64) atomic_uint_fast64_t step_started; /* steps the caller has released */
    _Alignas(64) atomic_uint_fast64_t slices_done;  /* helper slices finished, all steps */
} shoal_limit_team;

typedef struct shoal_limit_helper {
    shoal_limit_team* team;
    unsigned index; /* slice index, 1.. */
} shoal_limit_helper;

static void shoal_limit_team_slice(const shoal_limit_team* team, unsigned index) {
    const size_t n = team->vec->num_envs;
    shoal_limit_step_slice(team->vec, n * index / team->threads, n * (index + 1) / team->threads);
}

static void* shoal_limit_helper_loop(void* arg) {
    const shoal_limit_helper* helper = (const shoal_limit_helper*)arg;
    shoal_limit_team* team = helper->team;
    for (uint64_t t = 1; t <= team->steps; ++t) {
        uint64_t released;
        while ((released = atomic_load_explicit(&team->step_started, memory_order_acquire)) < t) __builtin_ia32_pause();
        if (released == UINT64_MAX) break; /* the caller gave up */
        shoal_limit_team_slice(team, helper->index);
        atomic_fetch_add_explicit(&team->slices_done, 1, memory_order_release);
    }
    return NULL;
}

/** Like shoal_limit_sps() with the envs split over `threads` threads (the caller is one). */
SHOAL_EXTERN_C SHOAL_VISIBLE double shoal_limit_sps_threads(size_t num_envs, uint64_t steps_per_env, unsigned threads) {
    if (threads < 1 || threads > SHOAL_LIMIT_MAX_THREADS || threads > num_envs) return -1.0;
    shoal_limit_vec v;
    double sps = -1.0;
    if (shoal_limit_init(&v, num_envs) != 0) {
        shoal_limit_free(&v);
        return sps;
    }
    shoal_limit_team team = {.vec = &v, .threads = threads, .steps = SHOAL_LIMIT_WARMUP_STEPS + steps_per_env};
    atomic_init(&team.step_started, 0);
    atomic_init(&team.slices_done, 0);
    pthread_t handles[SHOAL_LIMIT_MAX_THREADS];
    shoal_limit_helper helpers[SHOAL_LIMIT_MAX_THREADS];
    unsigned started = 0;
    for (unsigned k = 1; k < threads; ++k, ++started) {
        helpers[k] = (shoal_limit_helper){.team = &team, .index = k};
        if (pthread_create(&handles[k], NULL, shoal_limit_helper_loop, &helpers[k]) != 0) break;
    }
    double start = 0.0;
    if (started == threads - 1) {
        for (uint64_t t = 1; t <= team.steps; ++t) {
            if (t == SHOAL_LIMIT_WARMUP_STEPS + 1) start = shoal_limit_now();
            shoal_limit_copy_actions(&v, t);
            atomic_store_explicit(&team.step_started, t, memory_order_release);
            shoal_limit_team_slice(&team, 0);
            const uint64_t owed = (uint64_t)(threads - 1) * t;
            while (atomic_load_explicit(&team.slices_done, memory_order_acquire) < owed) __builtin_ia32_pause();
        }
        sps = (double)steps_per_env * (double)v.rows / (shoal_limit_now() - start);
    } else {
        atomic_store_explicit(&team.step_started, UINT64_MAX, memory_order_release); /* let them run out */
    }
    for (unsigned k = 1; k <= started; ++k) pthread_join(handles[k], NULL);
    shoal_limit_free(&v);
    return sps;
}
