// shoal/detail/sync.hpp — the small synchronisation primitives the pool and the pipeline share.
//
//   kCacheLine            the one cache-line size of the core (padding, env alignment, Python)
//   cpu_relax             one pause of a spin loop
//   now_ns, thread_cpu_ns monotonic wall time and the calling thread's CPU time
//   Doorbell              a word one side advances and the other sleeps on, without lost wake-ups
//   bump                  an increment of a counter that only one thread writes
//   claim                 claiming chunks of a round from a tagged claim word with one CAS
//   ForkEpoch             telling a forked child from the process that started the threads
//   Thread                a native thread, started with asynchronous signals blocked, that a forked
//                         child forgets instead of joining
// The OS calls behind them (waiting on a word, clocks, threads, fork) are in shoal/platform/.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "shoal/platform/clock.hpp"
#include "shoal/platform/cpu.hpp"
#include "shoal/platform/threads.hpp"
#include "shoal/platform/wait.hpp"

namespace shoal::detail {

/// Bytes per cache line: the unit of padding between threads' data and of env alignment.
inline constexpr size_t kCacheLine = 64;

using platform::cpu_relax;
using platform::now_ns;
using platform::thread_cpu_ns;

/// Adds to a counter that only one thread writes (others may read it): no read-modify-write needed.
inline void bump(std::atomic<uint64_t>& counter, uint64_t by = 1) noexcept {
    counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

// ---- claim words ------------------------------------------------------------------------------
//
// A claim word packs (round tag : 36 | front : 14 | back : 14): chunks [front, back) of the round
// `tag` are still unclaimed. Owners claim from the front, thieves (or a helping caller) from the
// back, each with one CAS, so no chunk runs twice and no lock is needed.

inline constexpr unsigned kIndexBits = 14;
inline constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
inline constexpr unsigned kTagShift = 2 * kIndexBits;
inline constexpr uint64_t kTagMask = (uint64_t{1} << (64 - kTagShift)) - 1;
/// The most chunks one claim word can hand out in a round.
inline constexpr uint64_t kMaxChunksPerWord = kIndexMask;

[[nodiscard]] constexpr uint64_t pack_claim(uint64_t tag, uint64_t front, uint64_t back) noexcept {
    return ((tag & kTagMask) << kTagShift) | (front << kIndexBits) | back;
}

/// True if `tag` belongs to a round before `current` (tags are round numbers mod 2^36).
[[nodiscard]] constexpr bool tag_is_older(uint64_t tag, uint64_t current) noexcept {
    const uint64_t age = (current - tag) & kTagMask;
    return age != 0 && age < (kTagMask >> 1);
}

/// Whether a word still tagged with another round may be (re)initialised by this claim.
enum class FirstTouch : uint8_t {
    IfOlder,  ///< only if the word's tag is older than ours (a late participant must not reset it)
    Always,   ///< the caller of the round: it is never late, so any other tag is an older one
};

/// What one claim takes from a claim word.
enum class Take : uint8_t {
    Front,      ///< one chunk from the front
    Back,       ///< one chunk from the back (a thief)
    FrontHalf,  ///< half of what is left from the front, at least one (a static slice's owner)
};

/**
 * Claims chunks of `word` for the round tagged `tag`, whose word holds `count` chunks in that round,
 * as `take` says. Returns the first chunk claimed and sets `*taken` to how many (an owner runs them
 * as one range), or returns -1 if none is left or the word belongs to a round this claim may not
 * touch. A word still tagged with an older round is initialised for this round by the same CAS
 * (the first touch of a slice in a round).
 */
[[nodiscard]] inline int64_t claim_run(std::atomic<uint64_t>& word, uint64_t tag, uint64_t count, Take take,
                                       FirstTouch first_touch, uint64_t* taken) noexcept {
    tag &= kTagMask;
    uint64_t v = word.load(std::memory_order_relaxed);
    for (;;) {
        uint64_t front, back;
        const uint64_t word_tag = v >> kTagShift;
        if (word_tag == tag) {
            front = (v >> kIndexBits) & kIndexMask;
            back = v & kIndexMask;
        } else if (first_touch == FirstTouch::Always || tag_is_older(word_tag, tag)) {
            front = 0;
            back = count;
        } else {
            return -1;
        }
        if (front >= back) return -1;
        const uint64_t n = take == Take::FrontHalf ? std::max<uint64_t>(1, (back - front) / 2) : 1;
        const uint64_t index = take == Take::Back ? back - 1 : front;
        const uint64_t desired =
            take == Take::Back ? pack_claim(tag, front, back - 1) : pack_claim(tag, front + n, back);
        if (word.compare_exchange_weak(v, desired, std::memory_order_relaxed, std::memory_order_relaxed)) {
            *taken = n;
            return static_cast<int64_t>(index);
        }
    }
}

/** One chunk from the front or the back: claim_run() with Take::Front or Take::Back. */
[[nodiscard]] inline int64_t claim(std::atomic<uint64_t>& word, uint64_t tag, uint64_t count, bool from_back,
                                   FirstTouch first_touch) noexcept {
    uint64_t taken = 0;
    return claim_run(word, tag, count, from_back ? Take::Back : Take::Front, first_touch, &taken);
}

// ---- doorbell ---------------------------------------------------------------------------------
//
// Rule (no lost wake-up, doorbell). A sleeper announces itself in `sleeping`, re-reads `word` and
// only then waits (platform::wait) on the value it read; the ringer stores `word`, then reads
// `sleeping`. All four accesses are seq_cst, so they sit in one total order: either the sleeper's
// read sees the new word, or the ringer's read of the flag follows the announcement and it calls
// platform::wake_all, which the wait cannot miss (every layer rechecks the value atomically with
// queueing the waiter). std::atomic::wait is not used: libstdc++ 12 lost a notification here under test.

/// A 32-bit word one thread advances and another sleeps on; the ringer makes a syscall only when
/// the other side sleeps. Word and flag live on their own cache lines.
struct Doorbell {
    alignas(kCacheLine) std::atomic<uint32_t> word{0};
    alignas(kCacheLine) std::atomic<bool> sleeping{false};

    /// Publishes `value` (release, for whatever was written before) and wakes a sleeper.
    void ring(uint32_t value) noexcept {
        word.store(value, std::memory_order_seq_cst);
        if (sleeping.load(std::memory_order_seq_cst)) platform::wake_all(&word);
    }

    /// Sleeps until done(value of word) holds; the last read of the word is an acquire.
    template <class Done>
    void sleep_until(Done&& done) noexcept {
        while (!done(word.load(std::memory_order_acquire))) {
            sleeping.store(true, std::memory_order_seq_cst);
            const uint32_t seen = word.load(std::memory_order_seq_cst);
            if (!done(seen)) platform::wait(&word, seen);
            sleeping.store(false, std::memory_order_relaxed);
        }
    }

    /// One sleep of sleep_until() that gives up after `timeout_ns`; returns done(value of word).
    template <class Done>
    bool sleep_for(Done&& done, uint64_t timeout_ns) noexcept {
        if (done(word.load(std::memory_order_acquire))) return true;
        sleeping.store(true, std::memory_order_seq_cst);
        const uint32_t seen = word.load(std::memory_order_seq_cst);
        if (!done(seen)) platform::wait_for(&word, seen, timeout_ns);
        sleeping.store(false, std::memory_order_relaxed);
        return done(word.load(std::memory_order_acquire));
    }
};

// ---- fork -------------------------------------------------------------------------------------

/// Bumped in the child after every fork(); owners of threads compare it with the epoch of their threads.
inline std::atomic<uint64_t> fork_epoch{0};

extern "C" inline void shoal_on_fork_child() noexcept {
    fork_epoch.fetch_add(1, std::memory_order_relaxed);
}

/// The fork epoch in which an object started its threads.
class ForkEpoch {
public:
    ForkEpoch() noexcept {
        // A function-local static of an inline function is one object per program (or shared
        // object), so the handler is registered once however many translation units include this.
        static const bool registered = (platform::at_fork_child(&shoal_on_fork_child), true);
        (void)registered;
        record();
    }

    /// Remembers the current epoch (call when starting threads).
    void record() noexcept { epoch_ = fork_epoch.load(std::memory_order_relaxed); }

    /// True in a process forked after record(): the threads started then do not exist here.
    [[nodiscard]] bool forked() const noexcept { return epoch_ != fork_epoch.load(std::memory_order_relaxed); }

    /// Number of the current epoch (0 in the original process).
    [[nodiscard]] uint64_t value() const noexcept { return epoch_; }

private:
    uint64_t epoch_ = 0;
};

// ---- threads ----------------------------------------------------------------------------------

/// One native thread running `entry(arg)`, with asynchronous signals blocked. In a forked child the
/// thread does not exist: join() then only forgets the handle (joining it would fail or hang).
class Thread {
public:
    Thread() = default;
    Thread(const Thread&) = delete;
    Thread& operator=(const Thread&) = delete;
    ~Thread() { join(); }

    /// `extra_stack_bytes`: see platform::NativeThread::start.
    /// @throws std::system_error if the thread cannot be created.
    void start(void* (*entry)(void*), void* arg, size_t extra_stack_bytes = 0) {
        [[maybe_unused]] platform::SignalsBlocked blocked;
        native_.start(entry, arg, extra_stack_bytes);
        epoch_.record();
        running_ = true;
    }

    /// Joins the thread (it must be told to stop first); in a forked child, forgets it.
    void join() noexcept {
        if (running_ && !epoch_.forked()) native_.join();
        running_ = false;
    }

    [[nodiscard]] bool running() const noexcept { return running_; }
    [[nodiscard]] const platform::NativeThread& native() const noexcept { return native_; }

private:
    platform::NativeThread native_;
    ForkEpoch epoch_;
    bool running_ = false;
};

}  // namespace shoal::detail
