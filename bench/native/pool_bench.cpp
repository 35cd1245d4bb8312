// pool_bench — fork-join cost and synthetic throughput of shoal::WorkerPool, T = 0 / 1 / 2.
//
// Build and run (from the repository root):
//   g++ -std=c++20 -O2 -pthread -Icpp/include bench/native/pool_bench.cpp -o /tmp/pool_bench
//   /tmp/pool_bench [repeats=9] [scale=1.0]
//
// Every configuration is measured `repeats` times, interleaved (T=0, T=1, T=2, T=0, ...) so that
// load from other processes hits all of them alike; the table shows medians and the spread
// (max/min - 1) of the repeats. Pools are created once per thread count and kept, as a vector env
// keeps its pool, so the adaptive waiting is in its steady state. `scale` multiplies the rounds.
// Each measurement is short (~50 ms) and repeated often, so a burst of load from elsewhere spoils
// a few repeats rather than the median; a large spread still means: rerun on a quieter machine.
//
// Rows:
//   (a) trivial body, one item per participant: ns per round (lower is better)
//   (b) 4096 items x 30 ns (CartPole-like)                     steps/s
//   (c) 1024 items x 30 ns                                     steps/s
//   (d) 64 items x 10 us (CPU-deep env)                        steps/s
//   (e) (b) with a 100 us caller busy-wait between rounds       steps/s (time inside run() only)
//   (f) (b) while one CPU-bound process competes; T=0 and T=2 both under competition

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "shoal/pool.hpp"
#include "shoal/pool_probe.hpp"

namespace {

struct Summary {
    double median = 0;
    double spread = 0;
};

Summary summarize(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    Summary s;
    s.median = values[values.size() / 2];
    s.spread = values.front() > 0 ? values.back() / values.front() - 1 : 0;
    return s;
}

using Measure = std::function<double(shoal::WorkerPool&)>;

/** Measures `measure` on each pool in `which`, interleaved, `repeats` times. */
std::vector<Summary> interleaved(std::vector<std::unique_ptr<shoal::WorkerPool>>& pools,
                                 const std::vector<unsigned>& which, int repeats, const Measure& measure) {
    std::vector<std::vector<double>> values(which.size());
    for (int r = 0; r < repeats; ++r) {
        for (size_t k = 0; k < which.size(); ++k) values[k].push_back(measure(*pools[which[k]]));
    }
    std::vector<Summary> out;
    for (auto& v : values) out.push_back(summarize(v));
    return out;
}

void print_row(const char* name, const std::vector<unsigned>& which, const std::vector<Summary>& s,
               bool lower_is_better) {
    std::printf("%-34s", name);
    for (unsigned t = 0; t < 3; ++t) {
        const auto it = std::find(which.begin(), which.end(), t);
        if (it == which.end()) {
            std::printf(" %20s", "-");
            continue;
        }
        const Summary& v = s[static_cast<size_t>(it - which.begin())];
        if (lower_is_better) {
            std::printf(" %11.0f ns (%3.0f%%)", v.median, 100 * v.spread);
        } else {
            std::printf(" %10.2f M/s (%3.0f%%)", v.median / 1e6, 100 * v.spread);
        }
    }
    const Summary& base = s[0];
    for (size_t k = 1; k < which.size(); ++k) {
        const double ratio = lower_is_better ? base.median / s[k].median : s[k].median / base.median;
        std::printf("  T=%u: %.2fx", which[k], ratio);
    }
    std::printf("\n");
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    const int repeats = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
    const double scale = argc > 2 ? std::atof(argv[2]) : 1.0;
    const auto rounds = [scale](double n) { return static_cast<size_t>(std::max(1.0, n * scale)); };

    std::printf("shoal pool_bench: %zu allowed CPUs, %u physical cores, %d repeats (median, spread)\n",
                shoal::allowed_cpus().size(), shoal::physical_core_count(), repeats);
    std::printf("burn calibration: %.3f ns per iteration\n", shoal::detail::burn_ns_per_iteration());
    std::printf("%-34s %20s %20s %20s  speedup vs T=0\n", "workload", "T=0", "T=1", "T=2");

    std::vector<std::unique_ptr<shoal::WorkerPool>> pools;
    for (unsigned t = 0; t < 3; ++t) pools.push_back(std::make_unique<shoal::WorkerPool>(t));
    const std::vector<unsigned> all{0, 1, 2};

    print_row("(a) fork-join, trivial body", all,
              interleaved(pools, all, repeats,
                          [&](shoal::WorkerPool& p) { return shoal::measure_fork_join_ns(p, rounds(20000)); }),
              true);
    print_row(
        "(b) 4096 x 30 ns", all,
        interleaved(pools, all, repeats,
                    [&](shoal::WorkerPool& p) { return shoal::measure_steps_per_second(p, 4096, 30, rounds(400), 0); }),
        false);
    print_row("(c) 1024 x 30 ns", all,
              interleaved(
                  pools, all, repeats,
                  [&](shoal::WorkerPool& p) { return shoal::measure_steps_per_second(p, 1024, 30, rounds(1600), 0); }),
              false);
    print_row(
        "(d) 64 x 10 us", all,
        interleaved(pools, all, repeats,
                    [&](shoal::WorkerPool& p) { return shoal::measure_steps_per_second(p, 64, 10000, rounds(80), 0); }),
        false);
    print_row("(e) 4096 x 30 ns, 100 us caller pause", all,
              interleaved(
                  pools, all, repeats,
                  [&](shoal::WorkerPool& p) { return shoal::measure_steps_per_second(p, 4096, 30, rounds(250), 100); }),
              false);

    // (f): one CPU-bound competitor for the whole row.
    const pid_t hog = fork();
    if (hog == 0) {
        volatile uint64_t x = 0;
        for (;;) x = x + 1;
    }
    const std::vector<unsigned> zero_two{0, 2};
    const auto competed = interleaved(pools, zero_two, repeats, [&](shoal::WorkerPool& p) {
        return shoal::measure_steps_per_second(p, 4096, 30, rounds(600), 0);
    });
    kill(hog, SIGKILL);
    waitpid(hog, nullptr, 0);
    print_row("(f) (b) + 1 competing CPU hog", zero_two, competed, false);

    for (unsigned t = 1; t < 3; ++t) {
        const shoal::PoolStats s = pools[t]->stats();
        std::printf(
            "stats T=%u: rounds %llu, chunks caller/workers %llu/%llu, steals %llu, sleeps %llu, "
            "spin hits %llu, futex wakes %llu, preemptions %llu, parks %llu, late %llu, "
            "caller yields %llu, spin budget %llu us, parked now %u, active limit %u\n",
            t, (unsigned long long)s.rounds, (unsigned long long)s.chunks_by_caller,
            (unsigned long long)s.chunks_by_workers, (unsigned long long)s.steals, (unsigned long long)s.worker_sleeps,
            (unsigned long long)s.spin_hits, (unsigned long long)s.futex_wakes, (unsigned long long)s.preemptions,
            (unsigned long long)s.parks, (unsigned long long)s.late_arrivals, (unsigned long long)s.caller_yields,
            (unsigned long long)(s.mean_spin_budget_ns / 1000), s.parked_workers, s.active_limit);
    }
    return 0;
}
