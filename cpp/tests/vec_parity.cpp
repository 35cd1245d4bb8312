// vec_parity: every bundled env stepped by shoal::Vector (what Python steps) must match a
// single-threaded reference bit for bit, while the thread count and the schedule change under it.
// Also the soak test: SHOAL_SOAK_STEPS batch steps (default 1,000,000 in a plain build, fewer under sanitizers).
//
// Exit 0 = pass; a failure prints the env, step and buffer that differ.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "shoal/env.h"
#include "shoal/vec.hpp"
#include "shoal/vector.hpp"

#include "bundled_envs.h"
#include "test_support.hpp"

namespace {

using shoal_test::check;
using shoal_test::failures;
using shoal_test::Storage;

void fill_actions(const shoal_env_spec& spec, Storage& storage, std::mt19937& rng) {
    const size_t count = storage.actions.size() / 4;
    if (spec.action_kind == SHOAL_ACTION_BOX) {
        std::uniform_real_distribution<float> pick(spec.action_low, spec.action_high);
        auto* a = reinterpret_cast<float*>(storage.actions.data());
        for (size_t i = 0; i < count; ++i) a[i] = pick(rng);
    } else {
        auto* a = reinterpret_cast<int32_t*>(storage.actions.data());
        for (size_t i = 0; i < count; ++i) a[i] = int32_t(rng() % uint32_t(spec.action_nvec[i % spec.action_dims]));
    }
}

/// Steps a reference (one EnvArray, caller only, one range) and a shoal::Vector in lockstep for
/// `steps` batch steps, changing the vector's thread count and schedule every `change_every` steps.
void run_parity(const shoal_env_spec& spec, size_t num_envs, size_t steps, size_t change_every,
                const std::vector<double>& params) {
    Storage reference_storage(spec, num_envs), vector_storage(spec, num_envs);
    const double* rows = params.empty() ? nullptr : params.data();
    shoal::EnvArray reference(spec, num_envs, rows, spec.max_episode_steps, reference_storage.buffers());
    shoal::VectorOptions options;
    options.num_threads = 2;
    shoal::Vector vector(spec, num_envs, rows, spec.max_episode_steps, vector_storage.buffers(), options);
    const unsigned thread_plan[] = {2, 1, 3, 8, 4, 2, 0, 3};
    std::mt19937 rng(1234);

    reference.reset_range(0, num_envs, 99);
    vector.reset(99);
    std::string which;
    check(reference_storage.same(vector_storage, which), std::string(spec.name) + ": reset differs in " + which);

    uint64_t episodes_reference = 0, episodes_vector = 0;
    std::vector<int64_t> wide_actions;
    for (size_t t = 0; t < steps; ++t) {
        if (t % change_every == 0) {
            const size_t phase = t / change_every;
            vector.set_num_threads(thread_plan[phase % 8]);
            // dynamic_chunk 0 = auto, 1, 2
            vector.set_schedule(phase % 2 ? shoal::Schedule::Dynamic : shoal::Schedule::Static, phase % 3);
        }
        fill_actions(spec, reference_storage, rng);
        episodes_reference += reference.step_range(0, num_envs);
        // Odd steps hand the actions over as the bindings do (checked, copied by each range; integer
        // actions as int64 every other time, narrowed as they are copied), even steps write them
        // into the vector's own action buffer first.
        if (t % 2) {
            const bool wide = spec.action_kind != SHOAL_ACTION_BOX && t % 4 == 3;
            shoal::ActionArray actions;
            actions.data = reference_storage.actions.data();
            if (wide) {
                const auto* narrow = reinterpret_cast<const int32_t*>(reference_storage.actions.data());
                wide_actions.assign(narrow, narrow + reference_storage.actions.size() / 4);
                actions.data = wide_actions.data();
            }
            actions.kind = spec.action_kind == SHOAL_ACTION_BOX ? 'f' : 'i';
            actions.itemsize = wide ? 8 : 4;
            actions.ndim = spec.action_kind == SHOAL_ACTION_DISCRETE ? 1 : 2;
            actions.shape[0] = num_envs * size_t(spec.num_agents);
            actions.shape[1] = size_t(spec.action_dims);
            actions.native_layout = true;
            const shoal::StepResult result = vector.step(actions);
            if (result.actions != shoal::ActionCheck::Ready) {
                check(false, std::string(spec.name) + ": step " + std::to_string(t) + " refused valid actions");
                return;
            }
            episodes_vector += result.episodes;
        } else {
            vector_storage.actions = reference_storage.actions;
            episodes_vector += vector.step();
        }
        if (!reference_storage.same(vector_storage, which)) {
            check(false, std::string(spec.name) + ": step " + std::to_string(t) + " differs in " + which);
            return;
        }
    }
    check(episodes_reference == episodes_vector, std::string(spec.name) + ": episode counts differ");
    check(episodes_reference > 0, std::string(spec.name) + ": no episode ended; the test would prove little");
    const shoal::EpisodeTally a = reference.collect_log(), b = vector.collect_log(0, num_envs);
    check(a.episodes == b.episodes && a.return_sum == b.return_sum && a.length_sum == b.length_sum,
          std::string(spec.name) + ": episode logs differ");
}

size_t soak_steps() {
    if (const char* env = std::getenv("SHOAL_SOAK_STEPS")) return std::strtoull(env, nullptr, 10);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    return 20000;
#else
    return 1000000;
#endif
}

}  // namespace

int main() {
    const shoal_env_spec* specs[] = {shoal_env_spec_cartpole(), shoal_env_spec_squared(), shoal_env_spec_grid(),
                                     shoal_env_spec_deep()};
    for (const shoal_env_spec* spec : specs) {
        std::vector<double> params;
        if (std::string(spec->name) == "deep") {
            // Uneven, small per-env costs: the dynamic schedule must not change results either.
            for (size_t i = 0; i < 24; ++i) params.push_back(double(20 + 15 * (i % 5)));
        }
        run_parity(*spec, 24, 3000, 250, params);
    }
    // Soak: many small rounds, thread count changing throughout.
    const size_t steps = soak_steps();
    run_parity(*shoal_env_spec_cartpole(), 8, steps, 5000, {});
    std::printf("vec_parity: %s (soak %zu batch steps)\n", failures ? "FAILED" : "ok", steps);
    return failures ? 1 : 0;
}
