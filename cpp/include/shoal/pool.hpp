// shoal/pool.hpp — the worker pool: persistent threads that run fork-join rounds for the caller.
//
// One round = run(num_items, body, context): the items [0, num_items) are split into chunks, the
// calling thread and the workers claim chunks and call body(context, begin, end) on them, and run()
// returns once every item is done. Header-only C++20, no Python; the OS calls are in shoal/platform/.
//
// The moving parts (each concurrency rule is argued in full next to the code relying on it):
//   - Publication: the caller writes the round descriptor under a sequence number (seqlock), then
//     bumps the wait word `gen`. Workers spin on `gen`, then sleep on it (platform::wait); the
//     caller calls platform::wake_all only when the sleep counter says somebody went to sleep.
//   - Claiming: every chunk is claimed with one CAS on a claim word (detail/sync.hpp) that carries
//     the round tag and the range of unclaimed chunks. The first participant to touch a slice in a
//     round initialises its word in the same CAS, so publishing does not write the workers' lines.
//     A static slice's owner takes half of what is left of it per claim (one body call for 8, 4, 2,
//     1, 1 of its 16 sub-chunks); others steal single sub-chunks from its back.
//     The caller takes every chunk still unclaimed: nobody waits for a worker that has not started.
//   - Join: workers add the items they ran to one cumulative counter (release) when they find
//     nothing left to claim; the caller spins (pause, then sched_yield) until the counter shows
//     every item it did not run itself (acquire). Only chunks in progress are waited for.
//   - Waiting between rounds: spin tokens, a learnt spin budget and parking on evidence of CPU
//     contention (waiting.hpp). No tuning knobs are needed.
//   - fork(): a pool used in a forked child notices (ForkEpoch) that its threads are gone, forgets
//     their handles (never joins them) and starts new ones.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <utility>
#include <vector>

#include "shoal/detail/sync.hpp"
#include "shoal/errors.hpp"
#include "shoal/pool_stats.hpp"
#include "shoal/rounds.hpp"
#include "shoal/topology.hpp"
#include "shoal/waiting.hpp"

#if defined(__SANITIZE_THREAD__)
#define SHOAL_POOL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHOAL_POOL_TSAN 1
#endif
#endif

namespace shoal {

/// Settings of a WorkerPool; change them between rounds with set_options().
struct PoolOptions {
    Schedule schedule = Schedule::Static;
    size_t dynamic_chunk = 0;         ///< items per chunk for Dynamic; 0 = auto (~8 chunks per participant)
    bool pin_threads = false;         ///< pin worker i to the (i+1)-th allowed CPU (mod count); caller untouched
    unsigned max_active_workers = 0;  ///< workers that may spin/await rounds at once; 0 = auto (CPUs - reserved)
    unsigned reserved_cpus = 1;       ///< for auto: CPUs kept for busy threads outside the workers (the caller)
    /// for auto: CPUs the process may use where fewer than its affinity mask (a cgroup CPU quota,
    /// told by the owner: shoal.cpus.usable_cpus()); 0 = the affinity mask
    unsigned cpu_limit = 0;
    /// Whether a worker (or the caller) that finds it was descheduled parks the workers for a
    /// while. Off where the threads outside the pool alternate between bursts of their own work and
    /// waiting (a pipeline's caller): being descheduled by such a burst says nothing about the
    /// next round, and dynamic claiming bounds what a descheduled worker delays to its chunk.
    bool park_on_contention = true;
};

/// Persistent threads that run fork-join rounds together with the calling thread.
class WorkerPool {
public:
    using Body = detail::RoundBody;
    using Round = detail::Round;
    using Participation = detail::Participation;
    using ClaimSlot = detail::ClaimSlot;

    /// @brief Starts `num_threads` workers (besides the caller); 0 = the caller does everything.
    /// @throws std::system_error if a thread cannot be created.
    explicit WorkerPool(unsigned num_threads, PoolOptions options = {}) : options_(options) {
        start_workers(num_threads);
    }

    /// Stops, wakes and joins the workers (in a forked child: forgets them, they do not exist).
    ~WorkerPool() noexcept { stop_workers(); }

    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;
    WorkerPool(WorkerPool&&) = delete;
    WorkerPool& operator=(WorkerPool&&) = delete;

    /// @brief Runs body over [0, num_items) split into chunks; returns when every item is done.
    ///
    /// The caller takes part and takes every chunk nobody has claimed, so it never waits for a
    /// worker that has not started. Not reentrant: one run() at a time, never from inside a body.
    /// @throws the first exception thrown by a body (on any thread), after all other chunks
    ///         finished (they all run); UsageError on a nested or concurrent call.
    void run(size_t num_items, Body body, void* context) {
        if (num_items == 0) return;
        if (body == nullptr) throw UsageError("WorkerPool::run: body is null");
        recover_after_fork();
        BusyGuard guard(busy_);
        detail::bump(caller_.rounds);
        if (num_threads_ == 0 || num_items == 1) {
            detail::bump(caller_.chunks_by_caller);
            body(context, 0, num_items);
            return;
        }
        // Long rounds also compare the caller's wall and CPU time (two syscalls, small beside such a
        // round): a caller descheduled inside run() means the CPUs are oversubscribed.
        const bool measure_cpu = last_round_ns_ > waiting::kPreemptNs;
        const uint64_t wall_start = detail::now_ns();
        const uint64_t cpu_start = measure_cpu ? detail::thread_cpu_ns() : 0;
        const Round round = publish(num_items, body, context);
        Participation mine;
        participate(round, 0, mine);
        detail::bump(caller_.chunks_by_caller, mine.chunks);
        if (mine.steals) detail::bump(caller_.steals, mine.steals);
        join(num_items - mine.done);
        const uint64_t wall_end = detail::now_ns();
        last_round_ns_ = wall_end - wall_start;
        if (measure_cpu) lobby_.note_caller_cpu(wall_end, last_round_ns_, detail::thread_cpu_ns() - cpu_start);
        if (error_claimed_.load(std::memory_order_relaxed)) {
            // `error_` was written before its writer's release increment of `worker_items_`, which
            // join() acquired (or by this thread), so reading it here is ordered after the write.
            std::exception_ptr error = std::move(error_);
            error_ = nullptr;
            std::rethrow_exception(error);
        }
    }

    /// Calls f(begin, end) over chunks of [0, num_items) via run(); no allocation.
    template <class F>
    void parallel_for(size_t num_items, F& f) {
        run(
            num_items, [](void* context, size_t begin, size_t end) { (*static_cast<F*>(context))(begin, end); },
            const_cast<void*>(static_cast<const void*>(std::addressof(f))));
    }

    /// Changes the number of workers between rounds (joins all, starts the new count).
    void resize(unsigned num_threads) {
        recover_after_fork();
        BusyGuard guard(busy_);
        if (num_threads == num_threads_) return;
        stop_workers();
        start_workers(num_threads);
    }

    /// Changes the options between rounds.
    void set_options(const PoolOptions& options) {
        recover_after_fork();
        BusyGuard guard(busy_);
        const bool repin = options.pin_threads != options_.pin_threads;
        const unsigned old_limit = active_limit();
        options_ = options;
        lobby_.change_limit(old_limit, active_limit());
        lobby_.set_contention_parking(options_.park_on_contention);
        if (repin) {
            for (unsigned i = 0; i < num_threads_; ++i) apply_affinity(i);
        }
    }

    [[nodiscard]] unsigned num_threads() const noexcept { return num_threads_; }
    [[nodiscard]] const PoolOptions& options() const noexcept { return options_; }

    /// Sums the counters of the caller and the workers. Call it from the thread that owns the pool.
    [[nodiscard]] PoolStats stats() const noexcept {
        PoolStats s;
        caller_.add_to(s);
        uint64_t budget_sum = 0;
        for (unsigned i = 0; i < num_threads_; ++i) {
            const WorkerState& w = workers_[i];
            w.counters.add_to(s);
            budget_sum += w.waiter.spin_budget_gauge.load(std::memory_order_relaxed);
            s.parked_workers += w.waiter.parked_gauge.load(std::memory_order_relaxed) ? 1 : 0;
        }
        s.mean_spin_budget_ns = num_threads_ ? budget_sum / num_threads_ : 0;
        s.active_limit = std::min(active_limit(), num_threads_);
        return s;
    }

private:
    /// Per-worker state; alignas keeps every worker's state off the other workers' lines.
    struct alignas(detail::kCacheLine) WorkerState {
        WorkerPool* pool = nullptr;
        unsigned index = 0;      // worker i is participant i + 1
        uint32_t start_gen = 0;  // `gen` when the thread was created
        detail::Thread thread;
        waiting::Waiter waiter;  // touched only by the worker itself
        uint64_t last_tag = 0;
        PoolCounters counters;  // written only by this worker, read by stats()
    };

    /// Marks the pool busy for the duration of run()/resize()/set_options().
    class BusyGuard {
    public:
        explicit BusyGuard(std::atomic<bool>& busy) : busy_(busy) {
            if (busy_.exchange(true, std::memory_order_acquire)) {
                throw UsageError("WorkerPool: run/resize/set_options called while a run is active");
            }
        }
        ~BusyGuard() { busy_.store(false, std::memory_order_release); }
        BusyGuard(const BusyGuard&) = delete;
        BusyGuard& operator=(const BusyGuard&) = delete;

    private:
        std::atomic<bool>& busy_;
    };

    // ---- publication -------------------------------------------------------------------------
    //
    // Rule (no lost wake-up). The caller does:  gen.store(g + 1, seq_cst);
    //                                           n = sleep_requests.load(seq_cst);
    //                                           if (n != requests_seen) wake_all(gen)
    // A worker about to sleep does:             sleep_requests.fetch_add(1, seq_cst);
    //                                           while (gen.load(seq_cst) == g) wait(gen, g)
    // All four are seq_cst, so they sit in one total order S. If the worker's load of `gen` misses
    // the new value, that load precedes the caller's store in S, hence so does the worker's
    // increment, hence the caller's later load of `sleep_requests` sees a count it has not served
    // and it calls wake_all. The wait layer compares *gen with g atomically with queueing the waiter
    // (platform/wait.hpp), so a wake that lands before the worker is queued makes wait return at once
    // instead of being lost. A wake wakes every waiter, so each request needs serving only once:
    // a woken worker that goes back to sleep makes a new request. When nobody went to sleep the
    // caller pays one plain load and no syscall; a sleeper costs one syscall, not one per round
    // while it is still on its way to a CPU.
    //
    // Rule (descriptor seqlock). The round descriptor is a set of atomics protected by `seq`:
    // the caller stores seq = 2r - 1 (relaxed), then every field with a release store, then
    // seq = 2r (release). A worker loads seq (acquire), the fields (acquire), then seq again. If
    // some field returned a value of a later round r', that value's release store follows the
    // caller's store of 2r' - 1, which then happens-before the worker's second load, so the two
    // loads differ and the worker discards what it read. Equal even values therefore mean every
    // field belongs to round r. All accesses are atomic: a late reader is never a data race.
    //
    // Rule (visibility of user data). Whatever the caller wrote before run() (actions, env state)
    // is sequenced before its release store of seq = 2r; a worker's acquire load of seq orders its
    // chunks after it. A worker's chunks are ordered before its release fetch_add on
    // `worker_items_`, which the caller's acquire load in join() reads. These atomics are what TSan
    // sees; the wait word and the spinning only tell a worker *when* to look.
    Round publish(size_t num_items, Body body, void* context) {
        const uint64_t number = ++round_;
        const size_t participants = static_cast<size_t>(num_threads_) + 1;
        const Round round = detail::plan_round(number, num_items, participants, options_.schedule,
                                               options_.dynamic_chunk, body, context);
        error_claimed_.store(false, std::memory_order_relaxed);
        job_.seq.store(2 * number - 1, std::memory_order_relaxed);
        job_.body.store(body, std::memory_order_release);
        job_.context.store(context, std::memory_order_release);
        job_.num_items.store(num_items, std::memory_order_release);
        job_.slices.store(round.slices, std::memory_order_release);
        job_.chunk_items.store(round.chunk_items, std::memory_order_release);
        job_.schedule.store(round.schedule, std::memory_order_release);
        job_.seq.store(2 * number, std::memory_order_release);
        job_.gen.store(job_.gen.load(std::memory_order_relaxed) + 1, std::memory_order_seq_cst);
        if (lobby_.wake_sleepers()) detail::bump(caller_.futex_wakes);
        return round;
    }

    /** Reads and validates the current descriptor; false if a publication raced with the read. */
    [[nodiscard]] bool read_round(Round& round) const noexcept {
        const uint64_t seq = job_.seq.load(std::memory_order_acquire);
        if (seq & 1) return false;
        round.body = job_.body.load(std::memory_order_acquire);
        round.context = job_.context.load(std::memory_order_acquire);
        round.num_items = job_.num_items.load(std::memory_order_acquire);
        round.slices = job_.slices.load(std::memory_order_acquire);
        round.chunk_items = job_.chunk_items.load(std::memory_order_acquire);
        round.schedule = job_.schedule.load(std::memory_order_acquire);
        if (job_.seq.load(std::memory_order_relaxed) != seq) return false;
        round.tag = (seq / 2) & detail::kTagMask;
        return true;
    }

    /** Runs one chunk; a throwing body is recorded (first one wins) and the round goes on. */
    void run_chunk(const Round& round, size_t begin, size_t end) noexcept {
        try {
            round.body(round.context, begin, end);
        } catch (...) {
            if (!error_claimed_.exchange(true, std::memory_order_relaxed)) {
                // Only the thread that flipped the flag writes `error_`; the caller reads it after the
                // join (see run()). The flag is re-armed by the caller before it publishes a round.
                error_ = std::current_exception();
            }
        }
    }

    /// Claims and runs chunks of `round` as participant `p` until none is left (rounds.hpp).
    void participate(const Round& round, size_t p, Participation& out) noexcept {
        detail::participate(round, p, slots_.get(), dynamic_, out,
                            [this](const Round& r, size_t begin, size_t end) { run_chunk(r, begin, end); });
    }

    // ---- join ----------------------------------------------------------------------------------
    //
    // Rule (join). `worker_items_` only grows: each worker adds the items it ran with one release
    // fetch_add after it found nothing left to claim. The caller knows how many items it ran
    // itself, so the workers owe exactly `num_items - done` in this round, and it waits until the
    // counter has grown by that much. Increments form a release sequence, so the acquire load that
    // reads the final value happens-after every worker's chunk. Chunks nobody claimed were claimed
    // by the caller in participate(), so what it waits for is exactly the chunks in progress.

    void join(size_t owed_by_workers) noexcept {
        const uint64_t target = worker_items_seen_ + owed_by_workers;
        worker_items_seen_ = target;
        if (worker_items_.load(std::memory_order_acquire) == target) return;
        const uint64_t start = detail::now_ns();
        uint64_t yields = 0;
        for (unsigned i = 1; worker_items_.load(std::memory_order_acquire) != target; ++i) {
            if (yields == 0 &&
                (i % waiting::kClockCheckEvery != 0 || detail::now_ns() - start < waiting::kJoinSpinNs)) {
                detail::cpu_relax();
            } else {
                // A chunk in progress whose thread lost its CPU: lend ours instead of spinning.
                platform::yield_cpu();
                ++yields;
            }
        }
        detail::bump(caller_.caller_wait_ns, detail::now_ns() - start);
        if (yields) detail::bump(caller_.caller_yields, yields);
    }

    // ---- workers -------------------------------------------------------------------------------

    static void* worker_entry(void* arg) noexcept {
        auto* w = static_cast<WorkerState*>(arg);
        w->pool->worker_loop(*w);
        return nullptr;
    }

    void worker_loop(WorkerState& w) noexcept {
        uint32_t seen = w.start_gen;
        w.waiter.waiting.rebase_cpu_clock();
        started_.fetch_add(1, std::memory_order_release);
        const size_t participant = static_cast<size_t>(w.index) + 1;
        for (;;) {
            seen = lobby_.wait_for_round(w.waiter, seen);
            if (stop_.load(std::memory_order_acquire)) break;
            // Only token holders take chunks: a worker back from parking would otherwise grab a
            // chunk while every CPU is busy, get descheduled holding it, and make the caller wait.
            if (!w.waiter.has_token) continue;
            Round round;
            if (!read_round(round) || round.tag == w.last_tag) continue;
            w.last_tag = round.tag;
            // Start pulling the join counter's line now; the body runs while it travels.
            platform::prefetch_for_write(&worker_items_);
            const uint64_t started = detail::now_ns();
            Participation mine;
            participate(round, participant, mine);
            if (mine.done != 0) worker_items_.fetch_add(mine.done, std::memory_order_release);
            const uint64_t finished = detail::now_ns();
            if (finished - started > waiting::kPreemptNs && w.waiter.waiting.preempted_while_working(finished)) {
                lobby_.note_contention(w.waiter, finished);
            }
            if (mine.chunks) detail::bump(w.counters.chunks_by_workers, mine.chunks);
            if (mine.steals) detail::bump(w.counters.steals, mine.steals);
            if (mine.late) detail::bump(w.counters.late_arrivals);
            w.waiter.waiting.note_wake_outcome(mine.chunks != 0);
        }
        if (w.waiter.has_token) lobby_.release_token(w.waiter);
    }

    // ---- waiting between rounds (waiting.hpp's Lobby) ----------------------------------------

    /// Workers that may spin or sleep awaiting rounds at once (the spin tokens).
    [[nodiscard]] unsigned active_limit() const noexcept {
        if (options_.max_active_workers != 0) return options_.max_active_workers;
        const unsigned reserved = std::max(1u, options_.reserved_cpus);
        const unsigned cpus = options_.cpu_limit != 0 ? std::min(cpu_count_, options_.cpu_limit) : cpu_count_;
        return cpus > reserved ? cpus - reserved : 0;
    }

    // ---- thread management ---------------------------------------------------------------------

    /// Pins worker i (or lets it run anywhere allowed again); a no-op where the OS cannot pin.
    void apply_affinity(unsigned i) noexcept {
        if (options_.pin_threads) {
            platform::set_affinity(workers_[i].thread.native(), {cpus_[(i + 1) % cpus_.size()]});
        } else {
            platform::set_affinity(workers_[i].thread.native(), cpus_);
        }
    }

    void start_workers(unsigned num_threads) {
        epoch_.record();
        cpus_ = allowed_cpus();
        cpu_count_ = static_cast<unsigned>(cpus_.size());
        stop_.store(false, std::memory_order_relaxed);
        lobby_.set_tokens(active_limit());
        lobby_.set_contention_parking(options_.park_on_contention);
        num_threads_ = 0;
        started_.store(0, std::memory_order_relaxed);
        if (num_threads == 0) return;
        slots_ = std::make_unique<ClaimSlot[]>(num_threads + 1);
        workers_ = std::make_unique<WorkerState[]>(num_threads);
        const uint32_t gen = job_.gen.load(std::memory_order_relaxed);
        size_t extra_stack = 0;
#if defined(SHOAL_POOL_TSAN)
        // TSan keeps the parent's threads in its registry after fork(), and glibc would give the
        // child's new threads the cached stacks - hence the pthread_t values - of those dead
        // threads, which TSan rejects as duplicates. Stacks larger than any cached one get fresh
        // addresses.
        extra_stack = static_cast<size_t>(epoch_.value()) * 65536;
#endif
        try {
            for (unsigned i = 0; i < num_threads; ++i) {
                WorkerState& w = workers_[i];
                w.pool = this;
                w.waiter.counters = &w.counters;
                w.index = i;
                w.start_gen = gen;
                w.last_tag = round_ & detail::kTagMask;
                w.thread.start(&WorkerPool::worker_entry, &w, extra_stack);
                ++num_threads_;
                if (options_.pin_threads) apply_affinity(i);
            }
        } catch (...) {
            stop_workers();
            throw;
        }
        // Return only once every thread runs our code: thread start-up (in libc or a sanitizer
        // runtime) may hold allocator locks, and a fork() in that window would leave them locked in
        // the child. Afterwards the workers never allocate.
        while (started_.load(std::memory_order_acquire) != num_threads_) platform::yield_cpu();
    }

    void stop_workers() noexcept {
        if (num_threads_ != 0 && !epoch_.forked()) {
            stop_.store(true, std::memory_order_seq_cst);
            job_.gen.fetch_add(1, std::memory_order_seq_cst);
            platform::wake_all(&job_.gen);
            lobby_.end_parks();
            for (unsigned i = 0; i < num_threads_; ++i) workers_[i].thread.join();
        }
        // In a forked child the threads do not exist: Thread forgets their handles, never joins.
        num_threads_ = 0;
        workers_.reset();
        slots_.reset();
        lobby_.forget_requests();
        stop_.store(false, std::memory_order_relaxed);
    }

    /// In a forked child: forget the parent's threads and start the same number anew.
    void recover_after_fork() {
        if (!epoch_.forked()) return;
        const unsigned n = num_threads_;
        stop_workers();                                 // frees memory only; the threads it described do not exist here
        busy_.store(false, std::memory_order_relaxed);  // a run() of another parent thread never ends here
        worker_items_seen_ = worker_items_.load(std::memory_order_relaxed);
        error_claimed_.store(false, std::memory_order_relaxed);
        error_ = nullptr;
        start_workers(n);
    }

    /// The round descriptor: written by the caller once per round, read by every worker.
    struct alignas(detail::kCacheLine) Job {
        std::atomic<uint32_t> gen{0};  // wait word: bumped once per round and on stop
        std::atomic<Schedule> schedule{Schedule::Static};
        std::atomic<uint64_t> seq{0};  // seqlock: 2r while round r is published, odd while writing
        std::atomic<Body> body{nullptr};
        std::atomic<void*> context{nullptr};
        std::atomic<size_t> num_items{0};
        std::atomic<size_t> slices{0};
        std::atomic<size_t> chunk_items{0};
    };

    Job job_;
    alignas(detail::kCacheLine) std::atomic<uint64_t> worker_items_{0};
    ClaimSlot dynamic_;
    alignas(detail::kCacheLine) std::atomic<bool> error_claimed_{false};
    std::exception_ptr error_;
    alignas(detail::kCacheLine) std::atomic<bool> stop_{false};
    std::atomic<unsigned> started_{0};       // workers that reached worker_loop (start-up handshake)
    waiting::Lobby lobby_{job_.gen, stop_};  // how workers wait between rounds
    // Caller-only state (workers read slots_ and nothing else from here; it is set before they
    // start and reset after they are joined).
    alignas(detail::kCacheLine) std::atomic<bool> busy_{false};
    uint64_t round_ = 0;
    uint64_t worker_items_seen_ = 0;
    uint64_t last_round_ns_ = 0;
    unsigned num_threads_ = 0;
    unsigned cpu_count_ = 1;
    detail::ForkEpoch epoch_;
    PoolOptions options_;
    std::vector<int> cpus_;
    std::unique_ptr<ClaimSlot[]> slots_;
    std::unique_ptr<WorkerState[]> workers_;
    PoolCounters caller_;  // the caller's counters
};

}  // namespace shoal
