/* shoal/pool.hpp — the worker pool: persistent threads that run fork-join rounds for the caller.
 *
 * One round = run(num_items, body, context): the items [0, num_items) are split into chunks, the
 * calling thread and the workers claim chunks and call body(context, begin, end) on them, and
 * run() returns once every item is done. Header-only C++20, Linux (pthreads + futex), no Python.
 *
 * Overview of the moving parts (each rule is argued in full next to the code that relies on it):
 *   - Publication: the caller writes the job descriptor, then bumps `round` (release) and the
 *     futex word `gen` (seq_cst). Workers spin on `gen`, then sleep on it (FUTEX_WAIT); the
 *     caller issues FUTEX_WAKE only when the `sleepers` count says somebody sleeps.
 *   - Claiming: every chunk is claimed with one CAS on a 64-bit claim word that carries the round
 *     tag and the chunk range, so a worker that wakes up late can never claim a chunk of a later
 *     round by mistake, and nobody waits for a worker that has not started: the caller takes
 *     every chunk still unclaimed.
 *   - Join: `remaining` counts unfinished items; each participant subtracts what it completed
 *     (release) once it finds nothing left to claim; the caller spins (pause, then sched_yield)
 *     until it reads zero (acquire). Only chunks in progress are waited for.
 *   - Adaptive spinning: see "Adaptive waiting" below; no tuning knobs are needed.
 *   - fork(): a pthread_atfork child handler bumps an epoch; a pool used in the child notices that
 *     its threads are gone, forgets their handles and starts new ones.
 */
#ifndef SHOAL_POOL_HPP
#define SHOAL_POOL_HPP

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <set>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace shoal {

/** How the items of a round are split among participants. */
enum class Schedule : uint8_t {
  Static,   ///< one contiguous slice per participant (caller = 0); idle participants steal the rest
  Dynamic,  ///< many equal chunks handed out from one counter (envs of uneven cost)
};

/** Settings of a WorkerPool; change them between rounds with set_options(). */
struct PoolOptions {
  Schedule schedule = Schedule::Static;
  size_t dynamic_chunk = 0;         ///< items per chunk for Dynamic; 0 = auto (~8 chunks per participant)
  bool pin_threads = false;         ///< pin worker i to the (i+1)-th allowed CPU (mod count); caller untouched
  unsigned max_active_workers = 0;  ///< workers allowed to spin/await rounds at once; 0 = auto (allowed CPUs - 1)
};

/** Counters for tuning; totals since construction (gauges are marked). */
struct PoolStats {
  uint64_t rounds = 0;             ///< run() calls with num_items > 0
  uint64_t chunks_by_caller = 0;   ///< chunks executed by the calling thread
  uint64_t chunks_by_workers = 0;  ///< chunks executed by worker threads
  uint64_t worker_sleeps = 0;      ///< times a worker's spin budget ran out and it slept on the futex
  uint64_t worker_wakeups = 0;     ///< futex sleeps that ended with a new round
  uint64_t spin_hits = 0;          ///< rounds that found a worker spinning (no syscall needed)
  uint64_t futex_wakes = 0;        ///< FUTEX_WAKE syscalls issued by the caller
  uint64_t preemptions = 0;        ///< times a spinning worker noticed it had been descheduled
  uint64_t parks = 0;              ///< times a worker parked (stopped awaiting rounds for a while)
  uint64_t late_arrivals = 0;      ///< rounds in which a worker found its own slice already taken
  uint64_t steals = 0;             ///< static chunks taken from another participant's slice
  uint64_t caller_yields = 0;      ///< sched_yield calls by the caller while joining
  uint64_t caller_wait_ns = 0;     ///< time the caller spent waiting for chunks in progress
  uint64_t mean_spin_budget_ns = 0;  ///< gauge: mean current spin budget of the workers
  unsigned parked_workers = 0;       ///< gauge: workers parked right now
  unsigned active_limit = 0;         ///< gauge: workers allowed to be active (spin tokens)
};

namespace detail {

inline constexpr size_t kCacheLine = 64;

/** Claim words pack (round tag : 36 | front : 14 | back : 14); chunks [front, back) are unclaimed. */
inline constexpr unsigned kIndexBits = 14;
inline constexpr uint64_t kIndexMask = (uint64_t{1} << kIndexBits) - 1;
inline constexpr unsigned kTagShift = 2 * kIndexBits;
inline constexpr uint64_t kTagMask = (uint64_t{1} << (64 - kTagShift)) - 1;
inline constexpr uint64_t kMaxChunksPerWord = kIndexMask;

/** Sub-chunks per static slice: the granularity at which a missing participant's slice is shared. */
inline constexpr size_t kSubChunksPerSlice = 16;
/** Dynamic auto chunking: this many chunks per participant. */
inline constexpr size_t kDynamicChunksPerParticipant = 8;

// Adaptive waiting constants (nanoseconds). See WorkerPool::wait_for_round.
inline constexpr uint64_t kMinSpinNs = 20'000;        ///< shortest spin budget
inline constexpr uint64_t kMaxSpinNs = 1'000'000;     ///< longest spin budget (1 ms)
inline constexpr uint64_t kInitialSpinNs = 200'000;   ///< budget of a fresh worker
inline constexpr uint64_t kPreemptNs = 200'000;       ///< clock jump while spinning = we were descheduled
inline constexpr uint64_t kParkBaseNs = 2'000'000;    ///< first contention backoff (doubles per level)
inline constexpr unsigned kMaxParkLevel = 8;          ///< backoff tops out at 2 ms << 7 = 256 ms
inline constexpr uint64_t kParkDecayNs = 100'000'000; ///< contention-free active time that lowers the level
inline constexpr uint64_t kTokenRetryNs = 10'000'000; ///< how often a worker without a spin token looks again
inline constexpr uint64_t kUselessWakeParkNs = 20'000'000;  ///< park after repeated wakes that found no work
inline constexpr unsigned kUselessWakeLimit = 4;
inline constexpr unsigned kClockCheckEvery = 32;      ///< pause iterations between clock reads
inline constexpr uint64_t kJoinSpinNs = 20'000;       ///< caller spins this long before sched_yield

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

[[nodiscard]] inline uint64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "futex words must be plain 32-bit integers");

/** Blocks while *word == expected (or until the relative timeout, if any); spurious returns allowed. */
inline void futex_wait(std::atomic<uint32_t>* word, uint32_t expected,
                       const timespec* timeout) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, timeout,
          nullptr, 0);
}

inline void futex_wake(std::atomic<uint32_t>* word, int count) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, count, nullptr,
          nullptr, 0);
}

/** Adds to a counter that only one thread writes (others may read it): no RMW needed. */
inline void bump(std::atomic<uint64_t>& counter, uint64_t by = 1) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

[[nodiscard]] constexpr uint64_t pack_claim(uint64_t tag, uint64_t front, uint64_t back) noexcept {
  return (tag << kTagShift) | (front << kIndexBits) | back;
}

/** Claims the chunk at the front of `word` if its tag is `tag`; returns its index or -1. */
[[nodiscard]] inline int64_t claim_front(std::atomic<uint64_t>& word, uint64_t tag) noexcept {
  uint64_t v = word.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t front = (v >> kIndexBits) & kIndexMask;
    if ((v >> kTagShift) != tag || front >= (v & kIndexMask)) return -1;
    if (word.compare_exchange_weak(v, v + (uint64_t{1} << kIndexBits), std::memory_order_relaxed,
                                   std::memory_order_relaxed)) {
      return static_cast<int64_t>(front);
    }
  }
}

/** Claims the chunk at the back of `word` (stealing end); returns its index or -1. */
[[nodiscard]] inline int64_t claim_back(std::atomic<uint64_t>& word, uint64_t tag) noexcept {
  uint64_t v = word.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t back = v & kIndexMask;
    if ((v >> kTagShift) != tag || ((v >> kIndexBits) & kIndexMask) >= back) return -1;
    if (word.compare_exchange_weak(v, v - 1, std::memory_order_relaxed,
                                   std::memory_order_relaxed)) {
      return static_cast<int64_t>(back - 1);
    }
  }
}

// ---- fork detection ------------------------------------------------------------------------

/** Bumped in the child after every fork(); pools compare it with the epoch of their threads. */
inline std::atomic<uint64_t> fork_epoch{0};

extern "C" inline void shoal_pool_on_fork_child() noexcept {
  fork_epoch.fetch_add(1, std::memory_order_relaxed);
}

inline void register_fork_handler() noexcept {
  // A function-local static of an inline function is one object per program (or shared library),
  // so the handler is registered once however many translation units include this header.
  static const int registered = pthread_atfork(nullptr, nullptr, &shoal_pool_on_fork_child);
  (void)registered;
}

/** CPUs this process may run on, in increasing order. */
[[nodiscard]] inline std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
  if (cpus.empty()) {
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned cpu = 0; cpu < n; ++cpu) cpus.push_back(static_cast<int>(cpu));
  }
  return cpus;
}

[[nodiscard]] inline long read_sysfs_long(int cpu, const char* leaf) noexcept {
  char path[128];
  std::snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/topology/%s", cpu, leaf);
  FILE* file = std::fopen(path, "r");
  if (file == nullptr) return -1;
  long value = -1;
  if (std::fscanf(file, "%ld", &value) != 1) value = -1;
  std::fclose(file);
  return value;
}

}  // namespace detail

/** Number of distinct physical cores among the CPUs this process may use (best effort). */
[[nodiscard]] inline unsigned physical_core_count() {
  const std::vector<int> cpus = detail::allowed_cpus();
  std::set<std::pair<long, long>> cores;
  for (int cpu : cpus) {
    const long package = detail::read_sysfs_long(cpu, "physical_package_id");
    const long core = detail::read_sysfs_long(cpu, "core_id");
    if (package < 0 || core < 0) return static_cast<unsigned>(cpus.size());
    cores.emplace(package, core);
  }
  return cores.empty() ? 1u : static_cast<unsigned>(cores.size());
}

/** Persistent threads that run fork-join rounds together with the calling thread. */
class WorkerPool {
 public:
  using Body = void (*)(void* context, size_t begin, size_t end);

  /**
   * @brief Starts `num_threads` workers (besides the caller); 0 = the caller does everything.
   * @throws std::system_error if a thread cannot be created.
   */
  explicit WorkerPool(unsigned num_threads, PoolOptions options = {}) : options_(options) {
    detail::register_fork_handler();
    start_workers(num_threads);
  }

  /** Stops, wakes and joins the workers (in a forked child: forgets them, they do not exist). */
  ~WorkerPool() noexcept { stop_workers(); }

  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;
  WorkerPool(WorkerPool&&) = delete;
  WorkerPool& operator=(WorkerPool&&) = delete;

  /**
   * @brief Runs body over [0, num_items) split into chunks; returns when every item is done.
   *
   * The caller takes part and takes every chunk nobody has claimed, so it never waits for a worker
   * that has not started. Not reentrant: one run() at a time, never from inside a body.
   * @throws the first exception thrown by a body (on any thread), after all other chunks finished;
   *         std::logic_error on a nested or concurrent call.
   */
  void run(size_t num_items, Body body, void* context) {
    if (num_items == 0) return;
    if (body == nullptr) throw std::invalid_argument("WorkerPool::run: body is null");
    recover_after_fork();
    BusyGuard guard(busy_);
    detail::bump(caller_.rounds);
    const size_t workers = num_threads_;
    if (workers == 0 || num_items == 1) {
      detail::bump(caller_.chunks);
      body(context, 0, num_items);
      return;
    }
    publish(num_items, body, context, workers + 1);
    size_t done = 0;
    uint64_t chunks = 0, steals = 0;
    bool late = false;
    participate(0, round_ & detail::kTagMask, done, chunks, steals, late);
    detail::bump(caller_.chunks, chunks);
    detail::bump(caller_.steals, steals);
    join(done);
    if (error_claimed_.load(std::memory_order_relaxed)) {
      // `error_` was written before the writer's release decrement of `remaining_`, which join()
      // acquired, so reading it here is ordered after the write.
      std::exception_ptr error = std::move(error_);
      error_ = nullptr;
      std::rethrow_exception(error);
    }
  }

  /** Calls f(begin, end) over chunks of [0, num_items) via run(); no allocation. */
  template <class F>
  void parallel_for(size_t num_items, F& f) {
    run(
        num_items,
        [](void* context, size_t begin, size_t end) { (*static_cast<F*>(context))(begin, end); },
        const_cast<void*>(static_cast<const void*>(std::addressof(f))));
  }

  /** Changes the number of workers between rounds (joins all, starts the new count). */
  void resize(unsigned num_threads) {
    recover_after_fork();
    BusyGuard guard(busy_);
    if (num_threads == num_threads_) return;
    stop_workers();
    start_workers(num_threads);
  }

  /** Changes the options between rounds. */
  void set_options(const PoolOptions& options) {
    recover_after_fork();
    BusyGuard guard(busy_);
    const bool repin = options.pin_threads != options_.pin_threads;
    const int old_limit = static_cast<int>(active_limit());
    options_ = options;
    // tokens_ = limit - holders. Holders keep their token; the count may go negative for a while
    // and recovers as they park.
    tokens_.fetch_add(static_cast<int>(active_limit()) - old_limit, std::memory_order_relaxed);
    if (repin) {
      for (unsigned i = 0; i < num_threads_; ++i) apply_affinity(i);
    }
  }

  [[nodiscard]] unsigned num_threads() const noexcept { return num_threads_; }
  [[nodiscard]] const PoolOptions& options() const noexcept { return options_; }

  /** Sums the counters of the caller and the workers (relaxed reads; exact between rounds). */
  [[nodiscard]] PoolStats stats() const noexcept {
    PoolStats s;
    const auto get = [](const std::atomic<uint64_t>& counter) {
      return counter.load(std::memory_order_relaxed);
    };
    s.rounds = get(caller_.rounds);
    s.chunks_by_caller = get(caller_.chunks);
    s.steals = get(caller_.steals);
    s.futex_wakes = get(caller_.futex_wakes);
    s.caller_yields = get(caller_.yields);
    s.caller_wait_ns = get(caller_.wait_ns);
    uint64_t budget_sum = 0;
    for (unsigned i = 0; i < num_threads_; ++i) {
      const WorkerState& w = workers_[i];
      s.chunks_by_workers += get(w.chunks);
      s.worker_sleeps += get(w.sleeps);
      s.worker_wakeups += get(w.wakeups);
      s.spin_hits += get(w.spin_hits);
      s.preemptions += get(w.preemptions);
      s.parks += get(w.parks);
      s.late_arrivals += get(w.late_arrivals);
      s.steals += get(w.steals);
      budget_sum += get(w.spin_budget_gauge);
      s.parked_workers += w.parked_gauge.load(std::memory_order_relaxed) ? 1 : 0;
    }
    s.mean_spin_budget_ns = num_threads_ ? budget_sum / num_threads_ : 0;
    s.active_limit = std::min(active_limit(), num_threads_);
    return s;
  }

 private:
  /** Per-worker state; one cache line group per worker so no two workers share a line. */
  struct alignas(detail::kCacheLine) WorkerState {
    WorkerPool* pool = nullptr;
    unsigned index = 0;          // worker i is participant i + 1
    uint32_t start_gen = 0;      // `gen` when the thread was created
    pthread_t handle{};
    // Adaptive-waiting state, touched only by the worker itself.
    uint64_t spin_budget_ns = detail::kInitialSpinNs;
    uint64_t gap_ema_ns = detail::kInitialSpinNs / 2;
    uint64_t park_until_ns = 0;
    uint64_t level_since_ns = 0;  // when park_level last changed (for decay)
    unsigned park_level = 0;
    unsigned useless_wakes = 0;
    bool has_token = false;
    bool woken = false;           // the last wait ended in a futex wake-up
    uint64_t last_round = 0;
    // Counters written only by this worker.
    alignas(detail::kCacheLine) std::atomic<uint64_t> chunks{0};
    std::atomic<uint64_t> sleeps{0}, wakeups{0}, spin_hits{0}, preemptions{0}, parks{0};
    std::atomic<uint64_t> late_arrivals{0}, steals{0}, spin_budget_gauge{detail::kInitialSpinNs};
    std::atomic<bool> parked_gauge{false};
  };

  /** A claim word alone on its cache line (one per static slice; one for the dynamic counter). */
  struct alignas(detail::kCacheLine) ClaimSlot {
    std::atomic<uint64_t> word{0};
  };

  /** Marks the pool busy for the duration of run()/resize()/set_options(). */
  class BusyGuard {
   public:
    explicit BusyGuard(std::atomic<bool>& busy) : busy_(busy) {
      if (busy_.exchange(true, std::memory_order_acquire)) {
        throw std::logic_error("WorkerPool: run/resize/set_options called while a run is active");
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
  // Rule (no lost wake-up). The caller does:   gen.store(g + 1, seq_cst); s = sleepers.load(seq_cst);
  //                                            if (s) FUTEX_WAKE(gen)
  // A worker about to sleep does:              sleepers.fetch_add(1, seq_cst);
  //                                            while (gen.load(seq_cst) == g) FUTEX_WAIT(gen, g)
  // All four operations are seq_cst, so they sit in one total order S. If the worker's load of
  // `gen` misses the new value, that load precedes the caller's store in S, hence so does the
  // worker's increment, hence the caller's later load of `sleepers` sees it and the caller calls
  // FUTEX_WAKE. The kernel compares *gen with g atomically with queueing the waiter, so a wake
  // that lands before the worker is queued makes FUTEX_WAIT return at once (EAGAIN) rather than
  // be lost. When nobody sleeps the caller pays one plain load and no syscall.
  //
  // Rule (visibility). Everything the caller wrote before publishing (the descriptor, claim words,
  // `remaining`, and the user's own data) is ordered before its release store of `round`; a worker
  // acquires `round` before reading any of it. The futex and the spin only tell the worker *when*
  // to look; the happens-before edge that TSan (and the C++ model) sees is this release/acquire
  // pair, plus the release decrements of `remaining` acquired by the caller's join.
  //
  // Rule (late workers). A worker may read `round` = r and be descheduled for an arbitrarily long
  // time; meanwhile the caller may finish round r and publish r+1, r+2, ... rewriting the
  // descriptor. The descriptor fields are atomics (relaxed) so such reads are not data races, and
  // a value read from a later round is never *used*: every chunk is obtained by a CAS on a claim
  // word whose tag must equal r and whose [front, back) range was stored by the caller of round r
  // itself. A successful claim therefore holds a real chunk of round r, so round r cannot end
  // before this worker's release decrement of `remaining`; the caller writes the next descriptor
  // only after acquiring that decrement, so every read the worker made before (and while) running
  // the chunk happens-before those writes and returned round r's values. A late worker whose tag
  // is stale finds every claim word tagged differently and leaves without touching user data.
  // (Tags are 36 bits: confusion would need one worker to stall for exactly 2^36 rounds.)

  void publish(size_t num_items, Body body, void* context, size_t participants) {
    const uint64_t round = ++round_;
    const uint64_t tag = round & detail::kTagMask;
    const Schedule schedule = options_.schedule;
    if (schedule == Schedule::Static) {
      const size_t slices = std::min(num_items, participants);
      const size_t base = num_items / slices, extra = num_items % slices;
      for (size_t j = 0; j < slices; ++j) {
        const size_t length = base + (j < extra ? 1 : 0);
        const size_t subs = std::min(length, detail::kSubChunksPerSlice);
        slots_[j].word.store(detail::pack_claim(tag, 0, subs), std::memory_order_relaxed);
      }
      job_.slices.store(static_cast<uint32_t>(slices), std::memory_order_relaxed);
    } else {
      size_t chunk = options_.dynamic_chunk;
      if (chunk == 0) {
        const size_t target = participants * detail::kDynamicChunksPerParticipant;
        chunk = (num_items + target - 1) / target;
      }
      chunk = std::max(chunk, (num_items + detail::kMaxChunksPerWord - 1) / detail::kMaxChunksPerWord);
      const size_t chunks = (num_items + chunk - 1) / chunk;
      dynamic_.word.store(detail::pack_claim(tag, 0, chunks), std::memory_order_relaxed);
      job_.chunk_items.store(chunk, std::memory_order_relaxed);
    }
    job_.schedule.store(schedule, std::memory_order_relaxed);
    job_.body.store(body, std::memory_order_relaxed);
    job_.context.store(context, std::memory_order_relaxed);
    job_.num_items.store(num_items, std::memory_order_relaxed);
    remaining_.store(num_items, std::memory_order_relaxed);
    error_claimed_.store(false, std::memory_order_relaxed);
    job_.round.store(round, std::memory_order_release);
    const uint32_t gen = job_.gen.load(std::memory_order_relaxed) + 1;
    job_.gen.store(gen, std::memory_order_seq_cst);
    const uint32_t sleepers = sleepers_.load(std::memory_order_seq_cst);
    if (sleepers != 0) {
      // Wake no more sleepers than there are chunks for the workers.
      const size_t useful = schedule == Schedule::Static
                                ? std::min(num_items, participants) - 1
                                : participants - 1;
      detail::futex_wake(&job_.gen, static_cast<int>(std::min<size_t>(
                                        std::max<size_t>(useful, 1), sleepers)));
      detail::bump(caller_.futex_wakes);
    }
  }

  /** Runs one chunk; a throwing body is recorded (first one wins) and the round continues. */
  void run_chunk(Body body, void* context, size_t begin, size_t end) noexcept {
    try {
      body(context, begin, end);
    } catch (...) {
      if (!error_claimed_.exchange(true, std::memory_order_relaxed)) {
        // Only the thread that flipped the flag writes `error_`; the caller reads it after the
        // join (see run()). The flag itself needs no ordering: it is re-armed by the caller before
        // the release store of `round`.
        error_ = std::current_exception();
      }
    }
  }

  /**
   * Claims and runs chunks of the round tagged `tag` as participant `p` until none is left.
   * Static: own slice from the front first, then other slices from the back (stealing).
   */
  void participate(unsigned p, uint64_t tag, size_t& done, uint64_t& chunks, uint64_t& steals,
                   bool& late) noexcept {
    const Body body = job_.body.load(std::memory_order_relaxed);
    void* const context = job_.context.load(std::memory_order_relaxed);
    const size_t num_items = job_.num_items.load(std::memory_order_relaxed);
    if (job_.schedule.load(std::memory_order_relaxed) == Schedule::Dynamic) {
      const size_t chunk = job_.chunk_items.load(std::memory_order_relaxed);
      for (int64_t c; (c = detail::claim_front(dynamic_.word, tag)) >= 0;) {
        const size_t begin = static_cast<size_t>(c) * chunk;
        const size_t end = std::min(num_items, begin + chunk);
        run_chunk(body, context, begin, end);
        done += end - begin;
        ++chunks;
      }
      return;
    }
    // Slice geometry is recomputed from (num_items, slices); a late worker may compute garbage
    // here but can only use it after a successful claim, which proves the values are current.
    const size_t slices = std::min<size_t>(job_.slices.load(std::memory_order_relaxed),
                                           slot_count_);
    if (slices == 0) return;
    const size_t base = num_items / slices, extra = num_items % slices;
    const auto run_sub = [&](size_t j, size_t sub) {
      const size_t begin = j * base + std::min(j, extra);
      const size_t length = base + (j < extra ? 1 : 0);
      const size_t subs = std::min(length, detail::kSubChunksPerSlice);
      const size_t sub_begin = begin + length * sub / subs;
      const size_t sub_end = begin + length * (sub + 1) / subs;
      run_chunk(body, context, sub_begin, sub_end);
      done += sub_end - sub_begin;
      ++chunks;
    };
    if (p < slices) {
      int64_t sub = detail::claim_front(slots_[p].word, tag);
      if (sub < 0 && p != 0) late = true;
      for (; sub >= 0; sub = detail::claim_front(slots_[p].word, tag)) {
        run_sub(p, static_cast<size_t>(sub));
      }
    }
    for (size_t k = 1; k <= slices; ++k) {
      // The caller walks the slices backwards (the highest workers start last); worker p goes
      // forward from its own slice so thieves spread over different victims.
      const size_t j = p == 0 ? slices - k : (p + k) % slices;
      if (j == p) continue;
      for (int64_t sub; (sub = detail::claim_back(slots_[j].word, tag)) >= 0;) {
        run_sub(j, static_cast<size_t>(sub));
        ++steals;
      }
    }
  }

  // ---- join ----------------------------------------------------------------------------------
  //
  // Rule (join). `remaining` starts at num_items; every participant subtracts the items it ran
  // with one release RMW after it found nothing left to claim. Decrements form a release
  // sequence, so the caller's acquire load that reads `caller_done` (only its own items left)
  // happens-after every worker's chunk. Chunks nobody claimed were claimed by the caller itself
  // in participate(), so what remains is exactly the chunks in progress on other threads.

  void join(size_t caller_done) noexcept {
    if (remaining_.load(std::memory_order_acquire) == caller_done) return;
    const uint64_t start = detail::now_ns();
    uint64_t yields = 0;
    for (unsigned i = 1; remaining_.load(std::memory_order_acquire) != caller_done; ++i) {
      if (yields == 0 && (i % detail::kClockCheckEvery != 0 ||
                          detail::now_ns() - start < detail::kJoinSpinNs)) {
        detail::cpu_relax();
      } else {
        // A chunk in progress whose thread lost its CPU: give the CPU away instead of spinning.
        sched_yield();
        ++yields;
      }
    }
    detail::bump(caller_.wait_ns, detail::now_ns() - start);
    if (yields) detail::bump(caller_.yields, yields);
  }

  // ---- workers -------------------------------------------------------------------------------

  static void* worker_entry(void* arg) noexcept {
    auto* w = static_cast<WorkerState*>(arg);
    w->pool->worker_loop(*w);
    return nullptr;
  }

  void worker_loop(WorkerState& w) noexcept {
    uint32_t seen = w.start_gen;
    const unsigned participant = w.index + 1;
    for (;;) {
      seen = wait_for_round(w, seen);
      if (stop_.load(std::memory_order_acquire)) break;
      const uint64_t round = job_.round.load(std::memory_order_acquire);
      if (round == w.last_round) continue;
      w.last_round = round;
      size_t done = 0;
      uint64_t chunks = 0, steals = 0;
      bool late = false;
      participate(participant, round & detail::kTagMask, done, chunks, steals, late);
      if (done != 0) remaining_.fetch_sub(done, std::memory_order_release);
      if (chunks) detail::bump(w.chunks, chunks);
      if (steals) detail::bump(w.steals, steals);
      if (late) detail::bump(w.late_arrivals);
      if (w.woken) {
        // A futex wake that found nothing left: the caller paid a syscall for nothing.
        if (chunks != 0) {
          w.useless_wakes = 0;
        } else if (++w.useless_wakes >= detail::kUselessWakeLimit) {
          w.useless_wakes = 0;
          w.park_until_ns = detail::now_ns() + detail::kUselessWakeParkNs;
        }
      }
    }
    if (w.has_token) release_token(w);
  }

  // ---- adaptive waiting ----------------------------------------------------------------------
  //
  // Between rounds a worker is in one of three states:
  //   spinning  — polls `gen` with pause; the caller needs no syscall; costs a CPU.
  //   sleeping  — FUTEX_WAIT on `gen`, counted in `sleepers`; the caller wakes it each round.
  //   parked    — timed FUTEX_WAIT on `park_word_`, not counted: the caller neither waits for nor
  //               wakes it (it simply does the parked worker's chunks). Used when awaiting rounds
  //               does not pay.
  // Spin tokens: at most `active_limit()` workers (default: allowed CPUs - 1, the caller being
  // the other one) may spin or sleep at once; a worker without a token parks and retries every
  // 10 ms. Without this, T workers on T CPUs time-share with the caller and the caller loses
  // whole scheduler slices.
  // Spin budget: every time a round arrives the worker learns the gap it waited (idle → new round)
  // and keeps an EMA of it. Budget = 2 * EMA + 20 µs, capped at 1 ms; if the EMA exceeds 1 ms,
  // spinning cannot bridge the gap and the budget drops to 20 µs. Sleeping that ended in a
  // round within 1 ms therefore lengthens the next spin (spinning pays), and long gaps shorten it.
  // Contention: while spinning the worker reads the clock every 32 pauses; a jump of > 200 µs
  // between two reads (or between the last read and the round's arrival) means it was
  // descheduled, i.e. somebody else wanted this CPU: spinning now steals time from the caller.
  // The worker gives its token back and parks for 2 ms << level (level +1 per detection, up to
  // 256 ms); each 100 ms spent active without such evidence lowers the level by one. Wakes that
  // repeatedly find no chunk left (the caller finished alone) park the worker for 20 ms too, so the
  // caller stops paying a syscall per round for nothing.

  [[nodiscard]] unsigned active_limit() const noexcept {
    if (options_.max_active_workers != 0) return options_.max_active_workers;
    return cpu_count_ > 1 ? cpu_count_ - 1 : 0;
  }

  bool try_take_token(WorkerState& w) noexcept {
    int tokens = tokens_.load(std::memory_order_relaxed);
    while (tokens > 0) {
      if (tokens_.compare_exchange_weak(tokens, tokens - 1, std::memory_order_relaxed)) {
        w.has_token = true;
        return true;
      }
    }
    return false;
  }

  void release_token(WorkerState& w) noexcept {
    w.has_token = false;
    tokens_.fetch_add(1, std::memory_order_relaxed);
  }

  void set_budget(WorkerState& w, uint64_t gap_ns) noexcept {
    w.gap_ema_ns = (3 * w.gap_ema_ns + gap_ns) / 4;
    uint64_t budget = 2 * w.gap_ema_ns + detail::kMinSpinNs;
    if (w.gap_ema_ns > detail::kMaxSpinNs) budget = detail::kMinSpinNs;
    w.spin_budget_ns = std::min(budget, detail::kMaxSpinNs);
    w.spin_budget_gauge.store(w.spin_budget_ns, std::memory_order_relaxed);
  }

  void note_contention(WorkerState& w, uint64_t now) noexcept {
    detail::bump(w.preemptions);
    w.park_level = std::min(w.park_level + 1, detail::kMaxParkLevel);
    w.level_since_ns = now;
    w.park_until_ns = now + (detail::kParkBaseNs << (w.park_level - 1));
  }

  void note_clean(WorkerState& w, uint64_t now) noexcept {
    if (w.park_level != 0 && now - w.level_since_ns > detail::kParkDecayNs) {
      --w.park_level;
      w.level_since_ns = now;
    }
  }

  /** Parks until `until_ns` (or until stop/resize bumps `park_word_`). */
  void park(WorkerState& w, uint64_t until_ns) noexcept {
    if (w.has_token) release_token(w);
    detail::bump(w.parks);
    w.parked_gauge.store(true, std::memory_order_relaxed);
    // Same Dekker pattern as `gen`/`sleepers`: stop_workers() stores `stop_` then bumps
    // `park_word_` (both seq_cst), so either we see `stop_` or the futex sees a changed word.
    const uint32_t word = park_word_.load(std::memory_order_seq_cst);
    while (!stop_.load(std::memory_order_seq_cst)) {
      const uint64_t now = detail::now_ns();
      if (now >= until_ns) break;
      const uint64_t left = until_ns - now;
      timespec timeout{static_cast<time_t>(left / 1'000'000'000u),
                       static_cast<long>(left % 1'000'000'000u)};
      detail::futex_wait(&park_word_, word, &timeout);
      if (park_word_.load(std::memory_order_seq_cst) != word) break;
    }
    w.parked_gauge.store(false, std::memory_order_relaxed);
  }

  /** Returns a `gen` value different from `seen` (a new round, or stop). */
  uint32_t wait_for_round(WorkerState& w, uint32_t seen) noexcept {
    const uint64_t idle_since = detail::now_ns();
    bool slept_or_parked = false;
    w.woken = false;
    for (;;) {
      uint32_t gen = job_.gen.load(std::memory_order_acquire);
      if (gen != seen) return gen;
      uint64_t now = detail::now_ns();
      if (now < w.park_until_ns) {
        park(w, w.park_until_ns);
        slept_or_parked = true;
        continue;
      }
      if (!w.has_token && !try_take_token(w)) {
        park(w, now + detail::kTokenRetryNs);
        slept_or_parked = true;
        continue;
      }
      // Spin.
      const uint64_t start = now;
      uint64_t last = now;
      bool preempted = false;
      for (unsigned i = 1;; ++i) {
        detail::cpu_relax();
        gen = job_.gen.load(std::memory_order_acquire);
        if (gen != seen) {
          now = detail::now_ns();
          if (now - last > detail::kPreemptNs) {
            note_contention(w, now);
          } else {
            detail::bump(w.spin_hits);
            note_clean(w, now);
            if (!slept_or_parked) set_budget(w, now - idle_since);
          }
          return gen;
        }
        if (i % detail::kClockCheckEvery == 0) {
          now = detail::now_ns();
          if (now - last > detail::kPreemptNs) {
            preempted = true;
            break;
          }
          last = now;
          if (now - start >= w.spin_budget_ns) break;
        }
      }
      if (preempted) {
        note_contention(w, now);
        continue;  // parks
      }
      // Sleep until the caller wakes us (see the no-lost-wake-up rule above).
      detail::bump(w.sleeps);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      while ((gen = job_.gen.load(std::memory_order_seq_cst)) == seen) {
        detail::futex_wait(&job_.gen, seen, nullptr);
      }
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      detail::bump(w.wakeups);
      w.woken = true;
      if (!slept_or_parked) set_budget(w, detail::now_ns() - idle_since);
      return gen;
    }
  }

  // ---- thread management ---------------------------------------------------------------------

  void apply_affinity(unsigned i) noexcept {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (options_.pin_threads) {
      CPU_SET(cpus_[(i + 1) % cpus_.size()], &set);
    } else {
      for (int cpu : cpus_) CPU_SET(cpu, &set);
    }
    pthread_setaffinity_np(workers_[i].handle, sizeof(set), &set);
  }

  void start_workers(unsigned num_threads) {
    epoch_ = detail::fork_epoch.load(std::memory_order_relaxed);
    cpus_ = detail::allowed_cpus();
    cpu_count_ = static_cast<unsigned>(cpus_.size());
    stop_.store(false, std::memory_order_relaxed);
    sleepers_.store(0, std::memory_order_relaxed);
    tokens_.store(static_cast<int>(active_limit()), std::memory_order_relaxed);
    num_threads_ = 0;
    if (num_threads == 0) {
      workers_.reset();
      slots_.reset();
      slot_count_ = 0;
      return;
    }
    slots_ = std::make_unique<ClaimSlot[]>(num_threads + 1);
    slot_count_ = num_threads + 1;  // written before the threads start, constant while they run
    workers_ = std::make_unique<WorkerState[]>(num_threads);
    // Workers must not take process signals (e.g. SIGINT belongs to Python's main thread):
    // block everything while creating them, they inherit the mask.
    sigset_t all, previous;
    sigfillset(&all);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&all, sig);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    const uint32_t gen = job_.gen.load(std::memory_order_relaxed);
    int error = 0;
    for (unsigned i = 0; i < num_threads; ++i) {
      WorkerState& w = workers_[i];
      w.pool = this;
      w.index = i;
      w.start_gen = gen;
      w.last_round = round_;
      error = pthread_create(&w.handle, nullptr, &WorkerPool::worker_entry, &w);
      if (error != 0) break;
      ++num_threads_;
      if (options_.pin_threads) apply_affinity(i);
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    if (error != 0) {
      stop_workers();
      throw std::system_error(error, std::generic_category(), "WorkerPool: pthread_create");
    }
  }

  void stop_workers() noexcept {
    if (num_threads_ != 0 && epoch_ == detail::fork_epoch.load(std::memory_order_relaxed)) {
      stop_.store(true, std::memory_order_seq_cst);
      job_.gen.fetch_add(1, std::memory_order_seq_cst);
      detail::futex_wake(&job_.gen, INT_MAX);
      park_word_.fetch_add(1, std::memory_order_seq_cst);
      detail::futex_wake(&park_word_, INT_MAX);
      for (unsigned i = 0; i < num_threads_; ++i) pthread_join(workers_[i].handle, nullptr);
    }
    // In a forked child the threads do not exist: never join or signal the parent's handles.
    num_threads_ = 0;
    workers_.reset();
    slots_.reset();
    slot_count_ = 0;
    stop_.store(false, std::memory_order_relaxed);
  }

  /** In a forked child: forget the parent's threads and start the same number anew. */
  void recover_after_fork() {
    if (epoch_ == detail::fork_epoch.load(std::memory_order_relaxed)) return;
    const unsigned n = num_threads_;
    num_threads_ = 0;
    workers_.reset();  // WorkerState is trivially destructible in substance; no thread touches it
    slots_.reset();
    slot_count_ = 0;
    busy_.store(false, std::memory_order_relaxed);
    remaining_.store(0, std::memory_order_relaxed);
    error_ = nullptr;
    start_workers(n);
  }

  /** The job descriptor; written by the caller once per round, read by every worker. */
  struct alignas(detail::kCacheLine) Job {
    std::atomic<uint32_t> gen{0};  // futex word: bumped once per round and on stop
    std::atomic<Schedule> schedule{Schedule::Static};
    std::atomic<uint32_t> slices{0};
    std::atomic<uint64_t> round{0};
    std::atomic<Body> body{nullptr};
    std::atomic<void*> context{nullptr};
    std::atomic<size_t> num_items{0};
    std::atomic<size_t> chunk_items{0};
  };

  /** Caller-side counters (written by the caller only). */
  struct alignas(detail::kCacheLine) CallerStats {
    std::atomic<uint64_t> rounds{0}, chunks{0}, steals{0}, futex_wakes{0}, yields{0}, wait_ns{0};
  };

  Job job_;
  alignas(detail::kCacheLine) std::atomic<uint32_t> sleepers_{0};
  alignas(detail::kCacheLine) std::atomic<size_t> remaining_{0};
  std::atomic<bool> error_claimed_{false};
  std::exception_ptr error_;
  ClaimSlot dynamic_;
  alignas(detail::kCacheLine) std::atomic<uint32_t> park_word_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> tokens_{0};
  // Caller-only state below (plus read-mostly fields the workers read).
  alignas(detail::kCacheLine) std::atomic<bool> busy_{false};
  uint64_t round_ = 0;
  unsigned num_threads_ = 0;
  size_t slot_count_ = 0;
  unsigned cpu_count_ = 1;
  uint64_t epoch_ = 0;
  PoolOptions options_;
  std::vector<int> cpus_;
  std::unique_ptr<ClaimSlot[]> slots_;
  std::unique_ptr<WorkerState[]> workers_;
  CallerStats caller_;
};

}  // namespace shoal

#endif  // SHOAL_POOL_HPP
