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
