/* shoal_ocean_runtime.h — what the rendering stubs and the Ocean adapter share.
 *
 * An Ocean env is stepped by shoal without a window: its rendering calls compile against
 * shoal's own raylib declarations, and every one of them is a stub. A stub that runs anyway
 * (env code that draws or reads input outside c_render) reports an error through the env
 * being stepped on this thread, which shoal raises in Python after the step.
 */
#ifndef SHOAL_OCEAN_RUNTIME_H
#define SHOAL_OCEAN_RUNTIME_H

#include <shoal/env.h>

/* Failures reported on this thread so far: the adapter's step loop compares the count before and
 * after a range instead of reading every env's `failed` flag. */
static SHOAL_THREAD_LOCAL unsigned shoal_ocean__failures SHOAL_UNUSED SHOAL_TLS_ONE_LOAD;

/* The env that owns `rng`, or NULL: defined by the file that includes this one (the adapter knows
 * where its env struct keeps the stream). */
static shoal_env* shoal_ocean_env_of_rng(shoal_rng* rng);

/* The env whose callback runs on this thread: the owner of the rng that rand() draws from (the
 * adapter routes rand() to every env it calls into, so the route is also the env). */
static inline SHOAL_UNUSED shoal_env* shoal_ocean_current(void) {
    shoal_rng* rng = shoal__current_rng;
    return rng ? shoal_ocean_env_of_rng(rng) : NULL;
}

static inline SHOAL_UNUSED void shoal_ocean_fail(shoal_env* env, const char* message, const char* detail) {
    if (!env || env->failed) return;
    shoal_env_fail(env, message, detail);
    shoal_ocean__failures += 1;
}

static inline SHOAL_UNUSED void shoal_ocean_stub_called(const char* name) {
    shoal_ocean_fail(shoal_ocean_current(), "the env called raylib's %s outside rendering; shoal.ocean provides no raylib",
                     name);
}

#endif /* SHOAL_OCEAN_RUNTIME_H */
