// shoal/interrupt.hpp — stopping a step or reset in flight at an env boundary (Ctrl-C, close() from another
// thread).
//
// Steps run with the GIL released, so Python runs no signal handler until they return: without
// help a Ctrl-C would wait for the whole step. The pieces:
//   StopRequest  one flag, "abandon the step in flight". Any thread may set it; stepping threads
//                read it (relaxed) where they take work and skip what they take from then on. Skipped
//                work still counts as done, so a pool round joins and a pipeline job completes as
//                usual, and once it has, no thread writes the vector. The envs are then partly
//                stepped: the vector refuses steps until its reset clears the request.
//   StopPoll     the thread that owns the call asks its owner (the bindings: "is a Python signal
//                pending?") at most every kStopPollNs, between pieces it steps or between timed
//                sleeps while it waits; a yes sets the flag.
//   Pacer        cuts a synchronous step into pieces of about kPieceNs (learnt from the owner's
//                clock) and looks at the flag between them. While a whole step takes less than that,
//                nothing is cut and the clock is read on one step in kFastStepsPerCheck.
// So a stop takes effect within kStopPollNs plus one piece, and never inside an env's own step
// callback: an env whose single step outlasts that delays the stop by that step.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "shoal/detail/sync.hpp"
#include "shoal/platform/threads.hpp"

namespace shoal {

/// How often the owner of a step or wait asks whether to stop.
inline constexpr uint64_t kStopPollNs = 50'000'000;
/// The duration a piece of a paced step aims at: short next to kStopPollNs, long next to a clock read.
inline constexpr uint64_t kPieceNs = 5'000'000;
/// Unpaced (short) steps measure their duration once in this many, to notice envs getting slow.
inline constexpr unsigned kFastStepsPerCheck = 8;

/// What every refusal after a stopped step says (the bindings may replace it by the Python exception).
inline constexpr const char* kStoppedMessage =
    "a step of this vector was interrupted (Ctrl-C, a signal handler's exception or close()) before every env "
    "was stepped, so its envs are partly stepped: reset() it before stepping it again";
/// What a stopped reset, and every refusal after it, says.
inline constexpr const char* kResetStoppedMessage =
    "a reset of this vector was interrupted (Ctrl-C, a signal handler's exception or close()) before every env "
    "was reset, so its envs are partly reset: reset() it again before stepping it";

/// "Abandon the step in flight": set by any thread, read where stepping threads take work. Read by
/// every stepping thread, written once per stop: alone on its cache line.
class alignas(detail::kCacheLine) StopRequest {
public:
    void request() noexcept { requested_.store(true, std::memory_order_relaxed); }
    void clear() noexcept {
        requested_.store(false, std::memory_order_relaxed);
        cut_reset_.store(false, std::memory_order_relaxed);
    }
    [[nodiscard]] bool requested() const noexcept { return requested_.load(std::memory_order_relaxed); }

    /// The stop cut a reset, not a step: refusals say so until clear().
    void cut_reset() noexcept { cut_reset_.store(true, std::memory_order_relaxed); }
    /// What a refusal after the stop says.
    [[nodiscard]] const char* refusal() const noexcept {
        return cut_reset_.load(std::memory_order_relaxed) ? kResetStoppedMessage : kStoppedMessage;
    }

private:
    std::atomic<bool> requested_{false};
    std::atomic<bool> cut_reset_{false};
};

/// The owner's question "stop?", asked at most every kStopPollNs from the thread that made it.
class StopPoll {
public:
    /// Returns true to stop; called on the owner's thread only.
    using Ask = bool (*)(void* context) noexcept;

    /// Reads no clock: a fast step pays nothing for its poll.
    StopPoll(StopRequest& stop, Ask ask, void* context) noexcept : stop_(stop), ask_(ask), context_(context) {}

    /// Starts the interval at `now` (else the first stop_requested() does).
    void arm(uint64_t now) noexcept { next_ns_ = now + kStopPollNs; }

    /// Asks if kStopPollNs have passed at `now` since the last question (or arm()), and nobody
    /// asked for a stop yet; true once a stop is requested, by this poll or by anyone.
    bool stop_requested(uint64_t now) noexcept {
        if (next_ns_ == 0) arm(now);
        if (now >= next_ns_ && !stop_.requested()) {
            next_ns_ = now + kStopPollNs;
            if (ask_(context_)) stop_.request();
        }
        return stop_.requested();
    }

private:
    StopRequest& stop_;
    Ask ask_;
    void* context_;
    uint64_t next_ns_ = 0;  // when to ask next; 0 = not yet checked
};

/// Cuts the synchronous steps of one vector into pieces that look at the StopRequest in between.
///
/// The owner calls start() before a pool round and finish() after it; the round's body calls
/// run() on every participating thread. Pieces never change results: every env is stepped once,
/// on whichever thread. The fields written by start() are read by the round's bodies, after the
/// pool's publication of the round (which orders them).
class Pacer {
public:
    Pacer(const StopRequest& stop, size_t num_envs) noexcept : stop_(stop), num_envs_(num_envs) {}

    /// Before a step, on the owner's thread; `poll` lives until finish().
    void start(StopPoll& poll) noexcept {
        poll_ = &poll;
        owner_ = platform::current_thread();
        paced_ = piece_envs_.load(std::memory_order_relaxed) < num_envs_;
        measured_ = paced_ || ++unpaced_steps_ % kFastStepsPerCheck == 0;
        if (measured_) start_ns_ = last_ns_ = detail::now_ns();
        if (paced_) poll.arm(start_ns_);
    }

    /// Steps envs [begin, end) through step(first, last), in pieces while the step is paced,
    /// skipping what is left once a stop is requested.
    template <class Step>
    void run(size_t begin, size_t end, Step&& step) noexcept {
        if (!paced_) {
            if (!stop_.requested()) step(begin, end);
            return;
        }
        const bool owner = platform::same_thread(platform::current_thread(), owner_);
        size_t piece = piece_envs_.load(std::memory_order_relaxed);
        for (size_t first = begin; first < end && !stop_.requested();) {
            const size_t last = std::min(end, first + piece);
            step(first, last);
            if (owner) {
                const uint64_t now = detail::now_ns();
                piece = learn(piece, last - first, now - last_ns_);
                last_ns_ = now;
                poll_->stop_requested(now);
            }
            first = last;
        }
    }

    /// After the step's round, on the owner's thread.
    void finish() noexcept {
        if (!measured_ || paced_) return;
        const uint64_t took = detail::now_ns() - start_ns_;
        // A whole step now outlasts a piece: pace the next ones, about kPieceNs per piece.
        if (took > 2 * kPieceNs)
            piece_envs_.store(std::max<size_t>(1, size_t(double(num_envs_) * double(kPieceNs) / double(took))),
                              std::memory_order_relaxed);
    }

private:
    /// The owner's next piece size after `envs` envs (a piece, or what was left of a chunk) took `took_ns`.
    size_t learn(size_t piece, size_t envs, uint64_t took_ns) noexcept {
        if (took_ns < kPieceNs / 2)
            piece = std::min(2 * piece, num_envs_);  // at num_envs the next steps run unpaced
        else if (took_ns > 2 * kPieceNs)
            piece = std::max<size_t>(1, std::min(piece, envs) / 2);
        else
            return piece;
        piece_envs_.store(piece, std::memory_order_relaxed);
        return piece;
    }

    const StopRequest& stop_;
    const size_t num_envs_;
    // Envs per piece; >= num_envs = unpaced. Starts at one: the first step learns the env's cost.
    std::atomic<size_t> piece_envs_{1};
    // Written by the owner between rounds (start), read by the round's bodies.
    bool paced_ = true;
    platform::ThreadId owner_{};
    StopPoll* poll_ = nullptr;
    // The owner's alone.
    bool measured_ = false;
    unsigned unpaced_steps_ = 0;
    uint64_t start_ns_ = 0, last_ns_ = 0;
};

}  // namespace shoal
