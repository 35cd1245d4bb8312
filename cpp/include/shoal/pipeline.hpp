// shoal/pipeline.hpp — steps the buffers of a NativeVec on a driver thread while the caller works.
//
// The envs of a vector form `num_buffers` equal buffers (buffer b = envs [b*B, (b+1)*B)). The caller
// submits a buffer's actions and returns at once; the driver thread steps submitted buffers in
// submission order, as the caller of a WorkerPool round (so pool workers help it); the caller later
// waits for that buffer only. Overlaps env stepping with whatever the caller does meanwhile (a
// policy's forward pass), with no Python and no lock on the hot path.
//
// A job is cut into chunks that every stepping thread claims: the driver and the pool workers from
// the front, and the caller from the back once it waits for that buffer while the driver is on it.
// A caller that finished its policy early steps the rest of the buffer instead of spinning, so the
// two sides balance themselves whatever the ratio of policy to env cost. The driver publishes the
// job once every chunk is done, its own and the caller's.
//
// Rules: one submitting thread; a buffer is submitted again only after waiting for its previous
// job; at most num_buffers jobs are in flight (submit() waits for room otherwise). Only the job the
// driver is on (the oldest incomplete one) is ever stepped, so when the driver collects failures
// after a job's chunks are done, nobody is stepping the vector.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "shoal/pool.hpp"
#include "shoal/vec.hpp"

namespace shoal {

/// Driver thread + FIFO of buffer steps over one NativeVec and one WorkerPool.
class Pipeline {
   public:
    /// `action_buffer`/`env_action_bytes` describe where each env's action rows live.
    Pipeline(NativeVec& vec, WorkerPool& pool, size_t num_buffers, unsigned char* action_buffer,
             size_t env_action_bytes)
        : vec_(vec),
          pool_(pool),
          num_buffers_(num_buffers),
          envs_per_buffer_(vec.num_envs() / num_buffers),
          action_buffer_(action_buffer),
          env_action_bytes_(env_action_bytes),
          chunk_envs_(std::max<size_t>(1, envs_per_buffer_ / kChunksPerBuffer)),
          num_chunks_(uint32_t((envs_per_buffer_ + chunk_envs_ - 1) / chunk_envs_)),
          ring_(num_buffers),
          jobs_(num_buffers),
          results_(num_buffers),
          last_job_(num_buffers, 0),
          submitted_for_(num_buffers, false) {
        if (num_buffers == 0 || vec.num_envs() % num_buffers != 0)
            throw std::invalid_argument("num_envs must be divisible by the number of buffers");
        driver_ = std::thread([this] { drive(); });
    }

    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    ~Pipeline() {
        // After a drain the ring has room: a stop job ends the driver's loop like any other job.
        drain();
        const uint32_t job = submitted_.load(std::memory_order_relaxed);
        ring_[job % num_buffers_] = kStop;
        submitted_.store(job + 1, std::memory_order_seq_cst);
        wake_driver();
        driver_.join();
    }

    [[nodiscard]] size_t num_buffers() const noexcept { return num_buffers_; }
    [[nodiscard]] size_t envs_per_buffer() const noexcept { return envs_per_buffer_; }

    /// Copies buffer b's actions (its envs' rows, contiguous) and queues its step; returns at once
    /// unless num_buffers jobs are already in flight.
    void submit(size_t b, const unsigned char* actions) {
        const uint32_t job = submitted_.load(std::memory_order_relaxed);
        // Room for one more job: job - completed < num_buffers.
        sleep_until_completed(job - uint32_t(num_buffers_) + 1);
        std::memcpy(action_buffer_ + b * envs_per_buffer_ * env_action_bytes_, actions,
                    envs_per_buffer_ * env_action_bytes_);
        // Buffer b's previous job is complete (the caller waited for it), so nobody claims its chunks.
        jobs_[b].unclaimed.store(num_chunks_, std::memory_order_relaxed);  // front 0, back num_chunks_
        jobs_[b].chunks_done.store(0, std::memory_order_relaxed);
        jobs_[b].episodes.store(0, std::memory_order_relaxed);
        ring_[job % num_buffers_] = b;
        last_job_[b] = job;
        submitted_for_[b] = true;
        // The driver that sees the new count also sees the ring slot and the actions (release part);
        // seq_cst for the sleep handshake in wake_driver().
        submitted_.store(job + 1, std::memory_order_seq_cst);
        wake_driver();
    }

    /// Waits until buffer b's last submitted step is done; returns the episodes it ended and moves
    /// its failure messages (if any) into `failures`. Rethrows an exception from the pool.
    uint64_t wait(size_t b, std::vector<std::string>& failures) {
        if (submitted_for_[b]) {
            const uint32_t target = last_job_[b] + 1;
            // Help only with the job the driver is on: stepping a later one could race with the
            // driver's failure collection for the current one.
            if (completed_.load(std::memory_order_acquire) + 1 == target) step_chunks(b, true);
            const auto spin_until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
            while (!reached(target) && std::chrono::steady_clock::now() < spin_until) pause();
            sleep_until_completed(target);
            submitted_for_[b] = false;
        }
        Result& result = results_[b];
        if (result.error) std::rethrow_exception(std::exchange(result.error, nullptr));
        failures = std::move(result.failures);
        result.failures.clear();
        return std::exchange(result.episodes, 0);
    }

    /// Waits for every submitted step (before a reset, a thread-count change or destruction).
    void drain() {
        std::vector<std::string> ignored;
        for (size_t b = 0; b < num_buffers_; ++b)
            if (submitted_for_[b]) sleep_until_completed(last_job_[b] + 1);
    }

    /// Forgets the results of drained jobs (after a reset).
    void clear() {
        drain();
        for (size_t b = 0; b < num_buffers_; ++b) {
            submitted_for_[b] = false;
            results_[b] = Result{};
        }
    }

   private:
    static constexpr size_t kStop = ~size_t{0};
    /// Chunks per job: fine enough that the caller's share follows its idle time, coarse enough
    /// that claiming (one fetch_add per chunk) stays negligible.
    static constexpr size_t kChunksPerBuffer = 32;  // < 2^16 (Job packs chunk indices in 16 bits)

    /// Claim state of the job of one buffer (one job per buffer in flight at most).
    struct Job {
        /// Unclaimed chunks [front, back), packed front << 16 | back. The driver and the pool
        /// workers claim from the front, the waiting caller from the back: in a steady loop the
        /// caller helps with about the same tail chunks every time, so each env's state stays in
        /// one core's cache instead of moving between the two.
        alignas(64) std::atomic<uint32_t> unclaimed{0};
        alignas(64) std::atomic<uint32_t> chunks_done{0};
        std::atomic<uint64_t> episodes{0};

        /// Claims one chunk; -1 if none is left.
        int64_t claim(bool from_back) noexcept {
            uint32_t v = unclaimed.load(std::memory_order_relaxed);
            for (;;) {
                const uint32_t front = v >> 16, back = v & 0xffffu;
                if (front >= back) return -1;
                const uint32_t desired = from_back ? v - 1 : v + (1u << 16);
                if (unclaimed.compare_exchange_weak(v, desired, std::memory_order_relaxed))
                    return from_back ? back - 1 : front;
            }
        }
    };

    struct Result {
        uint64_t episodes = 0;
        std::vector<std::string> failures;
        std::exception_ptr error;
    };

    static void pause() noexcept {
#if defined(__x86_64__) || defined(__i386__)
        _mm_pause();
#else
        std::this_thread::yield();
#endif
    }

    // Sleeping (both sides): a thread announces it in its *_sleeping_ flag, re-reads the word and
    // only then FUTEX_WAITs on the value it read; the other side stores the word, then reads the
    // flag. All four accesses are seq_cst, so either the sleeper sees the new word or the waker
    // sees the flag and issues FUTEX_WAKE (which FUTEX_WAIT cannot miss: it rechecks the value).
    // std::atomic::wait is not used: libstdc++ 12 lost a notification here under test.
    void wake_driver() {
        if (driver_sleeping_.load(std::memory_order_seq_cst)) detail::futex_wake_all(&submitted_);
    }

    [[nodiscard]] bool reached(uint32_t target) const noexcept {
        return int32_t(completed_.load(std::memory_order_acquire) - target) >= 0;
    }

    /// Returns once `completed_` has reached `target` (job counts compared modulo 2^32).
    void sleep_until_completed(uint32_t target) {
        while (!reached(target)) {
            caller_sleeping_.store(true, std::memory_order_seq_cst);
            const uint32_t seen = completed_.load(std::memory_order_seq_cst);
            // The target is checked against the value read *after* announcing the sleep; FUTEX_WAIT
            // then returns at once if the word moved on after that read.
            if (int32_t(seen - target) < 0) detail::futex_wait(&completed_, seen, nullptr);
            caller_sleeping_.store(false, std::memory_order_relaxed);
        }
    }

    /// Claims and steps chunks of buffer b's job until none is left (driver, workers and caller).
    void step_chunks(size_t b, bool from_back) noexcept {
        Job& job = jobs_[b];
        const size_t first = b * envs_per_buffer_, last = first + envs_per_buffer_;
        for (int64_t c; (c = job.claim(from_back)) >= 0;) {
            const size_t begin = first + size_t(c) * chunk_envs_;
            const uint64_t ended = vec_.step_range(begin, std::min(last, begin + chunk_envs_));
            if (ended) job.episodes.fetch_add(ended, std::memory_order_relaxed);
            // Release: the chunk's writes (and env failure flags) happen-before the driver's check.
            job.chunks_done.fetch_add(1, std::memory_order_release);
        }
    }

    /// Waits for chunks still in progress on other threads (at most one chunk each).
    void await_chunks(const Job& job) noexcept {
        for (unsigned i = 1; job.chunks_done.load(std::memory_order_acquire) != num_chunks_; ++i) {
            if (i % 1024 == 0) std::this_thread::yield();  // the caller lost its CPU mid-chunk
            else pause();
        }
    }

    void drive() {
        uint32_t next = 0;
        uint64_t spin_ns = 200'000;
        for (;;) {
            const auto idle_since = std::chrono::steady_clock::now();
            while (submitted_.load(std::memory_order_acquire) == next) {
                const auto waited = std::chrono::steady_clock::now() - idle_since;
                if (uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count()) < spin_ns) {
                    pause();
                    continue;
                }
                driver_sleeping_.store(true, std::memory_order_seq_cst);
                if (submitted_.load(std::memory_order_seq_cst) == next) detail::futex_wait(&submitted_, next, nullptr);
                driver_sleeping_.store(false, std::memory_order_relaxed);
            }
            // Spin about as long as the caller took to submit, within [20 us, 1 ms].
            const uint64_t gap = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                              std::chrono::steady_clock::now() - idle_since).count());
            spin_ns = std::clamp<uint64_t>(2 * gap, 20'000, 1'000'000);

            const size_t b = ring_[next % num_buffers_];
            if (b == kStop) return;
            Result& result = results_[b];
            Job& job = jobs_[b];
            // One item per pool participant; each runs the claim loop (a late worker finds nothing).
            auto body = [&](size_t begin, size_t end) {
                for (size_t i = begin; i < end; ++i) step_chunks(b, false);
            };
            try {
                pool_.parallel_for(size_t(pool_.num_threads()) + 1, body);
            } catch (...) {
                result.error = std::current_exception();
            }
            await_chunks(job);
            result.episodes += job.episodes.load(std::memory_order_relaxed);
            if (vec_.any_failed()) {
                std::vector<std::string> failures = vec_.take_failures();
                result.failures.insert(result.failures.end(), failures.begin(), failures.end());
            }
            next += 1;
            completed_.store(next, std::memory_order_seq_cst);  // publishes `result` to the waiter
            if (caller_sleeping_.load(std::memory_order_seq_cst)) detail::futex_wake_all(&completed_);
        }
    }

    NativeVec& vec_;
    WorkerPool& pool_;
    const size_t num_buffers_;
    const size_t envs_per_buffer_;
    unsigned char* const action_buffer_;
    const size_t env_action_bytes_;
    const size_t chunk_envs_;
    const uint32_t num_chunks_;
    std::vector<size_t> ring_;
    std::vector<Job> jobs_;
    std::vector<Result> results_;
    std::vector<uint32_t> last_job_;      // caller-only
    std::vector<bool> submitted_for_;     // caller-only
    alignas(64) std::atomic<uint32_t> submitted_{0};
    alignas(64) std::atomic<uint32_t> completed_{0};
    alignas(64) std::atomic<bool> driver_sleeping_{false};
    alignas(64) std::atomic<bool> caller_sleeping_{false};
    std::thread driver_;
};

}  // namespace shoal
