/* shoal/pool.hpp — the worker pool: persistent threads that run fork-join rounds for the caller.
 *
 * One round = run(num_items, body, context): the items [0, num_items) are split into chunks, the
 * calling thread and the workers claim chunks and call body(context, begin, end) on them, and
 * run() returns once every item is done. Header-only C++20, Linux (pthreads + futex), no Python.
 *
 * The moving parts (each concurrency rule is argued in full next to the code relying on it):
 *   - Publication: the caller writes the round descriptor under a sequence number (seqlock),
 *     then bumps the futex word `gen`. Workers spin on `gen`, then sleep on it (FUTEX_WAIT); the
 *     caller issues FUTEX_WAKE only when the sleep counter says somebody went to sleep.
 *   - Claiming: every chunk is claimed with one CAS on a claim word that carries the round tag
 *     and the range of unclaimed chunks. The first participant to touch a slice in a round
 *     initialises its word in the same CAS, so publishing does not write the workers' lines.
 *     The caller takes every chunk still unclaimed: nobody waits for a worker that has not started.
 *   - Join: workers add the items they ran to one cumulative counter (release) when they find
 *     nothing left to claim; the caller spins (pause, then sched_yield) until the counter shows
 *     every item it did not run itself (acquire). Only chunks in progress are waited for.
 *   - Adaptive waiting: spin tokens, a spin budget learnt from the gaps between rounds, and parking
 *     on evidence of CPU contention; see "Adaptive waiting" below. No tuning knobs are needed.
 *   - fork(): a pthread_atfork child handler bumps an epoch; a pool used in the child notices that
 *     its threads are gone, forgets their handles (never joins them) and starts new ones.
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

#if defined(__SANITIZE_THREAD__)
#define SHOAL_POOL_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SHOAL_POOL_TSAN 1
#endif
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
  unsigned max_active_workers = 0;  ///< workers that may spin/await rounds at once; 0 = auto (allowed CPUs - reserved_cpus)
  unsigned reserved_cpus = 1;       ///< for auto: CPUs kept for busy threads outside the workers (the caller at least)
};

/** Counters for tuning: totals since the workers were (re)started, plus a few gauges. */
struct PoolStats {
  uint64_t rounds = 0;             ///< run() calls with num_items > 0
  uint64_t chunks_by_caller = 0;   ///< chunks executed by the calling thread
  uint64_t chunks_by_workers = 0;  ///< chunks executed by worker threads
  uint64_t worker_sleeps = 0;      ///< times a worker's spin budget ran out and it slept on the futex
  uint64_t worker_wakeups = 0;     ///< futex sleeps that ended with a new round
  uint64_t spin_hits = 0;          ///< rounds that found a worker spinning (no syscall involved)
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

// Adaptive waiting constants (nanoseconds). See WorkerPool's "Adaptive waiting" comment.
inline constexpr uint64_t kMinSpinNs = 50'000;         ///< shortest spin budget
inline constexpr uint64_t kMaxSpinNs = 1'000'000;      ///< longest spin budget (1 ms)
inline constexpr uint64_t kInitialSpinNs = 200'000;    ///< budget of a fresh worker
inline constexpr uint64_t kPreemptNs = 200'000;        ///< clock jump while spinning = descheduled
inline constexpr uint64_t kParkBaseNs = 2'000'000;     ///< first contention backoff (doubles per level)
inline constexpr unsigned kMaxParkLevel = 8;           ///< backoff tops out at 2 ms << 7 = 256 ms
inline constexpr uint64_t kParkDecayNs = 100'000'000;  ///< contention-free active time per level decay
inline constexpr uint64_t kTokenRetryNs = 10'000'000;  ///< how often a worker without token looks again
inline constexpr uint64_t kUselessWakeParkNs = 20'000'000;  ///< park after wakes that found no work
inline constexpr unsigned kUselessWakeLimit = 4;       ///< ... this many in a row
inline constexpr unsigned kClockCheckEvery = 32;       ///< pause iterations between clock reads
inline constexpr uint64_t kJoinSpinNs = 20'000;        ///< the caller spins this long before sched_yield

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

/** CPU time consumed by the calling thread (a syscall: ~0.3 us; used off the hot path). */
[[nodiscard]] inline uint64_t thread_cpu_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "futex words must be plain 32-bit integers");

/** Blocks while *word == expected (or until the relative timeout, if any); may return spuriously. */
inline void futex_wait(std::atomic<uint32_t>* word, uint32_t expected,
                       const timespec* timeout) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, timeout,
          nullptr, 0);
}

inline void futex_wake_all(std::atomic<uint32_t>* word) noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr,
          nullptr, 0);
}

/** Adds to a counter that only one thread writes (others may read it): no RMW needed. */
inline void bump(std::atomic<uint64_t>& counter, uint64_t by = 1) noexcept {
  counter.store(counter.load(std::memory_order_relaxed) + by, std::memory_order_relaxed);
}

[[nodiscard]] constexpr uint64_t pack_claim(uint64_t tag, uint64_t front, uint64_t back) noexcept {
  return (tag << kTagShift) | (front << kIndexBits) | back;
}

/** True if `tag` belongs to a round before `current` (tags are round numbers mod 2^36). */
[[nodiscard]] constexpr bool tag_is_older(uint64_t tag, uint64_t current) noexcept {
  const uint64_t age = (current - tag) & kTagMask;
  return age != 0 && age < (kTagMask >> 1);
}

/**
 * Claims one chunk of `word` for the round tagged `tag`, whose word holds `count` chunks in that
 * round; from the front (owner) or the back (thief). Returns the chunk index, or -1 if none is
 * left or the word already belongs to a later round. A word still tagged with an older round is
 * initialised for this round by the same CAS (the first touch of a slice in a round). The caller
 * (`authoritative`) is never late, so for it any other tag is an older one.
 */
[[nodiscard]] inline int64_t claim(std::atomic<uint64_t>& word, uint64_t tag, uint64_t count,
                                   bool from_back, bool authoritative) noexcept {
  uint64_t v = word.load(std::memory_order_relaxed);
  for (;;) {
    uint64_t desired;
    uint64_t index;
    const uint64_t word_tag = v >> kTagShift;
    if (word_tag == tag) {
      const uint64_t front = (v >> kIndexBits) & kIndexMask, back = v & kIndexMask;
      if (front >= back) return -1;
      index = from_back ? back - 1 : front;
      desired = from_back ? v - 1 : v + (uint64_t{1} << kIndexBits);
    } else if (authoritative || tag_is_older(word_tag, tag)) {
      index = from_back ? count - 1 : 0;
      desired = from_back ? pack_claim(tag, 0, count - 1) : pack_claim(tag, 1, count);
    } else {
      return -1;
    }
    if (word.compare_exchange_weak(v, desired, std::memory_order_relaxed,
                                   std::memory_order_relaxed)) {
      return static_cast<int64_t>(index);
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
  // A function-local static of an inline function is one object per program (or shared object),
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
   * @throws the first exception thrown by a body (on any thread), after all other chunks finished
   *         (they all run); std::logic_error on a nested or concurrent call.
   */
  void run(size_t num_items, Body body, void* context) {
    if (num_items == 0) return;
    if (body == nullptr) throw std::invalid_argument("WorkerPool::run: body is null");
    recover_after_fork();
    BusyGuard guard(busy_);
    detail::bump(caller_.rounds);
    if (num_threads_ == 0 || num_items == 1) {
      detail::bump(caller_.chunks);
      body(context, 0, num_items);
      return;
    }
    // Long rounds also compare the caller's wall and CPU time (two syscalls, < 0.3% of such a
    // round): a caller descheduled inside run() means the CPUs are oversubscribed.
    const bool measure_cpu = last_round_ns_ > detail::kPreemptNs;
    const uint64_t wall_start = detail::now_ns();
    const uint64_t cpu_start = measure_cpu ? detail::thread_cpu_ns() : 0;
    const Round round = publish(num_items, body, context);
    size_t done = 0;
    uint64_t chunks = 0, steals = 0;
    bool late = false;
    participate(round, 0, done, chunks, steals, late);
    detail::bump(caller_.chunks, chunks);
    if (steals) detail::bump(caller_.steals, steals);
    join(num_items - done);
    const uint64_t wall_end = detail::now_ns();
    last_round_ns_ = wall_end - wall_start;
    if (measure_cpu) note_caller_cpu(wall_end, last_round_ns_, detail::thread_cpu_ns() - cpu_start);
    if (error_claimed_.load(std::memory_order_relaxed)) {
      // `error_` was written before its writer's release increment of `worker_items_`, which
      // join() acquired (or by this thread), so reading it here is ordered after the write.
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

  /** Sums the counters of the caller and the workers. Call it from the thread that owns the pool. */
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
  /** What a participant needs to know about one round (read once, validated by the seqlock). */
  struct Round {
    uint64_t tag = 0;
    Body body = nullptr;
    void* context = nullptr;
    size_t num_items = 0;
    size_t slices = 0;       // Static: number of slices
    size_t chunk_items = 0;  // Dynamic: items per chunk
    Schedule schedule = Schedule::Static;
  };

  /** Per-worker state; alignas keeps every worker's state off the other workers' lines. */
  struct alignas(detail::kCacheLine) WorkerState {
    WorkerPool* pool = nullptr;
    unsigned index = 0;      // worker i is participant i + 1
    uint32_t start_gen = 0;  // `gen` when the thread was created
    pthread_t handle{};
    // Adaptive-waiting state, touched only by the worker itself.
    uint64_t spin_budget_ns = detail::kInitialSpinNs;
    uint64_t gap_peak_ns = detail::kInitialSpinNs / 2;  // decaying maximum of the short gaps
    uint32_t long_gap_share = 0;  // EMA of "gap longer than any affordable spin", in 1/256
    uint64_t base_wall_ns = 0;    // (wall, thread CPU) when the worker last checked for
    uint64_t base_cpu_ns = 0;     // preemption while working
    uint64_t park_until_ns = 0;
    uint64_t level_since_ns = 0;  // when park_level last changed (for its decay)
    unsigned park_level = 0;
    unsigned useless_wakes = 0;
    bool has_token = false;
    bool woken = false;  // the last wait ended in a futex wake-up
    uint64_t last_tag = 0;
    // Counters written only by this worker, read by stats().
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
  // Rule (no lost wake-up). The caller does:  gen.store(g + 1, seq_cst);
  //                                           n = sleep_requests.load(seq_cst);
  //                                           if (n != requests_seen) FUTEX_WAKE(gen, all)
  // A worker about to sleep does:             sleep_requests.fetch_add(1, seq_cst);
  //                                           while (gen.load(seq_cst) == g) FUTEX_WAIT(gen, g)
  // All four are seq_cst, so they sit in one total order S. If the worker's load of `gen` misses
  // the new value, that load precedes the caller's store in S, hence so does the worker's
  // increment, hence the caller's later load of `sleep_requests` sees a count it has not served
  // and it calls FUTEX_WAKE. The kernel compares *gen with g atomically with queueing the waiter,
  // so a wake that lands before the worker is queued makes FUTEX_WAIT return at once (EAGAIN)
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
  // sees; the futex and the spinning only tell a worker *when* to look.
  //
  // Rule (late workers and claims). A worker may validate round r and then be descheduled for
  // arbitrarily long while the caller finishes r and publishes later rounds. It can still only
  // claim via claim(), which requires the word's tag to be r (chunks left) or older than r
  // (first touch in r). Round r ends only after the caller has claimed every remaining chunk of
  // every slice of r, which leaves each of those words tagged r or later and empty. So a claim
  // that succeeds is a genuine chunk of round r, and round r cannot have ended: the caller waits
  // for its items. Tags are round numbers mod 2^36; confusing them would need one worker to stall
  // for 2^35 rounds.

  Round publish(size_t num_items, Body body, void* context) {
    const uint64_t number = ++round_;
    const size_t participants = static_cast<size_t>(num_threads_) + 1;
    Round round;
    round.tag = number & detail::kTagMask;
    round.body = body;
    round.context = context;
    round.num_items = num_items;
    round.schedule = options_.schedule;
    if (round.schedule == Schedule::Static) {
      round.slices = std::min(num_items, participants);
    } else {
      size_t chunk = options_.dynamic_chunk;
      if (chunk == 0) {
        const size_t target = participants * detail::kDynamicChunksPerParticipant;
        chunk = (num_items + target - 1) / target;
      }
      round.chunk_items =
          std::max(chunk, (num_items + detail::kMaxChunksPerWord - 1) / detail::kMaxChunksPerWord);
    }
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
    const uint32_t requests = sleep_requests_.load(std::memory_order_seq_cst);
    if (requests != requests_served_) {
      requests_served_ = requests;
      detail::futex_wake_all(&job_.gen);
      detail::bump(caller_.futex_wakes);
    }
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

  /**
   * Claims and runs chunks of `round` as participant `p` until none is left.
   * Static: own slice from the front first, then the other slices from the back (stealing).
   */
  void participate(const Round& round, size_t p, size_t& done, uint64_t& chunks,
                   uint64_t& steals, bool& late) noexcept {
    if (round.schedule == Schedule::Dynamic) {
      const size_t count = (round.num_items + round.chunk_items - 1) / round.chunk_items;
      for (int64_t c; (c = detail::claim(dynamic_.word, round.tag, count, false, p == 0)) >= 0;) {
        const size_t begin = static_cast<size_t>(c) * round.chunk_items;
        const size_t end = std::min(round.num_items, begin + round.chunk_items);
        run_chunk(round, begin, end);
        done += end - begin;
        ++chunks;
      }
      return;
    }
    const size_t slices = round.slices;
    const size_t base = round.num_items / slices, extra = round.num_items % slices;
    const auto drain = [&](size_t j, bool from_back) {
      const size_t begin = j * base + std::min(j, extra);
      const size_t length = base + (j < extra ? 1 : 0);
      const size_t subs = std::min(length, detail::kSubChunksPerSlice);
      size_t taken = 0;
      for (int64_t sub; (sub = detail::claim(slots_[j].word, round.tag, subs, from_back, p == 0)) >= 0;) {
        const size_t s = static_cast<size_t>(sub);
        const size_t sub_begin = begin + length * s / subs;
        const size_t sub_end = begin + length * (s + 1) / subs;
        run_chunk(round, sub_begin, sub_end);
        done += sub_end - sub_begin;
        ++taken;
      }
      chunks += taken;
      return taken;
    };
    if (p < slices && drain(p, false) == 0 && p != 0) late = true;
    for (size_t k = 1; k <= slices; ++k) {
      // The caller walks the slices backwards (the highest workers start last); worker p goes
      // forward from its own slice, so thieves spread over different victims.
      const size_t j = p == 0 ? slices - k : (p + k) % slices;
      if (j != p) steals += drain(j, true);
    }
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
      if (yields == 0 && (i % detail::kClockCheckEvery != 0 ||
                          detail::now_ns() - start < detail::kJoinSpinNs)) {
        detail::cpu_relax();
      } else {
        // A chunk in progress whose thread lost its CPU: lend ours instead of spinning.
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
    rebase_cpu_clock(w);
    started_.fetch_add(1, std::memory_order_release);
    const size_t participant = static_cast<size_t>(w.index) + 1;
    for (;;) {
      seen = wait_for_round(w, seen);
      if (stop_.load(std::memory_order_acquire)) break;
      // Only token holders take chunks: a worker back from parking would otherwise grab a chunk
      // while every CPU is busy, get descheduled holding it, and make the caller wait a slice.
      if (!w.has_token) continue;
      Round round;
      if (!read_round(round) || round.tag == w.last_tag) continue;
      w.last_tag = round.tag;
      // Start pulling the join counter's line now; the body runs while it travels.
      __builtin_prefetch(&worker_items_, 1);
      const uint64_t started = detail::now_ns();
      size_t done = 0;
      uint64_t chunks = 0, steals = 0;
      bool late = false;
      participate(round, participant, done, chunks, steals, late);
      if (done != 0) worker_items_.fetch_add(done, std::memory_order_release);
      const uint64_t finished = detail::now_ns();
      if (finished - started > detail::kPreemptNs) check_preempted_while_working(w, finished);
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
  //   spinning - polls `gen` with pause; the caller needs no syscall; costs a CPU.
  //   sleeping - FUTEX_WAIT on `gen` after a sleep request; the caller wakes it at the next round.
  //   parked   - timed FUTEX_WAIT on `park_word_`; the caller neither wakes nor waits for it (it
  //              just runs the parked worker's chunks itself). For when awaiting rounds does not pay.
  // Spin tokens: at most active_limit() workers (default: allowed CPUs - 1; the caller is the other
  // one) may spin or sleep at once; a worker without a token parks and retries every 10 ms.
  // Without this cap, T workers + the caller on T CPUs time-share and the caller loses whole
  // scheduler slices.
  // Spin budget: whenever a round arrives the worker knows the gap it waited (from the end of its
  // chunks to the new round). It keeps a decaying peak of the gaps up to 1 ms (peak = max(gap,
  // 7/8 peak)) and the share of gaps beyond 1 ms. Budget = 2 * peak + 50 us, capped at 1 ms; if
  // most gaps exceed 1 ms no affordable spin bridges them and the budget drops to 50 us. A sleep
  // that ended in a round within 1 ms thus lengthens the next spin (spinning would have paid),
  // and long gaps shorten it (spinning would burn a CPU for nothing).
  // Contention: while spinning the worker reads the clock every 32 pauses; a jump of > 200 us
  // between two reads (or between the last read and the round's arrival) means it had been
  // descheduled: another thread wanted this CPU, so spinning takes time from the caller or a
  // competing process. A participation that took > 200 us of wall time also compares wall time
  // with the thread's CPU time (one syscall, only then): a worker descheduled in the middle of a
  // chunk made the caller wait for it. Either way the worker returns its token and parks for
  // 2 ms << level (level + 1 per detection, at most 256 ms); every 100 ms of contention-free
  // activity lowers the level. Four futex wakes in a row that found no chunk left (the caller
  // finished alone) park it for 20 ms, so the caller stops paying a syscall per round for nothing.

  [[nodiscard]] unsigned active_limit() const noexcept {
    if (options_.max_active_workers != 0) return options_.max_active_workers;
    const unsigned reserved = std::max(1u, options_.reserved_cpus);
    return cpu_count_ > reserved ? cpu_count_ - reserved : 0;
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

  void learn_gap(WorkerState& w, uint64_t gap_ns) noexcept {
    const bool long_gap = gap_ns > detail::kMaxSpinNs;
    w.long_gap_share = (7 * w.long_gap_share + (long_gap ? 256u : 0u)) / 8;
    if (!long_gap) w.gap_peak_ns = std::max(gap_ns, w.gap_peak_ns - w.gap_peak_ns / 8);
    uint64_t budget = 2 * w.gap_peak_ns + detail::kMinSpinNs;
    if (w.long_gap_share > 128) budget = detail::kMinSpinNs;
    w.spin_budget_ns = std::min(budget, detail::kMaxSpinNs);
    w.spin_budget_gauge.store(w.spin_budget_ns, std::memory_order_relaxed);
  }

  void note_contention(WorkerState& w, uint64_t now) noexcept {
    detail::bump(w.preemptions);
    w.park_level = std::min(w.park_level + 1, detail::kMaxParkLevel);
    w.level_since_ns = now;
    w.park_until_ns = now + (detail::kParkBaseNs << (w.park_level - 1));
  }

  /** Re-bases the wall/CPU comparison (after sleeping, when wall time legitimately runs alone). */
  static void rebase_cpu_clock(WorkerState& w) noexcept {
    w.base_wall_ns = detail::now_ns();
    w.base_cpu_ns = detail::thread_cpu_ns();
  }

  /**
   * After a long participation: if wall time since the last base exceeds this thread's CPU time
   * by more than kPreemptNs, the worker was descheduled while the caller may have been waiting
   * for its chunk - contention. Between bases the worker only spins or works, both on-CPU.
   */
  void check_preempted_while_working(WorkerState& w, uint64_t now) noexcept {
    const uint64_t cpu = detail::thread_cpu_ns();
    const uint64_t wall = now - w.base_wall_ns, used = cpu - w.base_cpu_ns;
    if (wall > used + detail::kPreemptNs) note_contention(w, now);
    w.base_wall_ns = now;
    w.base_cpu_ns = cpu;
  }

  /**
   * The caller's own contention evidence: it lost > kPreemptNs of a round to descheduling
   * (typically to its own woken workers plus a competing process). Workers then park like after
   * their own detection, with the caller's backoff level (2 ms << level, up to 256 ms).
   */
  void note_caller_cpu(uint64_t now, uint64_t wall, uint64_t cpu) noexcept {
    if (wall > cpu + detail::kPreemptNs) {
      caller_park_level_ = std::min(caller_park_level_ + 1, detail::kMaxParkLevel);
      caller_level_since_ns_ = now;
      park_all_until_ns_.store(now + (detail::kParkBaseNs << (caller_park_level_ - 1)),
                               std::memory_order_relaxed);
    } else if (caller_park_level_ != 0 && now - caller_level_since_ns_ > detail::kParkDecayNs) {
      --caller_park_level_;
      caller_level_since_ns_ = now;
    }
  }

  void note_clean(WorkerState& w, uint64_t now) noexcept {
    if (w.park_level != 0 && now - w.level_since_ns > detail::kParkDecayNs) {
      --w.park_level;
      w.level_since_ns = now;
    }
  }

  /** Parks until `until_ns` or until stop_workers() bumps `park_word_`. */
  void park(WorkerState& w, uint64_t until_ns) noexcept {
    if (w.has_token) release_token(w);
    detail::bump(w.parks);
    w.parked_gauge.store(true, std::memory_order_relaxed);
    // Same pattern as `gen`/`sleep_requests`: stop_workers() stores `stop_`, then bumps
    // `park_word_` (both seq_cst), so either we see `stop_` or FUTEX_WAIT sees a changed word.
    const uint32_t word = park_word_.load(std::memory_order_seq_cst);
    while (!stop_.load(std::memory_order_seq_cst)) {
      const uint64_t now = detail::now_ns();
      if (now >= until_ns) break;
      const uint64_t left = until_ns - now;
      const timespec timeout{static_cast<time_t>(left / 1'000'000'000u),
                             static_cast<long>(left % 1'000'000'000u)};
      detail::futex_wait(&park_word_, word, &timeout);
      if (park_word_.load(std::memory_order_seq_cst) != word) break;
    }
    w.parked_gauge.store(false, std::memory_order_relaxed);
    rebase_cpu_clock(w);
  }

  /** Waits for a `gen` value different from `seen` (a new round, or stop) and returns it. */
  uint32_t wait_for_round(WorkerState& w, uint32_t seen) noexcept {
    const uint64_t idle_since = detail::now_ns();
    bool parked = false;
    w.woken = false;
    for (;;) {
      uint32_t gen = job_.gen.load(std::memory_order_acquire);
      if (gen != seen) return gen;
      uint64_t now = detail::now_ns();
      const uint64_t park_all_until = park_all_until_ns_.load(std::memory_order_relaxed);
      if (now < park_all_until) w.park_until_ns = std::max(w.park_until_ns, park_all_until);
      if (now < w.park_until_ns) {
        park(w, w.park_until_ns);
        parked = true;
        continue;
      }
      if (!w.has_token && !try_take_token(w)) {
        park(w, now + detail::kTokenRetryNs);
        parked = true;
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
            if (!parked) learn_gap(w, now - idle_since);
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
      // Sleep until the caller wakes us (rule "no lost wake-up" above).
      detail::bump(w.sleeps);
      sleep_requests_.fetch_add(1, std::memory_order_seq_cst);
      while ((gen = job_.gen.load(std::memory_order_seq_cst)) == seen) {
        detail::futex_wait(&job_.gen, seen, nullptr);
      }
      detail::bump(w.wakeups);
      w.woken = true;
      rebase_cpu_clock(w);
      if (!parked) learn_gap(w, detail::now_ns() - idle_since);
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
    tokens_.store(static_cast<int>(active_limit()), std::memory_order_relaxed);
    num_threads_ = 0;
    started_.store(0, std::memory_order_relaxed);
    if (num_threads == 0) return;
    slots_ = std::make_unique<ClaimSlot[]>(num_threads + 1);
    workers_ = std::make_unique<WorkerState[]>(num_threads);
    // Workers must not take asynchronous signals (SIGINT belongs to Python's main thread): block
    // them while creating the threads, which inherit the mask. Fault signals stay deliverable.
    sigset_t all, previous;
    sigfillset(&all);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&all, sig);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    const uint32_t gen = job_.gen.load(std::memory_order_relaxed);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
#if defined(SHOAL_POOL_TSAN)
    // TSan keeps the parent's threads in its registry after fork(), and glibc would give the
    // child's new threads the cached stacks - hence the pthread_t values - of those dead threads,
    // which TSan rejects as duplicates. Stacks larger than any cached one get fresh addresses.
    if (epoch_ != 0) {
      size_t stack = 0;
      pthread_attr_getstacksize(&attr, &stack);
      pthread_attr_setstacksize(&attr, 2 * stack + epoch_ * 65536);
    }
#endif
    int error = 0;
    for (unsigned i = 0; i < num_threads; ++i) {
      WorkerState& w = workers_[i];
      w.pool = this;
      w.index = i;
      w.start_gen = gen;
      w.last_tag = round_ & detail::kTagMask;
      error = pthread_create(&w.handle, &attr, &WorkerPool::worker_entry, &w);
      if (error != 0) break;
      ++num_threads_;
      if (options_.pin_threads) apply_affinity(i);
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    pthread_attr_destroy(&attr);
    if (error != 0) {
      stop_workers();
      throw std::system_error(error, std::generic_category(), "WorkerPool: pthread_create");
    }
    // Return only once every thread runs our code: thread start-up (in libc or a sanitizer
    // runtime) may hold allocator locks, and a fork() in that window would leave them locked in
    // the child. Afterwards the workers never allocate.
    while (started_.load(std::memory_order_acquire) != num_threads_) sched_yield();
  }

  void stop_workers() noexcept {
    if (num_threads_ != 0 && epoch_ == detail::fork_epoch.load(std::memory_order_relaxed)) {
      stop_.store(true, std::memory_order_seq_cst);
      job_.gen.fetch_add(1, std::memory_order_seq_cst);
      detail::futex_wake_all(&job_.gen);
      park_word_.fetch_add(1, std::memory_order_seq_cst);
      detail::futex_wake_all(&park_word_);
      for (unsigned i = 0; i < num_threads_; ++i) pthread_join(workers_[i].handle, nullptr);
    }
    // In a forked child the threads do not exist: never join or signal the parent's handles.
    num_threads_ = 0;
    workers_.reset();
    slots_.reset();
    // Every worker is gone, so every request it made has been served or no longer matters.
    requests_served_ = sleep_requests_.load(std::memory_order_relaxed);
    stop_.store(false, std::memory_order_relaxed);
  }

  /** In a forked child: forget the parent's threads and start the same number anew. */
  void recover_after_fork() {
    if (epoch_ == detail::fork_epoch.load(std::memory_order_relaxed)) return;
    const unsigned n = num_threads_;
    num_threads_ = 0;
    workers_.reset();  // frees memory only; the threads it described do not exist here
    slots_.reset();
    busy_.store(false, std::memory_order_relaxed);  // a run() of another parent thread never ends here
    requests_served_ = sleep_requests_.load(std::memory_order_relaxed);
    worker_items_seen_ = worker_items_.load(std::memory_order_relaxed);
    error_claimed_.store(false, std::memory_order_relaxed);
    error_ = nullptr;
    start_workers(n);
  }

  /** The round descriptor: written by the caller once per round, read by every worker. */
  struct alignas(detail::kCacheLine) Job {
    std::atomic<uint32_t> gen{0};  // futex word: bumped once per round and on stop
    std::atomic<Schedule> schedule{Schedule::Static};
    std::atomic<uint64_t> seq{0};  // seqlock: 2r while round r is published, odd while writing
    std::atomic<Body> body{nullptr};
    std::atomic<void*> context{nullptr};
    std::atomic<size_t> num_items{0};
    std::atomic<size_t> slices{0};
    std::atomic<size_t> chunk_items{0};
  };

  /** Caller-side counters (written by the caller only). */
  struct alignas(detail::kCacheLine) CallerStats {
    std::atomic<uint64_t> rounds{0}, chunks{0}, steals{0}, futex_wakes{0}, yields{0}, wait_ns{0};
  };

  Job job_;
  alignas(detail::kCacheLine) std::atomic<uint32_t> sleep_requests_{0};
  alignas(detail::kCacheLine) std::atomic<uint64_t> worker_items_{0};
  ClaimSlot dynamic_;
  alignas(detail::kCacheLine) std::atomic<bool> error_claimed_{false};
  std::exception_ptr error_;
  alignas(detail::kCacheLine) std::atomic<uint32_t> park_word_{0};
  std::atomic<bool> stop_{false};
  std::atomic<int> tokens_{0};
  std::atomic<unsigned> started_{0};  // workers that reached worker_loop (start-up handshake)
  std::atomic<uint64_t> park_all_until_ns_{0};  // set by the caller on its contention evidence
  // Caller-only state (workers read slots_ and nothing else from here; it is set before they
  // start and reset after they are joined).
  alignas(detail::kCacheLine) std::atomic<bool> busy_{false};
  uint64_t round_ = 0;
  uint64_t worker_items_seen_ = 0;
  uint32_t requests_served_ = 0;
  uint64_t last_round_ns_ = 0;
  uint64_t caller_level_since_ns_ = 0;
  unsigned caller_park_level_ = 0;
  unsigned num_threads_ = 0;
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
