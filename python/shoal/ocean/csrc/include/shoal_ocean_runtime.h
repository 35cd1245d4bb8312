/* shoal_ocean_runtime.h — what the rendering stubs, the Ocean adapter and its C harness share:
 * rand() and the reporting of errors.
 *
 * An Ocean env is stepped by shoal without a window: its rendering calls compile against
 * shoal's own raylib declarations, and every one of them is a stub. A stub that runs anyway
 * (env code that draws or reads input outside c_render) reports an error through the env
 * being stepped on this thread, which shoal raises in Python after the step.
 */
#ifndef SHOAL_OCEAN_RUNTIME_H
#define SHOAL_OCEAN_RUNTIME_H

#include <stdint.h>
#include <stdlib.h>

#include <shoal/env.h>

/* Failures reported on this thread so far: the adapter's step loop compares the count before and
 * after a range instead of reading every env's `failed` flag. */
static SHOAL_THREAD_LOCAL unsigned shoal_ocean__failures SHOAL_UNUSED;

/* ---- rand() of an Ocean env ----------------------------------------------------------------
 * The binding's rand() and random() draw from the stream of the env being stepped on this thread:
 * PCG32 (XSH-RR, as shoal/rng.h) on one sequence, each env at its own 64-bit position, seeded from
 * the env's shoal stream (vector seed, global env index) at every reset. Its state is 8 bytes, so
 * that it fits in the lines an env's step touches anyway (see the adapter's layout). srand() and
 * srandom() do nothing: clock- or pid-seeded envs stay deterministic. */
#define SHOAL_OCEAN_RAND_INCREMENT 1442695040888963407ULL

/* The state rand() draws from on this thread: the stepped env's, routed by its callbacks. */
static SHOAL_THREAD_LOCAL uint64_t* shoal_ocean__rand_state SHOAL_UNUSED;
static SHOAL_THREAD_LOCAL uint64_t shoal_ocean__orphan_state SHOAL_UNUSED;

static inline SHOAL_UNUSED uint32_t shoal_ocean_rand_next(uint64_t* state) {
    const uint64_t old = *state;
    *state = old * 6364136223846793005ULL + SHOAL_OCEAN_RAND_INCREMENT;
    const uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    const uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
}

/* An env's starting position: 64 bits of its shoal stream. */
static inline SHOAL_UNUSED uint64_t shoal_ocean_rand_seed(shoal_rng* env_stream) {
    const uint64_t high = shoal_rng_next(env_stream);
    return high << 32 | shoal_rng_next(env_stream);
}

/** rand(): uniform in [0, 2^31 - 1] (glibc's RAND_MAX). */
static inline SHOAL_UNUSED int shoal_ocean_rand(void) {
    uint64_t* state = shoal_ocean__rand_state ? shoal_ocean__rand_state : &shoal_ocean__orphan_state;
    return (int)(shoal_ocean_rand_next(state) >> 1);
}

/* The env that owns the rand() state `state`, or NULL: defined by the file that includes this one
 * (the adapter knows where its env struct keeps the state). */
static shoal_env* shoal_ocean_env_of_rand_state(uint64_t* state);

/* The env whose callback runs on this thread: the owner of the state that rand() draws from (the
 * adapter routes rand() to every env it calls into, so the route is also the env). */
static inline SHOAL_UNUSED shoal_env* shoal_ocean_current(void) {
    uint64_t* state = shoal_ocean__rand_state;
    return state ? shoal_ocean_env_of_rand_state(state) : NULL;
}

/* A file that defines SHOAL_OCEAN_OWN_RAND before including this header (after the system headers)
 * makes the binding's rand() and random() draw from the env's stream; BSD random()/srandom() are
 * the same process-global generator under another name. */
#ifdef SHOAL_OCEAN_OWN_RAND
#undef rand
#undef srand
#define rand() shoal_ocean_rand()
#define srand(seed) ((void)(seed))
#define random() shoal_ocean_rand()
#define srandom(seed) ((void)(seed))
#endif

static inline SHOAL_UNUSED void shoal_ocean_fail(shoal_env* env, const char* message, const char* detail) {
    if (!env || env->failed) return;
    shoal_env_fail(env, message, detail);
    shoal_ocean__failures += 1;
}

static inline SHOAL_UNUSED void shoal_ocean_stub_called(const char* name) {
    shoal_ocean_fail(shoal_ocean_current(),
                     "the env called raylib's %s outside rendering; shoal.ocean provides no raylib", name);
}

#endif /* SHOAL_OCEAN_RUNTIME_H */
