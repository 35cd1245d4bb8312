/* shoal_ocean_shared.h — PufferLib's MY_SHARED for the adapter and its C harness.
 *
 * A class with shared state calls `binding.shared(**kw)` once and passes the result to every env's
 * my_init as one keyword (grid's and tower_climb's `state=`). The config header names that keyword
 * (SHOAL_OCEAN_SHARED_KEY) and lists shared()'s keywords as the parameters from
 * SHOAL_OCEAN_FIRST_SHARED_PARAM on, named "shared:<keyword>" (one value per vector). Included after
 * the binding, which defines my_shared().
 *
 * my_shared's rand() draws from one fixed stream (SHOAL_OCEAN_SHARED_RAND_SEED), not the process's
 * global rand() that PufferLib's binding happens to leave (grid even seeds it from the clock): the
 * shared state is then the same on every backend, thread count and run, so envs stay comparable bit
 * for bit. Envs only read it (grid's levels, tower_climb's puzzles are copied into the env at a
 * reset), so the threads of a vector share one copy.
 */
#ifndef SHOAL_OCEAN_SHARED_H
#define SHOAL_OCEAN_SHARED_H

#include <string.h>

#define SHOAL_OCEAN_PARAM_KIND(TYPE) \
    ((TYPE) == SHOAL_PARAM_INT32 || (TYPE) == SHOAL_PARAM_BOOL ? SHOAL_OCEAN_PY_INT : SHOAL_OCEAN_PY_NUMBER)
#define SHOAL_OCEAN_COUNT_ONE(NAME, TYPE, DEFAULT, INDEX) +1
enum {
    SHOAL_OCEAN_PARAM_COUNT = 0 SHOAL_OCEAN_PARAMS(SHOAL_OCEAN_COUNT_ONE),
    /* The parameters my_init reads: those before the shared ones. */
    SHOAL_OCEAN_INIT_PARAMS = SHOAL_OCEAN_FIRST_SHARED_PARAM,
};

#define SHOAL_OCEAN_SHARED_PREFIX "shared:"
#define SHOAL_OCEAN_SHARED_RAND_SEED 0x9e3779b97f4a7c15ull

#ifdef SHOAL_OCEAN_SHARED_KEY
#ifndef MY_SHARED
#error "shoal.ocean: the env's Python class passes binding.shared()'s result, but the binding defines no MY_SHARED"
#endif

/* my_shared(**shared keywords) as PufferLib's class calls it: names[i], values[i] and kinds[i] of
 * every parameter (the shared ones are read). rand() must be routed to the caller's fixed stream and
 * allocations to where the state lives. Returns the handle, or NULL if my_shared raised or returned
 * nothing (then `owner` has failed with the reason). */
static SHOAL_UNUSED PyObject* shoal_ocean_run_shared(const char* const* names, const double* values, const int* kinds,
                                                     shoal_env* owner) {
    enum { SHARED = SHOAL_OCEAN_PARAM_COUNT - SHOAL_OCEAN_INIT_PARAMS };
    PyObject entries[SHARED + 1];
    const size_t prefix = strlen(SHOAL_OCEAN_SHARED_PREFIX);
    for (int i = 0; i < SHARED; ++i) {
        const int p = SHOAL_OCEAN_INIT_PARAMS + i;
        entries[i] = (PyObject){.ob_refcnt = 1, .kind = kinds[p], .name = names[p] + prefix, .number = values[p]};
    }
    PyObject kwargs = {.ob_refcnt = 1,
                       .kind = SHOAL_OCEAN_PY_DICT,
                       .name = "my_shared",
                       .entries = entries,
                       .count = SHARED,
                       .owner = owner};
    PyObject args = {.ob_refcnt = 1, .owner = owner};
    PyObject* handle = my_shared(NULL, &args, &kwargs);
    if (owner->failed) return NULL;
    if (!handle) {
        shoal_ocean_fail(owner, "%s", "my_shared returned no state");
        return NULL;
    }
    return handle;
}

/* The keyword my_init receives the shared state under: a copy of the handle, named as the class names it. */
static SHOAL_UNUSED PyObject shoal_ocean_shared_entry(const PyObject* handle) {
    PyObject entry = *handle;
    entry.name = SHOAL_OCEAN_SHARED_KEY;
    return entry;
}
#endif

#endif /* SHOAL_OCEAN_SHARED_H */
