// pipeline_test: buffers stepped by the Pipeline's driver thread (with pool workers helping) while
// this thread "works" (or steps chunks of the buffer in flight itself, help()) must match a vector stepped buffer by
// buffer in the same order, bit for bit; destroying a pipeline with steps in flight must be clean; a fork()ed child
// gets an error for the steps in flight at fork (not a hang), recovers after clear() and never joins the parent's
// driver. Exit 0 = pass.
#if !defined(_WIN32)
#include <unistd.h>
#endif

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "shoal/errors.hpp"
#include "shoal/pipeline.hpp"

#include "bundled_envs.h"
#include "test_support.hpp"

namespace {

using shoal_test::check;
using shoal_test::failures;
using shoal_test::Storage;

void busy_work(unsigned iterations) {
    volatile unsigned x = 0;
    for (unsigned i = 0; i < iterations; ++i) x = x * 31 + i;
}

void run(const shoal_env_spec& spec, size_t num_envs, size_t num_buffers, unsigned pool_threads, size_t rounds,
         bool caller_helps = false) {
    const size_t agents = size_t(spec.num_agents);
    const size_t rows = num_envs * agents;
    Storage ref_storage(spec, num_envs), pipe_storage(spec, num_envs);
    shoal::EnvArray reference(spec, num_envs, nullptr, spec.max_episode_steps, ref_storage.buffers());
    shoal::EnvArray pooled(spec, num_envs, nullptr, spec.max_episode_steps, pipe_storage.buffers());
    shoal::WorkerPool pool(pool_threads);
    shoal::StopRequest stop;
    reference.reset_range(0, num_envs, 5);
    pooled.reset_range(0, num_envs, 5);
    const std::string label = std::string(spec.name) + " buffers=" + std::to_string(num_buffers) +
                              " pool=" + std::to_string(pool_threads) + (caller_helps ? " caller helps" : "");
    size_t helped = 0;
    uint64_t episodes_ref = 0, episodes_pipe = 0;  // must agree: the same steps ended the same episodes
    {
        shoal::Pipeline pipeline(pooled, pool, stop, num_buffers, pipe_storage.actions.data(), agents * 4);
        const size_t per = num_envs / num_buffers;
        std::mt19937 rng(7);
        std::vector<int32_t> actions(per * agents);
        std::vector<int64_t> wide_actions;
        std::vector<std::string> messages;
        for (size_t r = 0; r < rounds; ++r) {
            for (size_t b = 0; b < num_buffers; ++b) {
                episodes_pipe += pipeline.wait(b, messages);
                check(messages.empty(), label + ": unexpected env failure");
                if (!pipe_storage.same_rows(ref_storage, b * per * agents, (b + 1) * per * agents)) {
                    check(false, label + ": buffer " + std::to_string(b) + " differs at round " + std::to_string(r));
                    return;
                }
                for (auto& a : actions) a = int32_t(rng() % uint32_t(spec.action_nvec[0]));
                std::memcpy(&ref_storage.actions[b * per * agents * 4], actions.data(), actions.size() * 4);
                episodes_ref += reference.step_range(b * per, (b + 1) * per);
                if (r % 2) {  // int64 actions, narrowed as they are copied
                    wide_actions.assign(actions.begin(), actions.end());
                    pipeline.submit(b, reinterpret_cast<const unsigned char*>(wide_actions.data()), true);
                } else {
                    pipeline.submit(b, reinterpret_cast<const unsigned char*>(actions.data()));
                }
                if (caller_helps) {
                    while (pipeline.help(20000)) ++helped;  // the caller steps chunks beside the driver and workers
                } else {
                    busy_work(2000);  // the caller's "policy" overlaps the driver's stepping
                }
            }
        }
        for (size_t b = 0; b < num_buffers; ++b) episodes_pipe += pipeline.wait(b, messages);
        // Both sides have now stepped every buffer `rounds` times: compare everything once more.
        check(pipe_storage.same_rows(ref_storage, 0, rows), label + ": final state differs");
    }
    check(episodes_pipe > 0, label + ": no episode ended");
    check(episodes_pipe == episodes_ref, label + ": episode counts differ");
    if (caller_helps && num_buffers > 1) check(helped > 0, label + ": the caller never found a chunk to step");
}

void destroy_in_flight(unsigned pool_threads) {
    const shoal_env_spec& spec = *shoal_env_spec_cartpole();
    Storage storage(spec, 256);  // cartpole: one agent per env
    shoal::EnvArray vec(spec, 256, nullptr, spec.max_episode_steps, storage.buffers());
    shoal::WorkerPool pool(pool_threads);
    shoal::StopRequest stop;
    vec.reset_range(0, 256, 1);
    for (int i = 0; i < 50; ++i) {
        shoal::Pipeline pipeline(vec, pool, stop, 4, storage.actions.data(), 4);
        std::vector<int32_t> actions(64, 1);
        for (size_t b = 0; b < 4; ++b) pipeline.submit(b, reinterpret_cast<const unsigned char*>(actions.data()));
        // Destroyed here with up to four steps in flight: must drain and join, not hang or race.
    }
}

#if defined(SHOAL_TEST_HAS_FORK)
/// What the child of fork_with_steps_in_flight() does; returns its exit code.
int forked_child(shoal::Pipeline& pipeline, size_t num_buffers, const std::vector<int32_t>& actions) {
    alarm(60);  // alarms are not inherited; a stuck child must not hang the test
    std::vector<std::string> messages;
    const auto* raw = reinterpret_cast<const unsigned char*>(actions.data());
    try {
        pipeline.wait(0, messages);
        std::fprintf(stderr, "FAIL: child: wait() for a step in flight at fork returned\n");
        return 1;
    } catch (const shoal::UsageError&) {
    }
    try {
        pipeline.submit(0, raw);
        std::fprintf(stderr, "FAIL: child: submit() accepted before clear()\n");
        return 1;
    } catch (const shoal::UsageError&) {
    }
    pipeline.clear();  // the vector's reset: the child's own driver steps from here on
    for (int round = 0; round < 20; ++round) {
        for (size_t b = 0; b < num_buffers; ++b) pipeline.submit(b, raw);
        for (size_t b = 0; b < num_buffers; ++b) pipeline.wait(b, messages);
    }
    return 0;  // ~Pipeline joins only the child's own driver
}

/// fork() while every buffer's step is in flight (slow envs); the child must neither hang nor join
/// the parent's driver; the parent's steps complete.
void fork_with_steps_in_flight() {
    const shoal_env_spec& spec = *shoal_env_spec_deep();
    const size_t num_envs = 8, num_buffers = 2;
    Storage storage(spec, num_envs);
    std::vector<double> params(num_envs * size_t(spec.num_params), 2'000'000);  // ~4 ms per env step
    shoal::EnvArray vec(spec, num_envs, params.data(), spec.max_episode_steps, storage.buffers());
    shoal::WorkerPool pool(1);
    shoal::StopRequest stop;
    vec.reset_range(0, num_envs, 1);
    shoal::Pipeline pipeline(vec, pool, stop, num_buffers, storage.actions.data(), 4);
    std::vector<int32_t> actions(num_envs / num_buffers, 0);
    for (size_t b = 0; b < num_buffers; ++b) pipeline.submit(b, reinterpret_cast<const unsigned char*>(actions.data()));
    std::fflush(stdout);
    std::fflush(stderr);
    const pid_t child = fork();
    if (child == 0) _exit(forked_child(pipeline, num_buffers, actions));
    check(child > 0, "fork failed");
    if (child <= 0) return;
    std::vector<std::string> messages;
    for (size_t b = 0; b < num_buffers; ++b) pipeline.wait(b, messages);
    const std::string problem = shoal_test::reap_child(child, 90);
    check(problem.empty(), "fork: " + problem);
}
#endif

}  // namespace

int main() {
    for (unsigned threads : {0u, 1u, 3u}) {
        for (size_t buffers : {1u, 2u, 4u}) {
            run(*shoal_env_spec_cartpole(), 256, buffers, threads, 400);
            run(*shoal_env_spec_grid(), 32, buffers, threads, 150);
            run(*shoal_env_spec_cartpole(), 256, buffers, threads, 400, true);
        }
        destroy_in_flight(threads);
    }
#if defined(SHOAL_TEST_HAS_FORK)
    fork_with_steps_in_flight();
#else
    std::printf("pipeline_test: fork check left out (no fork() on this OS)\n");
#endif
    std::printf("pipeline_test: %s\n", failures ? "FAILED" : "ok");
    return failures ? 1 : 0;
}
