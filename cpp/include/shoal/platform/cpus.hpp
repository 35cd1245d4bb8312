// shoal/platform/cpus.hpp — the CPUs this process may use and the physical cores behind them.
//
//   Linux    the affinity mask (sched_getaffinity: taskset, cgroup cpusets); cores from sysfs
//   macOS    every logical CPU (no affinity masks exist); cores from sysctl hw.physicalcpu
//   Windows  the process affinity mask (first processor group); cores from
//            GetLogicalProcessorInformationEx, those with an allowed logical CPU
// Elsewhere, or where the OS does not answer: std::thread::hardware_concurrency() CPUs, one core each.
#pragma once

#include <algorithm>
#include <cstdio>
#include <memory>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "shoal/platform/os.hpp"

#if defined(SHOAL_OS_LINUX)
#include <sched.h>
#elif defined(SHOAL_OS_MACOS)
#include <sys/sysctl.h>
#include <sys/types.h>
#elif defined(SHOAL_OS_WINDOWS)
#include "shoal/platform/windows.hpp"
#endif

namespace shoal::platform {

namespace cpus_detail {

[[nodiscard]] inline std::vector<int> first_n(unsigned n) {
    std::vector<int> cpus;
    for (unsigned cpu = 0; cpu < std::max(1u, n); ++cpu) cpus.push_back(static_cast<int>(cpu));
    return cpus;
}

#if defined(SHOAL_OS_LINUX)
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
#endif

#if defined(SHOAL_OS_MACOS)
[[nodiscard]] inline int sysctl_int(const char* name) noexcept {
    int value = 0;
    size_t size = sizeof(value);
    return sysctlbyname(name, &value, &size, nullptr, 0) == 0 ? value : 0;
}
#endif

}  // namespace cpus_detail

/// CPUs this process may run on, in increasing order (at least one).
[[nodiscard]] inline std::vector<int> allowed_cpus() {
    std::vector<int> cpus;
#if defined(SHOAL_OS_LINUX)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
            if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
        }
    }
#elif defined(SHOAL_OS_MACOS)
    const int n = cpus_detail::sysctl_int("hw.logicalcpu");
    if (n > 0) cpus = cpus_detail::first_n(static_cast<unsigned>(n));
#elif defined(SHOAL_OS_WINDOWS)
    DWORD_PTR process = 0, system = 0;
    if (GetProcessAffinityMask(GetCurrentProcess(), &process, &system)) {
        for (int cpu = 0; cpu < static_cast<int>(8 * sizeof(DWORD_PTR)); ++cpu) {
            if (process & (DWORD_PTR{1} << cpu)) cpus.push_back(cpu);
        }
    }
#endif
    if (cpus.empty()) cpus = cpus_detail::first_n(std::thread::hardware_concurrency());
    return cpus;
}

/// Distinct physical cores among the allowed CPUs (hyperthreads of one core count once); the
/// number of allowed CPUs where the OS does not tell. At least 1.
[[nodiscard]] inline unsigned physical_core_count() {
    const std::vector<int> cpus = allowed_cpus();
    const auto allowed = static_cast<unsigned>(cpus.size());
#if defined(SHOAL_OS_LINUX)
    std::set<std::pair<long, long>> cores;
    for (int cpu : cpus) {
        const long package = cpus_detail::read_topology(cpu, "physical_package_id");
        const long core = cpus_detail::read_topology(cpu, "core_id");
        if (package < 0 || core < 0) return allowed;
        cores.emplace(package, core);
    }
    return cores.empty() ? 1u : static_cast<unsigned>(cores.size());
#elif defined(SHOAL_OS_MACOS)
    const int physical = cpus_detail::sysctl_int("hw.physicalcpu");
    return physical > 0 ? std::min(allowed, static_cast<unsigned>(physical)) : allowed;
#elif defined(SHOAL_OS_WINDOWS)
    DWORD bytes = 0;
    GetLogicalProcessorInformationEx(RelationProcessorCore, nullptr, &bytes);
    if (bytes == 0) return allowed;
    std::unique_ptr<char[]> buffer(new char[bytes]);
    auto* info = reinterpret_cast<SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX*>(buffer.get());
    if (!GetLogicalProcessorInformationEx(RelationProcessorCore, info, &bytes)) return allowed;
    KAFFINITY allowed_mask = 0;
    for (int cpu : cpus) allowed_mask |= KAFFINITY{1} << cpu;
    unsigned cores = 0;
    for (DWORD offset = 0; offset < bytes;) {
        const auto* entry = reinterpret_cast<const SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX*>(buffer.get() + offset);
        const GROUP_AFFINITY& group = entry->Processor.GroupMask[0];
        if (group.Group == 0 && (group.Mask & allowed_mask) != 0) ++cores;
        offset += entry->Size;
    }
    return cores == 0 ? allowed : cores;
#else
    return allowed;
#endif
}

}  // namespace shoal::platform
