/* shoal_ocean_files.h — the env's data files, opened relative to its tree (see shoal.ocean.resources).
 *
 * With SHOAL_OCEAN_RESOURCE_ROOT (the tree's pufferlib folder, where PufferLib's `resources/` is),
 * the binding's fopen() of a relative path looks there first, then where the path says (the current
 * directory, as in PufferLib). A file found nowhere fails the env being set up (or the vector's
 * shared state being built), naming the file; the build has checked that the files the sources name
 * exist, so this is a file removed since, or one whose name the env computes. */
#ifndef SHOAL_OCEAN_FILES_H
#define SHOAL_OCEAN_FILES_H

#include <stdio.h>

#include "shoal_ocean_runtime.h"

#ifdef SHOAL_OCEAN_RESOURCE_ROOT
static SHOAL_UNUSED FILE* shoal_ocean_fopen(const char* path, const char* mode) {
    if (path && path[0] != '/') {
        char full[4096];
        const int n = snprintf(full, sizeof full, "%s/%s", SHOAL_OCEAN_RESOURCE_ROOT, path);
        if (n > 0 && (size_t)n < sizeof full) {
            FILE* file = fopen(full, mode);
            if (file) return file;
        }
    }
    FILE* file = fopen(path, mode);
    if (!file) {
        char text[SHOAL_ERROR_CAPACITY];
        snprintf(text, sizeof text, "cannot open %s (in %s or the current directory)", path ? path : "(null)",
                 SHOAL_OCEAN_RESOURCE_ROOT);
        shoal_ocean_fail(shoal_ocean_current(), "%s", text);
    }
    return file;
}
#define fopen(path, mode) shoal_ocean_fopen(path, mode)
#endif

#endif /* SHOAL_OCEAN_FILES_H */
