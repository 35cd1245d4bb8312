// cpp/tests/test_support.hpp — what the native tests share: failure counting, owned buffers and
// reaping a fork()ed child (with TSan allowed to run threads in it). Windows has no fork(): there
// SHOAL_TEST_HAS_FORK is not defined and the fork checks are left out (they say so).
#pragma once

#if !defined(_WIN32)
#define SHOAL_TEST_HAS_FORK 1
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <chrono>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "shoal/vec.hpp"

#if defined(__SANITIZE_THREAD__)
#define SHOAL_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHOAL_TEST_TSAN 1
#endif
#endif

#if defined(SHOAL_TEST_TSAN)
// The fork checks start threads in a child of a multi-threaded parent, which TSan refuses by
// default (die_after_fork=1) because it cannot vouch for locks held at fork time. The pool and the
// pipeline take no locks, so let the child run.
extern "C" const char* __tsan_default_options() {
    return "die_after_fork=0";
}
#endif

namespace shoal_test {

#if defined(SHOAL_TEST_HAS_FORK)
/// Waits up to `seconds` for a fork()ed child, killing it after that; "" if it exited with 0, else
/// what happened instead.
inline std::string reap_child(pid_t child, int seconds) {
    int status = 0;
    pid_t waited = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while ((waited = waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline)
        usleep(1000);
    if (waited == 0) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        return "child did not finish in time (killed)";
    }
    if (waited != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return "child did not exit 0 (status " + std::to_string(status) + ")";
    return "";
}
#endif

/// Failures recorded by check(); a test's main returns non-zero if any.
inline int failures = 0;

inline void check(bool ok, const std::string& what) {
    if (!ok) {
        std::fprintf(stderr, "FAIL: %s\n", what.c_str());
        ++failures;
    }
}

/// The buffers of one vector of `num_envs` envs, owned here (actions as raw 4-byte elements).
struct Storage {
    std::vector<unsigned char> observations, final_observations, actions;
    std::vector<float> rewards;
    std::vector<uint8_t> terminals, truncations, masks;
    size_t obs_bytes;  // one agent's observation

    Storage(const shoal_env_spec& spec, size_t num_envs)
        : obs_bytes(shoal::observation_size(spec) * shoal::dtype_size(spec.obs_dtype)) {
        const size_t rows = num_envs * size_t(spec.num_agents);
        observations.assign(rows * obs_bytes, 0);
        final_observations.assign(rows * obs_bytes, 0);
        actions.assign(rows * size_t(spec.action_dims) * 4, 0);
        rewards.assign(rows, 0);
        terminals.assign(rows, 0);
        truncations.assign(rows, 0);
        masks.assign(rows, 1);
    }

    shoal::VecBuffers buffers() {
        shoal::VecBuffers b;
        b.observations = observations.data();
        b.final_observations = final_observations.data();
        b.actions = actions.data();
        b.rewards = rewards.data();
        b.terminals = terminals.data();
        b.truncations = truncations.data();
        b.masks = masks.data();
        return b;
    }

    /// Whether every output equals `o`'s; names the first array that differs in `which`.
    bool same(const Storage& o, std::string& which) const {
        if (observations != o.observations) return which = "observations", false;
        if (rewards != o.rewards) return which = "rewards", false;
        if (terminals != o.terminals) return which = "terminals", false;
        if (truncations != o.truncations) return which = "truncations", false;
        if (masks != o.masks) return which = "masks", false;
        // Final observations are only meaningful on rows that ended, but both sides write the same rows.
        if (final_observations != o.final_observations) return which = "final_observations", false;
        return true;
    }

    /// Whether agent rows [begin, end) hold the same observations, rewards, flags and masks as `o`'s.
    bool same_rows(const Storage& o, size_t begin, size_t end) const {
        return std::memcmp(&observations[begin * obs_bytes], &o.observations[begin * obs_bytes],
                           (end - begin) * obs_bytes) == 0 &&
               std::memcmp(&rewards[begin], &o.rewards[begin], (end - begin) * sizeof(float)) == 0 &&
               std::memcmp(&terminals[begin], &o.terminals[begin], end - begin) == 0 &&
               std::memcmp(&truncations[begin], &o.truncations[begin], end - begin) == 0 &&
               std::memcmp(&masks[begin], &o.masks[begin], end - begin) == 0;
    }
};

}  // namespace shoal_test
