// shoal/errors.hpp — the core's error vocabulary; the bindings map each class to its Python twin.
//
//   UsageError  the caller misused the core (arguments, call order, a closed vector)  -> APIUsageError
//   EnvFailure  env code failed (init, reset or step reported an error)               -> EnvError
// Anything else escaping the core is an internal failure (a thread that cannot be created).
#pragma once

#include <stdexcept>
#include <string>

namespace shoal {

/// The caller misused the core; nothing was changed.
struct UsageError : std::invalid_argument {
    using std::invalid_argument::invalid_argument;
};

/// Env code reported a failure; the message names the env.
struct EnvFailure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

}  // namespace shoal
