// shoal/topology.hpp — the CPUs this process may use and the physical cores behind them.
//
// The one place that counts cores: the pool sizes its spin tokens from allowed_cpus(), and
// Python's default thread/worker counts ask physical_core_count() through _native.physical_cores().
// Both follow the affinity mask (taskset, cgroups cpusets), not the machine's total.
#pragma once

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace shoal {

/// CPUs this process may run on, in increasing order (all online CPUs if the mask is unreadable).
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

namespace detail {

/// A number from /sys/devices/system/cpu/cpu<cpu>/topology/<leaf>, or -1.
[[nodiscard]] inline long read_topology(int cpu, const char* leaf) noexcept {
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

/// Distinct physical cores among the allowed CPUs (hyperthreads of one core count once); the
/// number of allowed CPUs where sysfs does not tell. At least 1.
[[nodiscard]] inline unsigned physical_core_count() {
    const std::vector<int> cpus = allowed_cpus();
    std::set<std::pair<long, long>> cores;
    for (int cpu : cpus) {
        const long package = detail::read_topology(cpu, "physical_package_id");
        const long core = detail::read_topology(cpu, "core_id");
        if (package < 0 || core < 0) return static_cast<unsigned>(cpus.size());
        cores.emplace(package, core);
    }
    return cores.empty() ? 1u : static_cast<unsigned>(cores.size());
}

}  // namespace shoal
