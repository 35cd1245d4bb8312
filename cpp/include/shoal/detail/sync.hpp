// shoal/detail/sync.hpp — the small synchronisation primitives the pool and the pipeline share.
//
//   kCacheLine            the one cache-line size of the core (padding, env alignment, Python)
//   cpu_relax             one pause of a spin loop
//   now_ns, thread_cpu_ns monotonic wall time and the calling thread's CPU time
//   futex_wait/wake_all   sleeping on a 32-bit word (Linux futex, process-private)
//   Doorbell              a word one side advances and the other sleeps on, without lost wake-ups
//   bump                  an increment of a counter that only one thread writes
//   claim                 claiming chunks of a round from a tagged claim word with one CAS
//   ForkEpoch             telling a forked child from the process that started the threads
//   SignalsBlocked        starting threads that never take asynchronous signals
//   Thread                a pthread that a forked child forgets instead of joining
#pragma once

#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <system_error>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace shoal::detail {

/// Bytes per cache line: the unit of padding between threads' data and of env alignment.
inline constexpr size_t kCacheLine = 64;

/// One pause of a spin loop: lets the sibling hyperthread run and saves power.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#else
    std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

[[nodiscard]] inline uint64_t clock_ns(clockid_t clock) noexcept {
    timespec ts;
    clock_gettime(clock, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

/// Monotonic wall time (vDSO, no syscall).
[[nodiscard]] inline uint64_t now_ns() noexcept {
    return clock_ns(CLOCK_MONOTONIC);
}

/// CPU time consumed by the calling thread (a syscall: ~0.3 us; keep it off the hot path).
[[nodiscard]] inline uint64_t thread_cpu_ns() noexcept {
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

// ---- futex ------------------------------------------------------------------------------------

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "futex words must be plain 32-bit integers");

/// Blocks while *word == expected (or until the relative timeout, if any); may return spuriously.
inline void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, const timespec* timeout = nullptr) noexcept {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, timeout, nullptr, 0);
}

/// Wakes every thread blocked in futex_wait on `word`.
inline void futex_wake_all(std::atomic<uint32_t>* word) noexcept {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

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
// only then FUTEX_WAITs on the value it read; the ringer stores `word`, then reads `sleeping`. All
// four accesses are seq_cst, so they sit in one total order: either the sleeper's read sees the new
// word, or the ringer's read of the flag follows the announcement and it issues FUTEX_WAKE, which
// FUTEX_WAIT cannot miss (the kernel rechecks the value atomically with queueing the waiter).
// std::atomic::wait is not used: libstdc++ 12 lost a notification here under test.

/// A 32-bit word one thread advances and another sleeps on; the ringer makes a syscall only when
/// the other side sleeps. Word and flag live on their own cache lines.
struct Doorbell {
    alignas(kCacheLine) std::atomic<uint32_t> word{0};
    alignas(kCacheLine) std::atomic<bool> sleeping{false};

    /// Publishes `value` (release, for whatever was written before) and wakes a sleeper.
    void ring(uint32_t value) noexcept {
        word.store(value, std::memory_order_seq_cst);
        if (sleeping.load(std::memory_order_seq_cst)) futex_wake_all(&word);
    }

    /// Sleeps until done(value of word) holds; the last read of the word is an acquire.
    template <class Done>
    void sleep_until(Done&& done) noexcept {
        while (!done(word.load(std::memory_order_acquire))) {
            sleeping.store(true, std::memory_order_seq_cst);
            const uint32_t seen = word.load(std::memory_order_seq_cst);
            if (!done(seen)) futex_wait(&word, seen);
            sleeping.store(false, std::memory_order_relaxed);
        }
    }

    /// One sleep of sleep_until() that gives up after `timeout_ns`; returns done(value of word).
    template <class Done>
    bool sleep_for(Done&& done, uint64_t timeout_ns) noexcept {
        if (done(word.load(std::memory_order_acquire))) return true;
        sleeping.store(true, std::memory_order_seq_cst);
        const uint32_t seen = word.load(std::memory_order_seq_cst);
        if (!done(seen)) {
            const timespec timeout{time_t(timeout_ns / 1'000'000'000u), long(timeout_ns % 1'000'000'000u)};
            futex_wait(&word, seen, &timeout);
        }
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
        static const int registered = pthread_atfork(nullptr, nullptr, &shoal_on_fork_child);
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

/// While alive, the calling thread blocks asynchronous signals; threads it creates inherit the mask.
/// SIGINT and friends belong to Python's main thread; fault signals stay deliverable.
class SignalsBlocked {
public:
    SignalsBlocked() noexcept {
        sigset_t all;
        sigfillset(&all);
        for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&all, sig);
        pthread_sigmask(SIG_SETMASK, &all, &previous_);
    }
    ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
    SignalsBlocked(const SignalsBlocked&) = delete;
    SignalsBlocked& operator=(const SignalsBlocked&) = delete;

private:
    sigset_t previous_;
};

/// One pthread running `entry(arg)`, with asynchronous signals blocked. In a forked child the
/// thread does not exist: join() then only forgets the handle (joining it would fail or hang).
class Thread {
public:
    Thread() = default;
    Thread(const Thread&) = delete;
    Thread& operator=(const Thread&) = delete;
    ~Thread() { join(); }

    /// @throws std::system_error if the thread cannot be created.
    void start(void* (*entry)(void*), void* arg, const pthread_attr_t* attr = nullptr) {
        SignalsBlocked blocked;
        const int error = pthread_create(&handle_, attr, entry, arg);
        if (error != 0) throw std::system_error(error, std::generic_category(), "shoal: pthread_create");
        epoch_.record();
        running_ = true;
    }

    /// Joins the thread (it must be told to stop first); in a forked child, forgets it.
    void join() noexcept {
        if (running_ && !epoch_.forked()) pthread_join(handle_, nullptr);
        running_ = false;
    }

    [[nodiscard]] bool running() const noexcept { return running_; }
    [[nodiscard]] pthread_t handle() const noexcept { return handle_; }

private:
    pthread_t handle_{};
    ForkEpoch epoch_;
    bool running_ = false;
};

}  // namespace shoal::detail
