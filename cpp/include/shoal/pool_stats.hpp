// shoal/pool_stats.hpp — the worker pool's counters: each field written once, in an X-macro.
//
// Every thread of a pool (the caller and each worker) counts into its own PoolCounters, alone on
// its cache lines; stats() sums them field by field and adds the gauges. The bindings export
// every field of PoolStats by name.
#pragma once

#include <atomic>
#include <cstdint>

#include "shoal/detail/sync.hpp"

/// Totals since the workers were (re)started: X(name, description). Each thread bumps the ones it does.
#define SHOAL_POOL_TOTALS(X)                                                               \
    X(rounds, "run() calls with num_items > 0")                                            \
    X(chunks_by_caller, "chunks executed by the calling thread")                           \
    X(chunks_by_workers, "chunks executed by worker threads")                              \
    X(worker_sleeps, "times a worker's spin budget ran out and it slept on its wait word") \
    X(worker_wakeups, "sleeps on the wait word that ended with a new round")               \
    X(spin_hits, "rounds that found a worker spinning (no syscall involved)")              \
    X(futex_wakes, "wake-ups of sleeping workers (OS calls) issued by the caller")         \
    X(preemptions, "times a spinning worker noticed it had been descheduled")              \
    X(parks, "times a worker parked (stopped awaiting rounds for a while)")                \
    X(late_arrivals, "rounds in which a worker found its own slice already taken")         \
    X(steals, "static chunks taken from another participant's slice")                      \
    X(caller_yields, "sched_yield calls by the caller while joining")                      \
    X(caller_wait_ns, "time the caller spent waiting for chunks in progress")

/// Gauges describing the moment: X(type, name, description).
#define SHOAL_POOL_GAUGES(X)                                                           \
    X(uint64_t, mean_spin_budget_ns, "gauge: mean current spin budget of the workers") \
    X(unsigned, parked_workers, "gauge: workers parked right now")                     \
    X(unsigned, active_limit, "gauge: workers allowed to be active (spin tokens)")

namespace shoal {

/// Counters for tuning (see SHOAL_POOL_TOTALS and SHOAL_POOL_GAUGES).
struct PoolStats {
#define SHOAL_POOL_TOTAL_FIELD(name, description) uint64_t name = 0;
    SHOAL_POOL_TOTALS(SHOAL_POOL_TOTAL_FIELD)
#undef SHOAL_POOL_TOTAL_FIELD
#define SHOAL_POOL_GAUGE_FIELD(type, name, description) type name = 0;
    SHOAL_POOL_GAUGES(SHOAL_POOL_GAUGE_FIELD)
#undef SHOAL_POOL_GAUGE_FIELD
};

/// One thread's totals, written by that thread only (detail::bump), read by stats().
struct alignas(detail::kCacheLine) PoolCounters {
#define SHOAL_POOL_COUNTER(name, description) std::atomic<uint64_t> name{0};
    SHOAL_POOL_TOTALS(SHOAL_POOL_COUNTER)
#undef SHOAL_POOL_COUNTER

    /// Adds this thread's totals to `stats`.
    void add_to(PoolStats& stats) const noexcept {
#define SHOAL_POOL_ADD(name, description) stats.name += name.load(std::memory_order_relaxed);
        SHOAL_POOL_TOTALS(SHOAL_POOL_ADD)
#undef SHOAL_POOL_ADD
    }
};

}  // namespace shoal
