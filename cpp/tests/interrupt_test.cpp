// interrupt_test: stopping steps of a shoal::Vector in flight (interrupt.hpp). A stop from another
// thread (abandon) or from the caller's poll ends a pipelined wait and a synchronous step early,
// leaving envs unstepped; the vector refuses steps until reset(), then its envs step exactly like
// envs that were never interrupted. Exit 0 = pass.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "shoal/errors.hpp"
#include "shoal/interrupt.hpp"
#include "shoal/vector.hpp"

#include "bundled_envs.h"
#include "test_support.hpp"

namespace {

using shoal_test::check;
using shoal_test::failures;
using shoal_test::Storage;

constexpr size_t kEnvs = 128;
constexpr double kWork = 10'000'000;  // Deep: ~20 ms per env step: a whole step is 2.6 s of CPU
// Far below a whole step, far above a stop's 50 ms of polling plus an env step (even under TSan on a
// loaded machine); that some envs were never stepped is the proof.
constexpr double kPromptS = 1.0;
constexpr int32_t kCheapWork = 100;  // for the comparisons after the reset
constexpr uint64_t kSeed = 3;

double slowest_stop = 0;  // seconds, printed at the end

/// Seconds since `start`, a stop's duration: remembered if it is the slowest.
double stop_took(std::chrono::steady_clock::time_point start) {
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    slowest_stop = std::max(slowest_stop, took);
    return took;
}

/// Sets env `env`'s `work` (Deep's first field after the SDK's base struct).
void set_work(shoal_env* env, int32_t work) {
    std::memcpy(reinterpret_cast<unsigned char*>(env) + sizeof(shoal_env), &work, sizeof work);
}

/// Deep envs with heavy work over their own buffers, in a shoal::Vector (what Python steps).
struct Heavy {
    Storage storage;
    std::vector<double> params;
    shoal::Vector vector;

    Heavy(unsigned pool_threads, size_t num_buffers)
        : storage(*shoal_env_spec_deep(), kEnvs),
          params(kEnvs, kWork),
          vector(*shoal_env_spec_deep(), kEnvs, params.data(), shoal_env_spec_deep()->max_episode_steps,
                 storage.buffers(), options(pool_threads, num_buffers)) {
        vector.reset(kSeed);
    }

    static shoal::VectorOptions options(unsigned pool_threads, size_t num_buffers) {
        shoal::VectorOptions options;
        options.num_threads = pool_threads + 1;
        options.num_buffers = num_buffers;
        return options;
    }

    /// Envs stepped `ticks` times since their reset (or their last episode end).
    [[nodiscard]] size_t ticked(uint32_t ticks) const {
        size_t count = 0;
        for (size_t i = 0; i < kEnvs; ++i) count += vector.env(i)->tick == ticks;
        return count;
    }
};

/// After `stepped` was reset: steps it with `step` and a EnvArray that was never interrupted, by
/// hand, with the same actions and cheap work, and compares their outputs after each step.
template <class Step>
void check_like_reference(Heavy& stepped, const std::string& label, Step&& step) {
    Storage storage(*shoal_env_spec_deep(), kEnvs);
    const std::vector<double> params(kEnvs, kCheapWork);
    shoal::EnvArray reference(*shoal_env_spec_deep(), kEnvs, params.data(), shoal_env_spec_deep()->max_episode_steps,
                              storage.buffers());
    reference.reset_range(0, kEnvs, kSeed);
    for (size_t i = 0; i < kEnvs; ++i) set_work(stepped.vector.env(i), kCheapWork);
    std::copy(stepped.storage.actions.begin(), stepped.storage.actions.end(), storage.actions.begin());
    for (int round = 0; round < 3; ++round) {
        step();
        (void)reference.step_range(0, kEnvs);
        // Final observations are left out: the interrupted step may have written rows of ended episodes.
        check(stepped.storage.same_rows(storage, 0, kEnvs),
              label + ": outputs differ from a vector never interrupted, round " + std::to_string(round));
    }
}

/// Int32 actions of one buffer of `envs` envs, as the bindings describe a numpy array.
shoal::ActionArray action_array(const std::vector<int32_t>& actions) {
    shoal::ActionArray array;
    array.data = actions.data();
    array.kind = 'i';
    array.itemsize = 4;
    array.ndim = 1;
    array.shape[0] = actions.size();
    array.native_layout = true;
    return array;
}

/// Pipelined: two buffers in flight, a stop from another thread (abandon) or from the waiter's own poll.
void stop_pipeline(unsigned pool_threads, bool by_poll) {
    const std::string label = std::string("pipeline pool=") + std::to_string(pool_threads) +
                              (by_poll ? " stopped by the poll" : " stopped by another thread");
    Heavy heavy(pool_threads, 2);
    shoal::Vector& vector = heavy.vector;
    const std::vector<int32_t> actions(kEnvs / 2, 1);
    const shoal::ActionArray buffer_actions = action_array(actions);
    int asked = 0;
    const shoal::StopPoll::Ask count_and_stop = [](void* count) noexcept { return ++*static_cast<int*>(count) >= 1; };
    const auto start = std::chrono::steady_clock::now();
    check(vector.submit(0, buffer_actions) == shoal::ActionCheck::Ready, label + ": submit() refused valid actions");
    check(vector.submit(1, buffer_actions) == shoal::ActionCheck::Ready, label + ": submit() refused valid actions");
    std::thread stopper;
    if (!by_poll)
        stopper = std::thread([&vector] {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            vector.abandon();
        });
    bool refused = false;
    try {
        (void)vector.wait(0, by_poll ? count_and_stop : nullptr, &asked);
    } catch (const shoal::UsageError&) {
        refused = true;
    }
    const double took = stop_took(start);
    if (stopper.joinable()) stopper.join();
    check(refused, label + ": wait() returned a stopped step");
    check(!by_poll || asked == 1, label + ": the poll was asked " + std::to_string(asked) + " times, not once");
    check(heavy.ticked(0) > 0, label + ": every env was stepped; the stop came too late to show");
    check(took < kPromptS, label + ": the stop took " + std::to_string(took) + " s");
    try {
        (void)vector.submit(0, buffer_actions);
        check(false, label + ": submit() accepted before reset()");
    } catch (const shoal::UsageError&) {
    }
    vector.reset(kSeed);
    check(!vector.stop_requested(), label + ": reset() left the stop requested");
    check_like_reference(heavy, label, [&] {
        (void)vector.submit(0, buffer_actions);
        (void)vector.submit(1, buffer_actions);
        (void)vector.wait(0);
        (void)vector.wait(1);
    });
}

/// A synchronous step through the pool, paced, stopped by the owner's poll.
void stop_round(unsigned pool_threads) {
    const std::string label = "round pool=" + std::to_string(pool_threads);
    Heavy heavy(pool_threads, 1);
    shoal::Vector& vector = heavy.vector;
    // The first step is paced from its first env (the vector has not learnt the envs' cost yet);
    // the poll says stop at its first question, kStopPollNs after the step started.
    const auto start = std::chrono::steady_clock::now();
    bool refused = false;
    try {
        (void)vector.step(nullptr, [](void*) noexcept { return true; }, nullptr);
    } catch (const shoal::UsageError&) {
        refused = true;
    }
    const double took = stop_took(start);
    check(refused && vector.stop_requested(), label + ": the poll did not stop the step");
    check(heavy.ticked(0) > 0, label + ": every env was stepped; the stop came too late");
    check(heavy.ticked(2) == 0, label + ": an env was stepped twice");
    check(took < kPromptS, label + ": the stop took " + std::to_string(took) + " s");
    try {
        (void)vector.step();
        check(false, label + ": step() accepted before reset()");
    } catch (const shoal::UsageError&) {
    }
    // The vector is usable again, and its envs step like new ones once reset.
    vector.reset(kSeed);
    check_like_reference(heavy, label, [&] { (void)vector.step(); });
}

}  // namespace

int main() {
    for (unsigned threads : {0u, 1u, 2u}) {
        stop_pipeline(threads, false);
        stop_pipeline(threads, true);
        stop_round(threads);
    }
    std::printf("interrupt_test: %s (slowest stop %.3f s)\n", failures ? "FAILED" : "ok", slowest_stop);
    return failures ? 1 : 0;
}
