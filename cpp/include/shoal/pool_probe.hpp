/* shoal/pool_probe.hpp — measurement helpers for the worker pool (benchmarks, Python probes).
 *
 * measure_fork_join_ns      per-round cost of run() with a trivial body (pure synchronisation).
 * measure_steps_per_second  a synthetic vectorised env: each item ("env") owns a 64-byte slot and
 *                           burns ~ns_per_item of dependent arithmetic on it per step; the caller
 *                           may busy-wait between rounds, standing in for the policy.
 * Both run a short warm-up first so the pool's adaptive waiting reaches its steady state.
 */
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "shoal/pool.hpp"

namespace shoal {

namespace detail {

/** One synthetic env: its state alone on a cache line. */
struct alignas(kCacheLine) ProbeSlot {
    uint64_t state = 0;
};

/** Dependent multiply-add chain; the asm barrier keeps the compiler from folding the loop. */
inline uint64_t burn(uint64_t x, uint64_t iterations) noexcept {
    for (uint64_t i = 0; i < iterations; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        asm volatile("" : "+r"(x));
    }
    return x;
}

/** Nanoseconds per burn() iteration on this machine (minimum of several timings, cached). */
inline double burn_ns_per_iteration() {
    static const double value = [] {
        constexpr uint64_t kIterations = 2'000'000;
        double best = 1e9;
        uint64_t x = 1;
        for (int repeat = 0; repeat < 7; ++repeat) {
            const uint64_t start = now_ns();
            x = burn(x, kIterations);
            const uint64_t elapsed = now_ns() - start;
            best = std::min(best, static_cast<double>(elapsed) / kIterations);
        }
        asm volatile("" ::"r"(x));
        return best;
    }();
    return value;
}

inline void busy_wait_ns(uint64_t ns) noexcept {
    if (ns == 0) return;
    const uint64_t until = now_ns() + ns;
    while (now_ns() < until) cpu_relax();
}

}  // namespace detail

/**
 * @brief Mean wall time of one run() round whose body does (almost) nothing, in nanoseconds.
 * @param rounds measured rounds (after rounds/4 + 100 warm-up rounds).
 * Each participant gets one item, so this is the cost of publish + claim + join.
 */
[[nodiscard]] inline double measure_fork_join_ns(WorkerPool& pool, size_t rounds) {
    std::atomic<uint64_t> sink{0};
    const auto body = [](void* context, size_t begin, size_t end) {
        static_cast<std::atomic<uint64_t>*>(context)->fetch_add(end - begin, std::memory_order_relaxed);
    };
    const size_t items = static_cast<size_t>(pool.num_threads()) + 1;
    for (size_t r = 0; r < rounds / 4 + 100; ++r) pool.run(items, body, &sink);
    const uint64_t start = detail::now_ns();
    for (size_t r = 0; r < rounds; ++r) pool.run(items, body, &sink);
    const uint64_t elapsed = detail::now_ns() - start;
    return rounds ? static_cast<double>(elapsed) / static_cast<double>(rounds) : 0.0;
}

/**
 * @brief Env steps per second of a synthetic workload stepped by `pool`.
 * @param items           number of envs (one 64-byte slot each).
 * @param ns_per_item     approximate cost of one env step (dependent arithmetic).
 * @param rounds          measured rounds (after rounds/4 + 10 warm-up rounds).
 * @param caller_pause_us busy-wait of the caller between rounds (the "policy"); not counted in
 *                        the rate, which is items * rounds / (time spent inside run()).
 */
[[nodiscard]] inline double measure_steps_per_second(WorkerPool& pool, size_t items, unsigned ns_per_item,
                                                     size_t rounds, unsigned caller_pause_us) {
    struct Context {
        detail::ProbeSlot* slots;
        uint64_t iterations;
        uint64_t zero;  // always 0, but the compiler cannot know: chains item i+1 after item i
    };
    std::vector<detail::ProbeSlot> slots(items);
    for (size_t i = 0; i < items; ++i) slots[i].state = i + 1;
    const double per_iteration = detail::burn_ns_per_iteration();
    std::atomic<uint64_t> zero{0};
    Context context{slots.data(), static_cast<uint64_t>(std::max(1.0, ns_per_item / per_iteration + 0.5)),
                    zero.load(std::memory_order_relaxed)};
    const auto body = [](void* raw, size_t begin, size_t end) {
        const auto* c = static_cast<const Context*>(raw);
        // Items of one chunk run back to back like envs stepped in a loop: the data dependency on
        // `carry` (masked by a runtime zero) keeps the CPU from overlapping consecutive items, so
        // one item really costs ~ns_per_item.
        uint64_t carry = 0;
        for (size_t i = begin; i < end; ++i) {
            carry = detail::burn(c->slots[i].state + (carry & c->zero), c->iterations);
            c->slots[i].state = carry;
        }
    };
    const uint64_t pause_ns = uint64_t{caller_pause_us} * 1000u;
    for (size_t r = 0; r < rounds / 4 + 10; ++r) {
        detail::busy_wait_ns(pause_ns);
        pool.run(items, body, &context);
    }
    uint64_t inside = 0;
    for (size_t r = 0; r < rounds; ++r) {
        detail::busy_wait_ns(pause_ns);
        const uint64_t start = detail::now_ns();
        pool.run(items, body, &context);
        inside += detail::now_ns() - start;
    }
    return inside ? static_cast<double>(items) * static_cast<double>(rounds) * 1e9 / static_cast<double>(inside) : 0.0;
}

}  // namespace shoal
