// interrupt_test: stopping steps in flight (interrupt.hpp). A stop from another thread or from the
// owner's poll ends a pipeline's jobs and a pool round early, leaving envs unstepped; the pipeline
// refuses until clear(); the pool and the pipeline stay usable, and after a reset the envs step
// exactly like envs that were never interrupted. Exit 0 = pass.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "shoal/errors.hpp"
#include "shoal/interrupt.hpp"
#include "shoal/pipeline.hpp"

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

/// Deep envs with heavy work over their own buffers.
struct HeavyVec {
    Storage storage;
    std::vector<double> params;
    shoal::NativeVec vec;

    HeavyVec()
        : storage(*shoal_env_spec_deep(), kEnvs),
          params(kEnvs, kWork),
          vec(*shoal_env_spec_deep(), kEnvs, params.data(), shoal_env_spec_deep()->max_episode_steps,
              storage.buffers()) {
        vec.reset_range(0, kEnvs, kSeed);
    }

    /// Sets every env's `work` (Deep's first field after the SDK's base struct).
    void set_work(int32_t work) {
        for (size_t i = 0; i < kEnvs; ++i)
            std::memcpy(reinterpret_cast<unsigned char*>(vec.env(i)) + sizeof(shoal_env), &work, sizeof work);
    }

    /// Envs not stepped since their reset.
    [[nodiscard]] size_t unstepped() const {
        size_t count = 0;
        for (size_t i = 0; i < kEnvs; ++i) count += vec.env(i)->tick == 0;
        return count;
    }
};

/// After `stepped` was reset: steps it with `step` and a vector that was never interrupted by hand,
/// with the same actions and cheap work, and compares their outputs after each step.
template <class Step>
void check_like_reference(HeavyVec& stepped, const std::string& label, Step&& step) {
    HeavyVec reference;
    stepped.set_work(kCheapWork);
    reference.set_work(kCheapWork);
    std::copy(stepped.storage.actions.begin(), stepped.storage.actions.end(), reference.storage.actions.begin());
    for (int round = 0; round < 3; ++round) {
        step();
        (void)reference.vec.step_range(0, kEnvs);
        // Final observations are left out: the interrupted step may have written rows of ended episodes.
        check(stepped.storage.same_rows(reference.storage, 0, kEnvs),
              label + ": outputs differ from a vector never interrupted, round " + std::to_string(round));
    }
}

/// Pipelined: two buffers in flight, a stop from another thread (or from the waiter's own poll).
void stop_pipeline(unsigned pool_threads, bool by_poll) {
    const std::string label = std::string("pipeline pool=") + std::to_string(pool_threads) +
                              (by_poll ? " stopped by the poll" : " stopped by another thread");
    HeavyVec heavy;
    shoal::WorkerPool pool(pool_threads);
    shoal::StopRequest stop;
    shoal::Pipeline pipeline(heavy.vec, pool, stop, 2, heavy.storage.actions.data(), 4);
    std::vector<int32_t> actions(kEnvs / 2, 1);
    const auto* raw = reinterpret_cast<const unsigned char*>(actions.data());
    std::vector<std::string> messages;
    int asked = 0;
    shoal::StopPoll poll(stop, [](void* count) noexcept { return ++*static_cast<int*>(count) >= 1; }, &asked);
    const auto start = std::chrono::steady_clock::now();
    pipeline.submit(0, raw);
    pipeline.submit(1, raw);
    std::thread stopper;
    if (!by_poll)
        stopper = std::thread([&stop] {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            stop.request();
        });
    bool refused = false;
    try {
        pipeline.wait(0, messages, by_poll ? &poll : nullptr);
    } catch (const shoal::UsageError&) {
        refused = true;
    }
    const double took = stop_took(start);
    if (stopper.joinable()) stopper.join();
    check(refused, label + ": wait() returned a stopped step");
    check(!by_poll || asked == 1, label + ": the poll was asked " + std::to_string(asked) + " times, not once");
    check(heavy.unstepped() > 0, label + ": every env was stepped; the stop came too late to show");
    check(took < kPromptS, label + ": the stop took " + std::to_string(took) + " s");
    try {
        pipeline.submit(0, raw);
        check(false, label + ": submit() accepted before clear()");
    } catch (const shoal::UsageError&) {
    }
    pipeline.clear();
    check(!stop.requested(), label + ": clear() left the stop requested");
    heavy.vec.reset_range(0, kEnvs, kSeed);
    check_like_reference(heavy, label, [&] {
        pipeline.submit(0, raw);
        pipeline.submit(1, raw);
        pipeline.wait(0, messages);
        pipeline.wait(1, messages);
    });
}

/// A synchronous step through the pool, paced, stopped by the owner's poll.
void stop_round(unsigned pool_threads) {
    const std::string label = "round pool=" + std::to_string(pool_threads);
    HeavyVec heavy;
    shoal::WorkerPool pool(pool_threads);
    shoal::StopRequest stop;
    shoal::Pacer pacer(stop, kEnvs);
    std::vector<int> stepped(kEnvs, 0);
    auto piece = [&](size_t begin, size_t end) {
        (void)heavy.vec.step_range(begin, end);
        for (size_t i = begin; i < end; ++i) ++stepped[i];
    };
    auto body = [&](size_t begin, size_t end) { pacer.run(begin, end, piece); };
    const auto step = [&](shoal::StopPoll& poll) {
        pacer.start(poll);
        pool.parallel_for(kEnvs, body);
        pacer.finish();
    };
    // The first step is paced from its first env (the pacer has not learnt the envs' cost yet);
    // the poll says stop at its first question, kStopPollNs after the step started.
    shoal::StopPoll now(stop, [](void*) noexcept { return true; }, nullptr);
    const auto start = std::chrono::steady_clock::now();
    step(now);
    const double took = stop_took(start);
    check(stop.requested(), label + ": the poll did not stop the step");
    check(std::count(stepped.begin(), stepped.end(), 0) > 0, label + ": every env was stepped; the stop came too late");
    check(std::count(stepped.begin(), stepped.end(), 2) == 0, label + ": an env was stepped twice");
    check(took < kPromptS, label + ": the stop took " + std::to_string(took) + " s");
    // The pool is usable again, and the envs step like new ones once reset.
    shoal::StopPoll never(stop, [](void*) noexcept { return false; }, nullptr);
    stop.clear();
    heavy.vec.reset_range(0, kEnvs, kSeed);
    check_like_reference(heavy, label, [&] { step(never); });
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
