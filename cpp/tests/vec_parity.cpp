// vec_parity: every bundled env stepped by the worker pool must match a single-threaded reference
// bit for bit, while the thread count and the schedule change under it. Also the soak test:
// SHOAL_SOAK_STEPS batch steps (default 1,000,000 in a plain build, fewer under sanitizers).
//
// Exit 0 = pass; a failure prints the env, step and buffer that differ.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "shoal/env.h"
#include "shoal/pool.hpp"
#include "shoal/vec.hpp"

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

/// Steps a reference (caller only, one range) and a pooled vector in lockstep for `steps` batch
/// steps, changing the pool's thread count and schedule every `change_every` steps.
void run_parity(const shoal_env_spec& spec, size_t num_envs, size_t steps, size_t change_every,
                const std::vector<double>& params) {
    Storage reference_storage(spec, num_envs), pooled_storage(spec, num_envs);
    shoal::NativeVec reference(spec, num_envs, params.empty() ? nullptr : params.data(), spec.max_episode_steps,
                               reference_storage.buffers());
    shoal::NativeVec pooled(spec, num_envs, params.empty() ? nullptr : params.data(), spec.max_episode_steps,
                            pooled_storage.buffers());
    shoal::WorkerPool pool(1);
    const unsigned thread_plan[] = {1, 0, 2, 7, 3, 1, 0, 2};
    std::mt19937 rng(1234);

    reference.reset_range(0, num_envs, 99);
    auto reset_body = [&](size_t begin, size_t end) { pooled.reset_range(begin, end, 99); };
    pool.parallel_for(num_envs, reset_body);
    std::string which;
    check(reference_storage.same(pooled_storage, which), std::string(spec.name) + ": reset differs in " + which);

    uint64_t episodes_reference = 0, episodes_pooled = 0;
    std::atomic<uint64_t> episodes_counter{0};
    auto step_body = [&](size_t begin, size_t end) {
        episodes_counter.fetch_add(pooled.step_range(begin, end), std::memory_order_relaxed);
    };
    for (size_t t = 0; t < steps; ++t) {
        if (t % change_every == 0) {
            const size_t phase = t / change_every;
            pool.resize(thread_plan[phase % 8]);
            shoal::PoolOptions options;
            options.schedule = phase % 2 ? shoal::Schedule::Dynamic : shoal::Schedule::Static;
            options.dynamic_chunk = phase % 3;  // 0 = auto, 1, 2
            pool.set_options(options);
        }
        fill_actions(spec, reference_storage, rng);
        pooled_storage.actions = reference_storage.actions;
        episodes_reference += reference.step_range(0, num_envs);
        pool.parallel_for(num_envs, step_body);
        if (!reference_storage.same(pooled_storage, which)) {
            check(false, std::string(spec.name) + ": step " + std::to_string(t) + " differs in " + which);
            return;
        }
    }
    episodes_pooled = episodes_counter.load();
    check(episodes_reference == episodes_pooled, std::string(spec.name) + ": episode counts differ");
    check(episodes_reference > 0, std::string(spec.name) + ": no episode ended; the test would prove little");
    const shoal::EpisodeTally a = reference.collect_log(), b = pooled.collect_log();
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
