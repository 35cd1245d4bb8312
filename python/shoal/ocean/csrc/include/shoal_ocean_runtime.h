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

/* The env whose callback runs on this thread (set by the Ocean adapter's callbacks). */
static SHOAL_THREAD_LOCAL shoal_env* shoal_ocean__current SHOAL_UNUSED;

static inline SHOAL_UNUSED void shoal_ocean_stub_called(const char* name) {
    if (shoal_ocean__current && !shoal_ocean__current->failed)
        shoal_env_fail(shoal_ocean__current,
                       "the env called raylib's %s outside rendering; shoal.ocean provides no raylib", name);
}

#endif /* SHOAL_OCEAN_RUNTIME_H */
