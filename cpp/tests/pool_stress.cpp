// pool_stress — self-checking stress test of shoal::WorkerPool (cpp/include/shoal/pool.hpp).
//
// Exit code 0 = every check passed; otherwise the failed checks are printed. Each check_*
// function exercises one contract: every item runs exactly once per round, under both schedules,
// with thread counts changed between rounds, across create/destroy cycles, with exceptions thrown
// from bodies, and after fork(). Also run under -fsanitize=address,undefined and -fsanitize=thread.
//
// Build by hand: g++ -std=c++20 -O2 -pthread -Icpp/include cpp/tests/pool_stress.cpp
// Optional argument: a scale factor for the number of rounds (default 1.0).

#if !defined(_WIN32)
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "shoal/pool.hpp"
#include "test_support.hpp"

namespace {

// ---- reporting -------------------------------------------------------------------------------

int g_failures = 0;
int g_checks = 0;
double g_scale = 1.0;
uint64_t g_worker_chunks = 0;  // chunks run by workers in the checks so far (shows real concurrency)
uint64_t g_caller_chunks = 0;

void tally(const shoal::WorkerPool& pool) {
    const shoal::PoolStats stats = pool.stats();
    g_worker_chunks += stats.chunks_by_workers;
    g_caller_chunks += stats.chunks_by_caller;
}

void check(bool condition, const std::string& what) {
    ++g_checks;
    if (!condition) {
        ++g_failures;
        std::printf("FAILED: %s\n", what.c_str());
        std::fflush(stdout);
    }
}

// A deadlock must fail the test, not hang it: every check runs under an alarm (Windows: a watchdog
// thread, as it has no alarm()).
constexpr unsigned kWatchdogSeconds = 150;
const char* volatile g_current_check = "";

#if defined(_WIN32)
std::atomic<int64_t> g_watchdog_deadline{0};  // steady_clock seconds; 0 = disarmed

int64_t steady_seconds() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

void alarm(unsigned seconds) {
    g_watchdog_deadline.store(seconds ? steady_seconds() + seconds : 0);
}

void start_watchdog() {
    std::thread([] {
        for (;;) {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            const int64_t deadline = g_watchdog_deadline.load();
            if (deadline != 0 && steady_seconds() > deadline) {
                std::printf("FAILED: watchdog: no progress, stuck in %s\n", g_current_check);
                std::fflush(stdout);
                std::_Exit(2);
            }
        }
    }).detach();
}
#else
void on_watchdog(int) {
    static const char prefix[] = "FAILED: watchdog: no progress, stuck in ";
    [[maybe_unused]] ssize_t written = write(STDOUT_FILENO, prefix, sizeof(prefix) - 1);
    const char* name = g_current_check;
    size_t length = 0;
    while (name[length] != '\0') ++length;
    written = write(STDOUT_FILENO, name, length);
    written = write(STDOUT_FILENO, "\n", 1);
    _exit(2);
}

void start_watchdog() {
    signal(SIGALRM, &on_watchdog);
}
#endif

size_t scaled(size_t n) {
    return std::max<size_t>(1, static_cast<size_t>(n * g_scale));
}

/** Per-item counters for one round; verifies that [0, n) ran exactly once and nothing beyond. */
class ItemLedger {
public:
    explicit ItemLedger(size_t capacity) : counts_(capacity + kGuard) {}

    /** Busy work per item, so that rounds last long enough for workers to join in. */
    void set_work(unsigned iterations) { work_ = iterations; }

    void reset(size_t n) {
        n_ = n;
        bad_range_.store(false, std::memory_order_relaxed);
        for (size_t i = 0; i < std::min(n + kGuard, counts_.size()); ++i) {
            counts_[i].store(0, std::memory_order_relaxed);
        }
    }

    void mark(size_t begin, size_t end) {
        if (begin >= end || end > n_) bad_range_.store(true, std::memory_order_relaxed);
        for (size_t i = begin; i < end && i < counts_.size(); ++i) {
            counts_[i].fetch_add(1, std::memory_order_relaxed);
            uint64_t x = i;
            for (unsigned k = 0; k < work_; ++k) {
                x = x * 6364136223846793005ull + 1;
                asm volatile("" : "+r"(x));
            }
        }
    }

    /** Empty string if the round was correct, else a description of the first problem. */
    [[nodiscard]] std::string verify() const {
        if (bad_range_.load(std::memory_order_relaxed)) return "a chunk was empty or out of range";
        for (size_t i = 0; i < std::min(n_ + kGuard, counts_.size()); ++i) {
            const uint32_t expected = i < n_ ? 1 : 0;
            const uint32_t got = counts_[i].load(std::memory_order_relaxed);
            if (got != expected) {
                return "item " + std::to_string(i) + " of " + std::to_string(n_) + " ran " + std::to_string(got) +
                       " times";
            }
        }
        return {};
    }

private:
    static constexpr size_t kGuard = 16;
    std::vector<std::atomic<uint32_t>> counts_;
    size_t n_ = 0;
    unsigned work_ = 0;
    std::atomic<bool> bad_range_{false};
};

void ledger_body(void* context, size_t begin, size_t end) {
    static_cast<ItemLedger*>(context)->mark(begin, end);
}

/** Runs one round of n items through `pool` and checks it; returns false on failure. */
bool checked_round(shoal::WorkerPool& pool, ItemLedger& ledger, size_t n, const std::string& tag) {
    ledger.reset(n);
    pool.run(n, &ledger_body, &ledger);
    const std::string problem = ledger.verify();
    check(problem.empty(), tag + " n=" + std::to_string(n) + ": " + problem);
    return problem.empty();
}

/** Item counts that stress the splitting: tiny, around the participant count, and large. */
size_t pick_items(std::mt19937& rng, unsigned threads) {
    switch (rng() % 6) {
        case 0: return rng() % 4;                        // 0..3
        case 1: return threads + rng() % 3;              // around the participant count
        case 2: return (threads + 1) * (1 + rng() % 4);  // multiples
        case 3: return rng() % 64;
        case 4: return rng() % 1024;
        default: return 1000 + rng() % 4000;
    }
}

// ---- checks ----------------------------------------------------------------------------------

/** Thousands of rounds on a fixed pool, for each thread count, both schedules. */
void check_exactly_once() {
    std::mt19937 rng(1);
    ItemLedger ledger(5000);
    for (unsigned threads : {0u, 1u, 2u, 3u, 5u}) {
        for (shoal::Schedule schedule : {shoal::Schedule::Static, shoal::Schedule::Dynamic}) {
            shoal::PoolOptions options;
            options.schedule = schedule;
            options.max_active_workers = 64;  // every worker awaits rounds: maximum interleaving
            shoal::WorkerPool pool(threads, options);
            const std::string tag = "exactly_once T=" + std::to_string(threads) +
                                    (schedule == shoal::Schedule::Static ? " static" : " dynamic");
            bool ok = true;
            for (size_t r = 0; r < scaled(3000) && ok; ++r) {
                ledger.set_work(r % 3 == 0 ? 0 : (r % 3 == 1 ? 20 : 200));
                ok = checked_round(pool, ledger, pick_items(rng, threads), tag);
            }
            const shoal::PoolStats stats = pool.stats();
            check(threads != 0 || stats.chunks_by_workers == 0, tag + ": workers ran chunks at T=0");
            tally(pool);
        }
    }
}

/** Many rounds of tiny, trivially short jobs: late workers meet later rounds all the time. */
void check_late_workers() {
    std::mt19937 rng(2);
    ItemLedger ledger(64);
    shoal::PoolOptions options;
    options.max_active_workers = 64;
    shoal::WorkerPool pool(4, options);
    bool ok = true;
    for (size_t r = 0; r < scaled(40000) && ok; ++r) {
        options.schedule = (r / 1000) % 2 ? shoal::Schedule::Dynamic : shoal::Schedule::Static;
        if (r % 1000 == 0) pool.set_options(options);
        ok = checked_round(pool, ledger, 2 + rng() % 9, "late_workers");
    }
    tally(pool);
}

/** Thread count changed between rounds (0..8), with default options and all-active options. */
void check_resize() {
    std::mt19937 rng(3);
    ItemLedger ledger(5000);
    for (unsigned active : {0u, 64u}) {
        shoal::PoolOptions options;
        options.max_active_workers = active;
        shoal::WorkerPool pool(0, options);
        bool ok = true;
        for (size_t step = 0; step < scaled(250) && ok; ++step) {
            const unsigned threads = rng() % 9;
            pool.resize(threads);
            check(pool.num_threads() == threads, "resize: num_threads() != requested");
            if (step % 7 == 0) {
                options.schedule = rng() % 2 ? shoal::Schedule::Dynamic : shoal::Schedule::Static;
                options.dynamic_chunk = rng() % 3 == 0 ? 1 + rng() % 50 : 0;
                options.pin_threads = rng() % 4 == 0;
                pool.set_options(options);
            }
            for (int r = 0; r < 20 && ok; ++r) {
                ok = checked_round(pool, ledger, pick_items(rng, threads), "resize T=" + std::to_string(threads));
            }
            g_worker_chunks += pool.stats().chunks_by_workers;  // worker counters restart on resize
        }
    }
}

/** Hundreds of pools created and destroyed, some without ever running a round. */
void check_create_destroy() {
    std::mt19937 rng(4);
    ItemLedger ledger(256);
    for (size_t cycle = 0; cycle < scaled(400); ++cycle) {
        shoal::PoolOptions options;
        options.schedule = cycle % 2 ? shoal::Schedule::Dynamic : shoal::Schedule::Static;
        options.max_active_workers = cycle % 3 == 0 ? 64 : 0;
        shoal::WorkerPool pool(rng() % 9, options);
        const int rounds = static_cast<int>(rng() % 4);
        for (int r = 0; r < rounds; ++r) {
            if (!checked_round(pool, ledger, rng() % 256, "create_destroy")) return;
        }
    }
}

/** Every dynamic chunk size, from 1 item to more than the whole job. */
void check_dynamic_chunks() {
    std::mt19937 rng(5);
    ItemLedger ledger(5000);
    shoal::PoolOptions options;
    options.schedule = shoal::Schedule::Dynamic;
    options.max_active_workers = 64;
    shoal::WorkerPool pool(3, options);
    for (size_t chunk : {size_t{0}, size_t{1}, size_t{2}, size_t{7}, size_t{100}, size_t{10000}}) {
        options.dynamic_chunk = chunk;
        pool.set_options(options);
        for (size_t r = 0; r < scaled(200); ++r) {
            if (!checked_round(pool, ledger, pick_items(rng, 3), "dynamic chunk=" + std::to_string(chunk))) {
                return;
            }
        }
    }
    // More chunks than a claim word can count: the pool must widen the chunks.
    std::vector<std::atomic<uint8_t>> big(100000);
    const auto body = [&big](size_t begin, size_t end) {
        for (size_t i = begin; i < end; ++i) big[i].fetch_add(1, std::memory_order_relaxed);
    };
    options.dynamic_chunk = 1;
    pool.set_options(options);
    pool.parallel_for(big.size(), body);
    bool all_once = true;
    for (auto& b : big) all_once = all_once && b.load() == 1;
    check(all_once, "dynamic chunk=1 over 100000 items: not every item ran exactly once");
}

struct TestError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/** A throwing body: the first exception reaches the caller, the rest of the round still runs. */
void check_exceptions() {
    std::mt19937 rng(6);
    for (unsigned threads : {0u, 1u, 2u, 4u}) {
        for (shoal::Schedule schedule : {shoal::Schedule::Static, shoal::Schedule::Dynamic}) {
            shoal::PoolOptions options;
            options.schedule = schedule;
            options.max_active_workers = 64;
            shoal::WorkerPool pool(threads, options);
            ItemLedger ledger(512);
            const std::string tag = "exceptions T=" + std::to_string(threads);
            for (size_t r = 0; r < scaled(300); ++r) {
                const size_t n = 1 + rng() % 300;
                const size_t bad = rng() % n;
                const bool several = rng() % 2 == 0;
                struct Context {
                    ItemLedger* ledger;
                    size_t bad;
                    bool several;
                } context{&ledger, bad, several};
                const auto body = [](void* raw, size_t begin, size_t end) {
                    auto* c = static_cast<Context*>(raw);
                    c->ledger->mark(begin, end);
                    if (c->bad >= begin && c->bad < end) throw TestError("item " + std::to_string(c->bad));
                    if (c->several && begin % 3 == 0) throw TestError("another");
                };
                ledger.reset(n);
                bool caught = false;
                std::string message;
                try {
                    pool.run(n, body, &context);
                } catch (const TestError& e) {
                    caught = true;
                    message = e.what();
                }
                check(caught, tag + ": exception not rethrown on the caller");
                check(several || message == "item " + std::to_string(bad),
                      tag + ": wrong exception came back: " + message);
                // With the pool's policy (all chunks run) every item ran exactly once despite the throw.
                const std::string problem = ledger.verify();
                check(problem.empty(), tag + " (throwing round): " + problem);
                // The pool keeps working.
                if (!checked_round(pool, ledger, 1 + rng() % 300, tag + " after throw")) return;
            }
        }
    }
}

/** run() from inside a body is refused with std::logic_error, which reaches the outer caller. */
void check_reentrancy() {
    shoal::WorkerPool pool(2);
    bool caught = false;
    const auto body = [&pool](size_t, size_t) {
        const auto inner = [](size_t, size_t) {};
        pool.parallel_for(4, inner);
    };
    try {
        pool.parallel_for(8, body);
    } catch (const std::logic_error&) {
        caught = true;
    }
    check(caught, "reentrancy: nested run() was not refused");
    ItemLedger ledger(64);
    checked_round(pool, ledger, 50, "after reentrancy");
}

/** parallel_for with a capturing lambda (and a const one) sums correctly. */
void check_parallel_for() {
    shoal::WorkerPool pool(3);
    std::vector<uint64_t> values(10007);
    for (size_t i = 0; i < values.size(); ++i) values[i] = i;
    std::atomic<uint64_t> sum{0};
    const auto add = [&](size_t begin, size_t end) {
        uint64_t local = 0;
        for (size_t i = begin; i < end; ++i) local += values[i];
        sum.fetch_add(local, std::memory_order_relaxed);
    };
    for (int r = 0; r < 100; ++r) pool.parallel_for(values.size(), add);
    const uint64_t n = values.size();
    check(sum.load() == 100 * (n * (n - 1) / 2), "parallel_for: wrong sum");
}

/** Workers really take part when rounds are long enough (the pool is not secretly serial). */
void check_workers_help() {
    shoal::PoolOptions options;
    options.max_active_workers = 64;
    shoal::WorkerPool pool(2, options);
    std::atomic<uint64_t> sink{0};
    const auto body = [&sink](size_t begin, size_t end) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(20 * (end - begin));
        uint64_t spins = 0;
        while (std::chrono::steady_clock::now() < until) ++spins;
        sink.fetch_add(spins, std::memory_order_relaxed);
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (pool.stats().chunks_by_workers == 0 && std::chrono::steady_clock::now() < deadline) {
        pool.parallel_for(64, body);
    }
    const shoal::PoolStats stats = pool.stats();
    check(stats.chunks_by_workers > 0, "workers_help: no worker ever ran a chunk");
    check(stats.rounds > 0 && stats.chunks_by_caller + stats.chunks_by_workers >= stats.rounds,
          "workers_help: inconsistent stats");
}

#if defined(SHOAL_TEST_HAS_FORK)
/** fork() after the pool started: the child uses the pool and a new one, the parent goes on. */
void check_fork() {
    shoal::WorkerPool pool(3);
    ItemLedger ledger(2000);
    for (int r = 0; r < 200; ++r) checked_round(pool, ledger, 1 + r * 7 % 2000, "before fork");
    std::fflush(stdout);
    const pid_t child = fork();
    if (child == 0) {
        // In the child: the pool's threads do not exist; it must notice and start new ones.
        alarm(kWatchdogSeconds / 2);  // alarms are not inherited; a stuck child must not hang the test
        int failures_before = g_failures;
        for (int r = 0; r < 300; ++r) checked_round(pool, ledger, 1 + r * 13 % 2000, "child old pool");
        pool.resize(2);
        for (int r = 0; r < 100; ++r) checked_round(pool, ledger, 1 + r * 5 % 2000, "child resized");
        {
            shoal::WorkerPool fresh(2);
            for (int r = 0; r < 300; ++r) checked_round(fresh, ledger, 1 + r * 11 % 2000, "child new pool");
        }
        std::fflush(stdout);
        _exit(g_failures == failures_before ? 0 : 1);
    }
    check(child > 0, "fork failed");
    if (child <= 0) return;
    for (int r = 0; r < 300; ++r) checked_round(pool, ledger, 1 + r * 3 % 2000, "parent after fork");
    const std::string problem = shoal_test::reap_child(child, kWatchdogSeconds / 2 + 5);
    check(problem.empty(), "fork: " + problem);
    for (int r = 0; r < 100; ++r) checked_round(pool, ledger, 1 + r * 3 % 2000, "parent after wait");
}
#endif

/** physical_core_count() is sane. */
void check_topology() {
    const unsigned cores = shoal::physical_core_count();
    check(cores >= 1 && cores <= std::max(1u, std::thread::hardware_concurrency()),
          "physical_core_count out of range: " + std::to_string(cores));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1) g_scale = std::atof(argv[1]);
    const auto start = std::chrono::steady_clock::now();
    struct Named {
        const char* name;
        void (*fn)();
    };
    const Named checks[] = {
        {"check_topology", check_topology},
        {"check_exactly_once", check_exactly_once},
        {"check_late_workers", check_late_workers},
        {"check_resize", check_resize},
        {"check_create_destroy", check_create_destroy},
        {"check_dynamic_chunks", check_dynamic_chunks},
        {"check_exceptions", check_exceptions},
        {"check_reentrancy", check_reentrancy},
        {"check_parallel_for", check_parallel_for},
        {"check_workers_help", check_workers_help},
#if defined(SHOAL_TEST_HAS_FORK)
        {"check_fork", check_fork},
#endif
    };
#if !defined(SHOAL_TEST_HAS_FORK)
    std::printf("check_fork left out (no fork() on this OS)\n");
#endif
    start_watchdog();
    for (const Named& c : checks) {
        g_current_check = c.name;
        alarm(kWatchdogSeconds);
        const auto t0 = std::chrono::steady_clock::now();
        const int failures_before = g_failures;
        const uint64_t worker_chunks = g_worker_chunks, caller_chunks = g_caller_chunks;
        c.fn();
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::printf("%-24s %s  (%.2f s", c.name, g_failures == failures_before ? "ok" : "FAILED", seconds);
        if (g_worker_chunks != worker_chunks || g_caller_chunks != caller_chunks) {
            std::printf(", chunks by workers/caller %llu/%llu",
                        static_cast<unsigned long long>(g_worker_chunks - worker_chunks),
                        static_cast<unsigned long long>(g_caller_chunks - caller_chunks));
        }
        std::printf(")\n");
        std::fflush(stdout);
    }
    alarm(0);
    const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%d checks, %d failed, %.2f s (wait layer: %s)\n", g_checks, g_failures, total,
                shoal::platform::kWaitLayer);
    return g_failures == 0 ? 0 : 1;
}
