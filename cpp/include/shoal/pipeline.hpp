// shoal/pipeline.hpp — steps the buffers of a EnvArray on a driver thread while the caller works.
//
// The envs of a vector form `num_buffers` equal buffers (buffer b = envs [b*B, (b+1)*B)). The caller
// submits a buffer's actions and returns at once; the driver thread steps submitted buffers in
// submission order, as the caller of a WorkerPool round (so pool workers help it); the caller later
// waits for that buffer only. Overlaps env stepping with whatever the caller does meanwhile (a
// policy's forward pass), with no Python and no lock on the hot path.
//
// A job is cut into chunks that every stepping thread claims from one claim word (detail/sync.hpp,
// tagged with the job number): the driver and the pool workers from the front, and the caller from
// the back once it waits for that buffer while the driver is on it. A caller that finished its
// policy early steps the rest of the buffer instead of spinning, so the two sides balance
// themselves whatever the ratio of policy to env cost. The driver publishes the job once every
// chunk is done, its own and the caller's.
//
// Rules: one submitting thread; a buffer is submitted again only after waiting for its previous
// job; at most num_buffers jobs are in flight (submit() waits for room otherwise). Only the job the
// driver is on (the oldest incomplete one) is ever stepped, so when the driver collects failures
// after a job's chunks are done, nobody is stepping the vector.
//
// Stopping (interrupt.hpp): once the StopRequest is set, every thread skips the chunks it claims,
// so the jobs in flight complete at once (a chunk in progress finishes). A waiting caller with a
// StopPoll asks it between chunks it helps with (when jobs are slow) and between timed sleeps.
// After a stop, wait() and submit() drain every job in flight, then refuse (UsageError) until
// clear() lifts the request.
//
// fork(): the driver thread does not exist in a child. The first call in the child starts a new
// driver; jobs that were in flight at fork() can never complete there, so wait() and submit()
// refuse (UsageError) until clear() (the vector's reset). Destruction in a child that never used
// the pipeline joins nothing.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "shoal/actions.hpp"
#include "shoal/detail/sync.hpp"
#include "shoal/errors.hpp"
#include "shoal/interrupt.hpp"
#include "shoal/pool.hpp"
#include "shoal/vec.hpp"
#include "shoal/waiting.hpp"

namespace shoal {

/// Driver thread + FIFO of buffer steps over one EnvArray and one WorkerPool.
class Pipeline {
public:
    /// `action_buffer`/`env_action_bytes` describe where each env's action rows live; `stop` is the
    /// vector's StopRequest (it outlives the pipeline).
    /// @throws UsageError if num_envs is not a multiple of num_buffers; std::system_error if the
    ///         driver thread cannot be started.
    Pipeline(EnvArray& vec, WorkerPool& pool, StopRequest& stop, size_t num_buffers, unsigned char* action_buffer,
             size_t env_action_bytes)
        : vec_(vec),
          pool_(pool),
          stop_(stop),
          num_buffers_(num_buffers),
          envs_per_buffer_(num_buffers ? vec.num_envs() / num_buffers : 0),
          action_buffer_(action_buffer),
          env_action_bytes_(env_action_bytes),
          ring_(num_buffers),
          jobs_(num_buffers),
          results_(num_buffers),
          last_job_(num_buffers, 0),
          submitted_for_(num_buffers, false) {
        if (num_buffers == 0 || vec.num_envs() % num_buffers != 0)
            throw UsageError(
                "internal invariant broken (shoal.validation checks it first): num_envs must be divisible by "
                "num_buffers");
        start_driver();
    }

    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    ~Pipeline() {
        // In a forked child that never used the pipeline, the driver does not exist: forget it.
        if (epoch_.forked()) return;
        // After a drain the ring has room: a stop job ends the driver's loop like any other job.
        drain();
        const uint32_t job = submitted_.word.load(std::memory_order_relaxed);
        ring_[job % num_buffers_] = kStop;
        submitted_.ring(job + 1);
        driver_.join();
    }

    [[nodiscard]] size_t num_buffers() const noexcept { return num_buffers_; }
    [[nodiscard]] size_t envs_per_buffer() const noexcept { return envs_per_buffer_; }

    /// Copies buffer b's actions (its envs' rows, contiguous; `wide`: int64 values, checked in range,
    /// narrowed to int32) and queues its step; returns at once unless num_buffers jobs are already
    /// in flight.
    /// @throws UsageError after a fork() that lost steps in flight or after a stop, until clear().
    void submit(size_t b, const unsigned char* actions, bool wide = false) {
        recover_after_fork();
        refuse_if_lost();
        refuse_if_stopped();
        const uint32_t job = submitted_.word.load(std::memory_order_relaxed);
        // Room for one more job: job - completed < num_buffers.
        sleep_until_completed(job - uint32_t(num_buffers_) + 1);
        copy_actions(action_buffer_ + b * envs_per_buffer_ * env_action_bytes_, actions,
                     envs_per_buffer_ * env_action_bytes_, wide);
        // Buffer b's previous job is complete (the caller waited for it), so nobody claims its chunks
        // or reads its chunking.
        cut(jobs_[b]);
        jobs_[b].unclaimed.store(detail::pack_claim(job, 0, jobs_[b].num_chunks), std::memory_order_relaxed);
        jobs_[b].chunks_done.store(0, std::memory_order_relaxed);
        jobs_[b].episodes.store(0, std::memory_order_relaxed);
        ring_[job % num_buffers_] = b;
        last_job_[b] = job;
        submitted_for_[b] = true;
        // The driver that sees the new count also sees the ring slot and the actions.
        submitted_.ring(job + 1);
    }

    /// Waits until buffer b's last submitted step is done; returns the episodes it ended and moves
    /// its failure messages (if any) into `failures`. Rethrows an exception from the pool. With a
    /// `poll`, asks it every kStopPollNs whether to stop.
    /// @throws UsageError after a fork() that lost steps in flight or after a stop (once every
    ///         job in flight is done), until clear().
    uint64_t wait(size_t b, std::vector<std::string>& failures, StopPoll* poll = nullptr) {
        recover_after_fork();
        refuse_if_lost();
        refuse_if_stopped();
        if (submitted_for_[b]) {
            const uint32_t job = last_job_[b];
            // Help only with the job the driver is on: stepping a later one could race with the
            // driver's failure collection for the current one. Polling costs a clock read per
            // chunk: only when jobs are slow enough to need it.
            StopPoll* help_poll = last_job_ns_.load(std::memory_order_relaxed) >= kPieceNs ? poll : nullptr;
            if (help_poll) help_poll->arm(detail::now_ns());
            if (completed_.word.load(std::memory_order_acquire) == job) step_chunks(b, job, true, help_poll);
            waiting::spin_until([&] { return reached(job + 1); }, waiting::kWaiterSpinNs);
            if (poll) {
                const auto done = [target = job + 1](uint32_t completed) { return int32_t(completed - target) >= 0; };
                while (!completed_.sleep_for(done, kStopPollNs)) poll->stop_requested(detail::now_ns());
            } else {
                sleep_until_completed(job + 1);
            }
            submitted_for_[b] = false;
        }
        refuse_if_stopped();
        Result& result = results_[b];
        if (result.error) std::rethrow_exception(std::exchange(result.error, nullptr));
        failures = std::move(result.failures);
        result.failures.clear();
        return std::exchange(result.episodes, 0);
    }

    /// Steps chunks of the job the driver is on, from the back, for about `budget_ns` (the caller,
    /// while it waits for something else: its policy's results on a GPU). False when no job is in
    /// flight or none of its chunks was left to claim. Same thread as submit().
    bool help(uint64_t budget_ns) noexcept {
        if (epoch_.forked() || lost_at_fork_) return false;
        const uint32_t job = completed_.word.load(std::memory_order_acquire);
        if (job == submitted_.word.load(std::memory_order_relaxed)) return false;
        // The ring slot of a job in flight was written by submit(), on this thread.
        const size_t b = ring_[job % num_buffers_];
        const uint64_t start = detail::now_ns();
        size_t stepped = 0;
        while (step_chunks(b, job, true, nullptr, 1) != 0) {
            ++stepped;
            if (detail::now_ns() - start >= budget_ns) break;
        }
        return stepped != 0;
    }

    /// Waits for every submitted step (before a reset, a thread-count change or destruction).
    void drain() {
        recover_after_fork();
        for (size_t b = 0; b < num_buffers_; ++b)
            if (submitted_for_[b]) sleep_until_completed(last_job_[b] + 1);
    }

    /// Forgets the results of drained jobs (after a reset); lifts the refusal after a lossy fork
    /// or a stop.
    void clear() {
        drain();
        for (size_t b = 0; b < num_buffers_; ++b) {
            submitted_for_[b] = false;
            results_[b] = Result{};
        }
        lost_at_fork_ = false;
        stop_.clear();
    }

private:
    static constexpr size_t kStop = ~size_t{0};
    /// Chunks per job: fine enough that the caller's share follows its idle time, coarse enough
    /// that claiming (one CAS per chunk) stays negligible. Slow jobs are cut finer (see cut()).
    static constexpr size_t kChunksPerBuffer = 32;
    /// A job ends when its last chunk does: a thread that starts its last chunk late (descheduled,
    /// or on a slower env) leaves the others idle for up to a chunk. With this many chunks for each
    /// thread, that tail is a small share of the job whatever the thread count.
    static constexpr size_t kChunksPerParticipant = 8;
    static_assert(kChunksPerBuffer <= detail::kMaxChunksPerWord);
    /// The caller waiting for chunks in progress yields its CPU after this many pauses.
    static constexpr unsigned kAwaitYieldEvery = 1024;

    /// Claim state of the job of one buffer (one job per buffer in flight at most).
    struct Job {
        /// Unclaimed chunks of the job, tagged with its number. The driver and the pool workers
        /// claim from the front, the waiting caller from the back: in a steady loop the caller helps
        /// with about the same tail chunks every time, so each env's state stays in one core's
        /// cache instead of moving between the two.
        alignas(detail::kCacheLine) std::atomic<uint64_t> unclaimed{0};
        alignas(detail::kCacheLine) std::atomic<uint32_t> chunks_done{0};
        std::atomic<uint64_t> episodes{0};
        // Written by submit() before it rings, read by the threads that step the job.
        size_t chunk_envs = 1;
        uint32_t num_chunks = 0;
    };

    struct Result {
        uint64_t episodes = 0;
        std::vector<std::string> failures;
        std::exception_ptr error;
    };

    void start_driver() {
        epoch_.record();
        driver_start_ = submitted_.word.load(std::memory_order_relaxed);
        driver_.start(&Pipeline::driver_entry, this);
    }

    /// In a forked child: jobs in flight at fork() are lost (their driver does not exist here);
    /// forget the parent's driver, mark the loss and start a driver of our own.
    void recover_after_fork() {
        if (!epoch_.forked()) return;
        driver_.join();  // forgets the handle
        const uint32_t submitted = submitted_.word.load(std::memory_order_relaxed);
        if (completed_.word.load(std::memory_order_relaxed) != submitted) lost_at_fork_ = true;
        completed_.word.store(submitted, std::memory_order_relaxed);
        submitted_.sleeping.store(false, std::memory_order_relaxed);
        completed_.sleeping.store(false, std::memory_order_relaxed);
        for (size_t b = 0; b < num_buffers_; ++b) {
            submitted_for_[b] = false;
            results_[b] = Result{};
        }
        start_driver();
    }

    void refuse_if_lost() const {
        if (lost_at_fork_)
            throw UsageError(
                "this process was forked while a pipelined step was in flight; its results do not exist "
                "in the child: reset() the vector before stepping it here");
    }

    /// After a stop: waits for every job in flight (their chunks are skipped), then refuses.
    void refuse_if_stopped() {
        if (!stop_.requested()) return;
        drain();
        throw UsageError(stop_.refusal());
    }

    [[nodiscard]] bool reached(uint32_t target) const noexcept {
        return int32_t(completed_.word.load(std::memory_order_acquire) - target) >= 0;
    }

    /// Returns once the count of completed jobs has reached `target` (compared modulo 2^32).
    void sleep_until_completed(uint32_t target) noexcept {
        completed_.sleep_until([target](uint32_t completed) { return int32_t(completed - target) >= 0; });
    }

    /// Chunks a job: at least kChunksPerBuffer and kChunksPerParticipant for each thread that may
    /// step it, and when jobs take long (the last one, or none yet) so many that a chunk takes
    /// about kPieceNs, so that a stop never waits long for a chunk in progress.
    void cut(Job& job) const noexcept {
        const size_t threads = size_t(pool_.num_threads()) + 2;  // driver, workers, the caller helping
        const uint64_t job_ns = last_job_ns_.load(std::memory_order_relaxed);
        const uint64_t chunks = std::min<uint64_t>(
            {std::max<uint64_t>({kChunksPerBuffer, kChunksPerParticipant * threads, job_ns / kPieceNs * threads}),
             envs_per_buffer_, detail::kMaxChunksPerWord});
        const size_t chunk_envs = std::max<size_t>(1, (envs_per_buffer_ + chunks - 1) / chunks);
        job.chunk_envs = chunk_envs;
        job.num_chunks = uint32_t((envs_per_buffer_ + chunk_envs - 1) / chunk_envs);
    }

    /// Claims and steps chunks of buffer b's job `job` until none is left (driver, workers, caller)
    /// or `max_chunks` are done; after a stop request, claims and skips them. The caller passes its
    /// poll. Returns the chunks claimed.
    size_t step_chunks(size_t b, uint32_t job_number, bool from_back, StopPoll* poll = nullptr,
                       size_t max_chunks = ~size_t{0}) noexcept {
        Job& job = jobs_[b];
        const size_t first = b * envs_per_buffer_, last = first + envs_per_buffer_;
        const size_t chunk_envs = job.chunk_envs;
        size_t claimed = 0;
        for (int64_t c; claimed < max_chunks && (c = detail::claim(job.unclaimed, job_number, job.num_chunks, from_back,
                                                                   detail::FirstTouch::IfOlder)) >= 0;) {
            ++claimed;
            if (!stop_.requested()) {
                const size_t begin = first + size_t(c) * chunk_envs;
                const uint64_t ended = vec_.step_range(begin, std::min(last, begin + chunk_envs));
                if (ended) job.episodes.fetch_add(ended, std::memory_order_relaxed);
            }
            // Release: the chunk's writes (and env failure flags) happen-before the driver's check.
            job.chunks_done.fetch_add(1, std::memory_order_release);
            if (poll) poll->stop_requested(detail::now_ns());
        }
        return claimed;
    }

    /// Waits for chunks still in progress on other threads (at most one chunk each).
    void await_chunks(const Job& job) noexcept {
        for (unsigned i = 1; job.chunks_done.load(std::memory_order_acquire) != job.num_chunks; ++i) {
            if (i % kAwaitYieldEvery == 0)
                platform::yield_cpu();  // the caller lost its CPU mid-chunk: lend ours
            else
                detail::cpu_relax();
        }
    }

    static void* driver_entry(void* self) noexcept {
        static_cast<Pipeline*>(self)->drive();
        return nullptr;
    }

    /// Runs job `number` (buffer b) to completion; nothing escapes: a failure lands in its Result.
    void run_job(size_t b, uint32_t number) noexcept {
        Result& result = results_[b];
        Job& job = jobs_[b];
        // One item per pool participant; each runs the claim loop (a late worker finds nothing).
        auto body = [&](size_t begin, size_t end) {
            for (size_t i = begin; i < end; ++i) step_chunks(b, number, false);
        };
        try {
            pool_.parallel_for(size_t(pool_.num_threads()) + 1, body);
        } catch (...) {
            result.error = std::current_exception();
            step_chunks(b, number, false);  // whatever the pool did not run
        }
        await_chunks(job);
        result.episodes += job.episodes.load(std::memory_order_relaxed);
        if (vec_.any_failed()) {
            try {
                std::vector<std::string> failures = vec_.take_failures();
                result.failures.insert(result.failures.end(), failures.begin(), failures.end());
            } catch (...) {
                if (!result.error) result.error = std::current_exception();
            }
        }
    }

    void drive() noexcept {
        uint32_t next = driver_start_;
        uint64_t spin_ns = waiting::kDriverInitialSpinNs;
        uint64_t idle_since = detail::now_ns();
        for (;;) {
            const auto submitted = [next](uint32_t count) { return count != next; };
            if (!waiting::spin_until([&] { return submitted(submitted_.word.load(std::memory_order_acquire)); },
                                     spin_ns))
                submitted_.sleep_until(submitted);
            const uint64_t started = detail::now_ns();
            spin_ns = waiting::driver_spin_ns(started - idle_since);
            const size_t b = ring_[next % num_buffers_];
            if (b == kStop) return;
            run_job(b, next);
            idle_since = detail::now_ns();
            last_job_ns_.store(idle_since - started, std::memory_order_relaxed);
            next += 1;
            completed_.ring(next);  // publishes the job's Result to the waiter
        }
    }

    EnvArray& vec_;
    WorkerPool& pool_;
    StopRequest& stop_;
    const size_t num_buffers_;
    const size_t envs_per_buffer_;
    unsigned char* const action_buffer_;
    const size_t env_action_bytes_;
    std::vector<size_t> ring_;
    std::vector<Job> jobs_;
    std::vector<Result> results_;
    std::vector<uint32_t> last_job_;                   // caller-only
    std::vector<bool> submitted_for_;                  // caller-only
    bool lost_at_fork_ = false;                        // caller-only
    uint32_t driver_start_ = 0;                        // the first job number the driver waits for
    std::atomic<uint64_t> last_job_ns_{~uint64_t{0}};  // how long the driver's last job took (none yet: "long")
    detail::Doorbell submitted_;                       // jobs submitted; the driver sleeps on it
    detail::Doorbell completed_;                       // jobs completed; the caller sleeps on it
    detail::ForkEpoch epoch_;
    detail::Thread driver_;  // declared last: joined (by ~Pipeline) before the members above go
};

}  // namespace shoal
