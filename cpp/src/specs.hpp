// shoal._native's env specs (specs.cpp): the bundled ones, those loaded from a shared library, and
// one vector's configured copy. No Python here; spec_bindings.cpp turns them into EnvSpec objects.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "shoal/env.h"

/// A dlopen'ed env library; kept loaded as long as any spec or vector from it lives.
struct Library {
    void* handle = nullptr;
    explicit Library(void* h) : handle(h) {}
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;
    // Never dlclose: env code may still be referenced by thread-local state of pool threads.
};

/// One vector's copy of a spec, as its configure() and its TEXT parameters made it, and the shared
/// state configure() set up (released after the last vector using it is gone).
struct Configured {
    shoal_env_spec spec{};
    std::vector<shoal_param> params;
    std::vector<std::string> texts;  // the TEXT parameters' values; params[].default_text points here
    Configured() = default;
    Configured(const Configured&) = delete;
    Configured& operator=(const Configured&) = delete;
    ~Configured() {
        if (spec.release_shared && spec.shared) spec.release_shared(spec.shared);
    }
};

/// A spec plus what keeps its code loaded.
struct Spec {
    const shoal_env_spec* spec;
    std::shared_ptr<Library> library;                  // null for bundled envs
    std::string path;                                  // library path, empty for bundled envs
    std::string name;                                  // NAME of SHOAL_EXPORT_ENV
    std::shared_ptr<Configured> configured = nullptr;  // set for one vector's configured copy
};

/// The bundled env `name` (one per folder cpp/envs/<name>/); UsageError if there is none.
Spec bundled_spec(const std::string& name);

std::vector<std::string> bundled_names();

/// `shoal_env_spec_<name>` of the shared library at `path`, validated; UsageError if it cannot be.
Spec load_spec(const std::string& path, const std::string& name);

/// The spec of one vector with these parameters (`row`: env 0's row of `columns` values of the
/// parameter matrix, `texts`: the TEXT parameters' values in order): the spec itself when it has
/// neither configure() nor TEXT parameters, else a copy with the texts in place, configured.
/// Throws UsageError with configure()'s message.
Spec configure_spec(const Spec& base, const double* row, size_t columns, const std::vector<std::string>& texts);

/// Whether configure_spec makes a copy: the spec has configure() or a TEXT parameter.
bool configurable(const Spec& spec);
