// shoal/waiting.hpp — how the pool's threads wait between rounds: the adaptive spin/park policy.
//
// Between rounds a worker is in one of three states:
//   spinning - polls the round word with cpu_relax; the caller needs no syscall; costs a CPU.
//   sleeping - waits (platform::wait) on the round word after a sleep request; the caller wakes it next round.
//   parked   - timed wait on a park word; the caller neither wakes nor waits for it (it just
//              runs the parked worker's chunks itself). For when awaiting rounds does not pay.
//
// Spin tokens: at most active_limit workers (default: allowed CPUs - 1; the caller is the other
// one) may spin or sleep at once; a worker without a token parks and retries every kTokenRetryNs.
// Without this cap, T workers + the caller on T CPUs time-share and the caller loses whole
// scheduler slices.
//
// Spin budget: whenever a round arrives the worker knows the gap it waited (from the end of its
// chunks to the new round). It keeps a decaying peak of the gaps up to kMaxSpinNs (peak = max(gap,
// 7/8 peak)) and the share of gaps beyond it. Budget = 2 * peak + kMinSpinNs, capped at kMaxSpinNs;
// if most gaps exceed kMaxSpinNs no affordable spin bridges them and the budget drops to kMinSpinNs.
// A sleep that ended in a round within kMaxSpinNs thus lengthens the next spin (spinning would have
// paid), and long gaps shorten it (spinning would burn a CPU for nothing).
//
// Contention: while spinning the worker reads the clock every kClockCheckEvery pauses; a jump of
// more than kPreemptNs between two reads (or between the last read and the round's arrival) means
// it had been descheduled: another thread wanted this CPU, so spinning takes time from the caller
// or a competing process. A participation that took more than kPreemptNs of wall time also compares
// wall time with the thread's CPU time (one syscall, only then): a worker descheduled in the middle
// of a chunk made the caller wait for it. Either way the worker returns its token and parks for
// kParkBaseNs << (level - 1) (level + 1 per detection, at most kMaxParkLevel); every kParkDecayNs
// of contention-free activity lowers the level. kUselessWakeLimit wake-ups in a row that found no
// chunk left (the caller finished alone) park it for kUselessWakeParkNs, so the caller stops paying
// a syscall per round for nothing. The caller's own evidence (it lost kPreemptNs of a round to
// descheduling) parks every worker with the caller's backoff level.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "shoal/detail/sync.hpp"
#include "shoal/pool_stats.hpp"

namespace shoal::waiting {

// Spin budget (nanoseconds).
inline constexpr uint64_t kMinSpinNs = 50'000;       ///< shortest spin budget
inline constexpr uint64_t kMaxSpinNs = 1'000'000;    ///< longest spin budget; longer gaps are "long"
inline constexpr uint64_t kInitialSpinNs = 200'000;  ///< budget of a fresh worker
inline constexpr uint32_t kLongGapMajority = 128;    ///< long-gap share (in 1/256) above which spins are short
// Contention and parking.
inline constexpr uint64_t kPreemptNs = 200'000;             ///< clock jump while spinning = descheduled
inline constexpr uint64_t kParkBaseNs = 2'000'000;          ///< first contention backoff (doubles per level)
inline constexpr unsigned kMaxParkLevel = 8;                ///< backoff tops out at kParkBaseNs << 7 = 256 ms
inline constexpr uint64_t kParkDecayNs = 100'000'000;       ///< contention-free time per level decay
inline constexpr uint64_t kTokenRetryNs = 10'000'000;       ///< how often a worker without token looks again
inline constexpr uint64_t kUselessWakeParkNs = 20'000'000;  ///< park after wake-ups that found no work
inline constexpr unsigned kUselessWakeLimit = 4;            ///< ... this many in a row
inline constexpr unsigned kClockCheckEvery = 32;            ///< pause iterations between clock reads
// The pool's caller joining a round.
inline constexpr uint64_t kJoinSpinNs = 20'000;  ///< the caller spins this long before sched_yield
// The pipeline (see pipeline.hpp): its driver spins about as long as the caller took to submit.
inline constexpr uint64_t kDriverMinSpinNs = 20'000;
inline constexpr uint64_t kDriverMaxSpinNs = 1'000'000;
inline constexpr uint64_t kDriverInitialSpinNs = 200'000;
inline constexpr uint64_t kWaiterSpinNs = 200'000;  ///< a pipeline caller spins this long, then sleeps

/// Backoff level of a thread that detected contention: parks for kParkBaseNs << (level - 1).
struct Backoff {
    unsigned level = 0;
    uint64_t level_since_ns = 0;  // when `level` last changed (for its decay)

    /// One more detection at `now`; returns until when to park.
    uint64_t raise(uint64_t now) noexcept {
        level = std::min(level + 1, kMaxParkLevel);
        level_since_ns = now;
        return now + (kParkBaseNs << (level - 1));
    }

    /// A contention-free moment: lowers the level once per kParkDecayNs.
    void relax(uint64_t now) noexcept {
        if (level != 0 && now - level_since_ns > kParkDecayNs) {
            --level;
            level_since_ns = now;
        }
    }
};

/// The adaptive-waiting state of one worker, touched only by that worker.
struct WorkerWaiting {
    uint64_t spin_budget_ns = kInitialSpinNs;
    uint64_t gap_peak_ns = kInitialSpinNs / 2;  // decaying maximum of the short gaps
    uint32_t long_gap_share = 0;                // EMA of "gap longer than any affordable spin", in 1/256
    uint64_t base_wall_ns = 0;                  // (wall, thread CPU) when the worker last checked for
    uint64_t base_cpu_ns = 0;                   // preemption while working
    uint64_t park_until_ns = 0;
    Backoff backoff;
    unsigned useless_wakes = 0;
    bool woken = false;  // the last wait ended in a wake-up of a sleep

    /// Learns from the gap between two rounds; returns the new spin budget.
    uint64_t learn_gap(uint64_t gap_ns) noexcept {
        const bool long_gap = gap_ns > kMaxSpinNs;
        long_gap_share = (7 * long_gap_share + (long_gap ? 256u : 0u)) / 8;
        if (!long_gap) gap_peak_ns = std::max(gap_ns, gap_peak_ns - gap_peak_ns / 8);
        uint64_t budget = 2 * gap_peak_ns + kMinSpinNs;
        if (long_gap_share > kLongGapMajority) budget = kMinSpinNs;
        spin_budget_ns = std::min(budget, kMaxSpinNs);
        return spin_budget_ns;
    }

    /// Contention detected at `now`: park with the next backoff level.
    void note_contention(uint64_t now) noexcept { park_until_ns = backoff.raise(now); }

    /// Re-bases the wall/CPU comparison (after sleeping, when wall time legitimately runs alone).
    void rebase_cpu_clock() noexcept {
        base_wall_ns = detail::now_ns();
        base_cpu_ns = detail::thread_cpu_ns();
    }

    /// After a long participation: if wall time since the last base exceeds this thread's CPU time
    /// by more than kPreemptNs, the worker was descheduled while the caller may have been waiting
    /// for its chunk. Between bases the worker only spins or works, both on-CPU. True = contention.
    bool preempted_while_working(uint64_t now) noexcept {
        const uint64_t cpu = detail::thread_cpu_ns();
        const uint64_t wall = now - base_wall_ns, used = cpu - base_cpu_ns;
        base_wall_ns = now;
        base_cpu_ns = cpu;
        return wall > used + kPreemptNs;
    }

    /// After a round that a wake-up brought: parks after kUselessWakeLimit wakes for nothing.
    void note_wake_outcome(bool found_work) noexcept {
        if (!woken) return;
        if (found_work) {
            useless_wakes = 0;
        } else if (++useless_wakes >= kUselessWakeLimit) {
            useless_wakes = 0;
            park_until_ns = detail::now_ns() + kUselessWakeParkNs;
        }
    }
};

/// One worker's side of the waiting: its policy state and token, touched only by that worker
/// (the gauges are read by stats()).
struct Waiter {
    WorkerWaiting waiting;
    bool has_token = false;
    PoolCounters* counters = nullptr;  // the worker's own
    std::atomic<uint64_t> spin_budget_gauge{kInitialSpinNs};
    std::atomic<bool> parked_gauge{false};
};

/// Where a pool's workers wait between rounds: the round word they spin and sleep on (the pool's),
/// the sleep requests the caller serves, the park word, the spin tokens and the caller's
/// contention evidence. The pool publishes rounds and stops; the Lobby decides how to wait for them.
class Lobby {
public:
    /// `gen`: the pool's round word (bumped once per round and on stop); `stop`: its stop flag.
    Lobby(std::atomic<uint32_t>& gen, const std::atomic<bool>& stop) noexcept : gen_(gen), stop_(stop) {}

    // ---- the caller's side ----------------------------------------------------------------------

    /// After the caller bumped `gen` (seq_cst): wakes the sleepers if some requested a wake since
    /// the last one; returns whether it did (see WorkerPool's rule "no lost wake-up").
    bool wake_sleepers() noexcept {
        const uint32_t requests = sleep_requests_.load(std::memory_order_seq_cst);
        if (requests == caller_.requests_served) return false;
        caller_.requests_served = requests;
        platform::wake_all(&gen_);
        return true;
    }

    /// Every worker is gone: every request it made has been served or no longer matters.
    void forget_requests() noexcept { caller_.requests_served = sleep_requests_.load(std::memory_order_relaxed); }

    /// Ends every park at once (after the caller stored `stop`, seq_cst).
    void end_parks() noexcept {
        park_word_.fetch_add(1, std::memory_order_seq_cst);
        platform::wake_all(&park_word_);
    }

    /// A fresh set of workers: `limit` spin tokens.
    void set_tokens(unsigned limit) noexcept { tokens_.store(static_cast<int>(limit), std::memory_order_relaxed); }

    /// The limit changed from `old_limit` to `limit`. Tokens = limit - holders: holders keep
    /// their token; the count may go negative for a while and recovers as they park.
    void change_limit(unsigned old_limit, unsigned limit) noexcept {
        tokens_.fetch_add(static_cast<int>(limit) - static_cast<int>(old_limit), std::memory_order_relaxed);
    }

    /// The caller's own contention evidence: it lost more than kPreemptNs of a round to being
    /// descheduled (typically to its own woken workers plus a competing process). Workers then
    /// park as after their own detection, with the caller's backoff level.
    void note_caller_cpu(uint64_t now, uint64_t wall, uint64_t cpu) noexcept {
        if (wall > cpu + kPreemptNs && contention_parks_.load(std::memory_order_relaxed)) {
            park_all_until_ns_.store(caller_.backoff.raise(now), std::memory_order_relaxed);
        } else {
            caller_.backoff.relax(now);
        }
    }

    // ---- a worker's side ------------------------------------------------------------------------

    /// Waits for a `gen` value different from `seen` (a new round, or stop) and returns it:
    /// parks while told to (contention backoff, no spin token), else spins, else sleeps.
    uint32_t wait_for_round(Waiter& w, uint32_t seen) noexcept {
        const uint64_t idle_since = detail::now_ns();
        bool parked = false;  // a parked wait says nothing about the gap between rounds
        w.waiting.woken = false;
        for (;;) {
            uint32_t gen = gen_.load(std::memory_order_acquire);
            if (gen != seen) return gen;
            const uint64_t now = detail::now_ns();
            const uint64_t park_all_until = park_all_until_ns_.load(std::memory_order_relaxed);
            if (now < park_all_until) w.waiting.park_until_ns = std::max(w.waiting.park_until_ns, park_all_until);
            if (now < w.waiting.park_until_ns) {
                park(w, w.waiting.park_until_ns);
                parked = true;
            } else if (!w.has_token && !try_take_token(w)) {
                park(w, now + kTokenRetryNs);
                parked = true;
            } else {
                switch (spin_for_round(w, seen, idle_since, parked, gen)) {
                    case SpinEnd::Arrived: return gen;
                    case SpinEnd::Preempted: continue;  // parks
                    case SpinEnd::BudgetSpent: return sleep_for_round(w, seen, idle_since, parked);
                }
            }
        }
    }

    void release_token(Waiter& w) noexcept {
        w.has_token = false;
        tokens_.fetch_add(1, std::memory_order_relaxed);
    }

    void note_contention(Waiter& w, uint64_t now) noexcept {
        detail::bump(w.counters->preemptions);
        if (contention_parks_.load(std::memory_order_relaxed)) w.waiting.note_contention(now);
    }

    /// Whether evidence of contention parks workers (PoolOptions::park_on_contention).
    void set_contention_parking(bool enabled) noexcept { contention_parks_.store(enabled, std::memory_order_relaxed); }

private:
    /// How a spin for the next round ended.
    enum class SpinEnd : uint8_t { Arrived, Preempted, BudgetSpent };

    bool try_take_token(Waiter& w) noexcept {
        int tokens = tokens_.load(std::memory_order_relaxed);
        while (tokens > 0) {
            if (tokens_.compare_exchange_weak(tokens, tokens - 1, std::memory_order_relaxed)) {
                w.has_token = true;
                return true;
            }
        }
        return false;
    }

    void learn_gap(Waiter& w, uint64_t gap_ns) noexcept {
        w.spin_budget_gauge.store(w.waiting.learn_gap(gap_ns), std::memory_order_relaxed);
    }

    /// Parks until `until_ns` or until end_parks() bumps `park_word_`.
    void park(Waiter& w, uint64_t until_ns) noexcept {
        if (w.has_token) release_token(w);
        detail::bump(w.counters->parks);
        w.parked_gauge.store(true, std::memory_order_relaxed);
        // Same pattern as `gen`/`sleep_requests`: the pool stores `stop`, then bumps `park_word_`
        // (both seq_cst), so either we see `stop` or the wait sees a changed word.
        const uint32_t word = park_word_.load(std::memory_order_seq_cst);
        while (!stop_.load(std::memory_order_seq_cst)) {
            const uint64_t now = detail::now_ns();
            if (now >= until_ns) break;
            platform::wait_for(&park_word_, word, until_ns - now);
            if (park_word_.load(std::memory_order_seq_cst) != word) break;
        }
        w.parked_gauge.store(false, std::memory_order_relaxed);
        w.waiting.rebase_cpu_clock();
    }

    /// Spins for a `gen` other than `seen` within the worker's budget; on arrival `gen` holds it.
    SpinEnd spin_for_round(Waiter& w, uint32_t seen, uint64_t idle_since, bool parked, uint32_t& gen) noexcept {
        const uint64_t start = detail::now_ns();
        uint64_t last = start;
        for (unsigned i = 1;; ++i) {
            detail::cpu_relax();
            gen = gen_.load(std::memory_order_acquire);
            if (gen != seen) {
                const uint64_t now = detail::now_ns();
                if (now - last > kPreemptNs) {
                    note_contention(w, now);  // the round arrived while this thread was off its CPU
                } else {
                    detail::bump(w.counters->spin_hits);
                    w.waiting.backoff.relax(now);
                    if (!parked) learn_gap(w, now - idle_since);
                }
                return SpinEnd::Arrived;
            }
            if (i % kClockCheckEvery == 0) {
                const uint64_t now = detail::now_ns();
                if (now - last > kPreemptNs) {
                    note_contention(w, now);
                    return SpinEnd::Preempted;
                }
                last = now;
                if (now - start >= w.waiting.spin_budget_ns) return SpinEnd::BudgetSpent;
            }
        }
    }

    /// Sleeps on `gen` until the caller publishes a round other than `seen` (WorkerPool's rule
    /// "no lost wake-up") and returns it.
    uint32_t sleep_for_round(Waiter& w, uint32_t seen, uint64_t idle_since, bool parked) noexcept {
        detail::bump(w.counters->worker_sleeps);
        sleep_requests_.fetch_add(1, std::memory_order_seq_cst);
        uint32_t gen;
        while ((gen = gen_.load(std::memory_order_seq_cst)) == seen) platform::wait(&gen_, seen);
        detail::bump(w.counters->worker_wakeups);
        w.waiting.woken = true;
        w.waiting.rebase_cpu_clock();
        if (!parked) learn_gap(w, detail::now_ns() - idle_since);
        return gen;
    }

    std::atomic<uint32_t>& gen_;
    const std::atomic<bool>& stop_;
    alignas(detail::kCacheLine) std::atomic<uint32_t> sleep_requests_{0};
    alignas(detail::kCacheLine) std::atomic<uint32_t> park_word_{0};
    std::atomic<int> tokens_{0};
    std::atomic<uint64_t> park_all_until_ns_{0};  // set by the caller on its contention evidence
    std::atomic<bool> contention_parks_{true};
    /// The caller's alone.
    struct alignas(detail::kCacheLine) Caller {
        uint32_t requests_served = 0;
        Backoff backoff;
    } caller_;
};

/// How long the pipeline's driver spins for the next job: about twice the last gap, within bounds.
[[nodiscard]] inline uint64_t driver_spin_ns(uint64_t last_gap_ns) noexcept {
    return std::clamp<uint64_t>(2 * last_gap_ns, kDriverMinSpinNs, kDriverMaxSpinNs);
}

/// Spins (cpu_relax) until done() or until `budget_ns` passed; returns done().
template <class Done>
bool spin_until(Done&& done, uint64_t budget_ns) noexcept {
    const uint64_t start = detail::now_ns();
    for (unsigned i = 1;; ++i) {
        if (done()) return true;
        if (i % kClockCheckEvery == 0 && detail::now_ns() - start >= budget_ns) return done();
        detail::cpu_relax();
    }
}

}  // namespace shoal::waiting
