// shoal/platform/clock.hpp — monotonic wall time and the calling thread's CPU time, in ns.
#pragma once

#include <cstdint>

#include "shoal/platform/os.hpp"

#if defined(SHOAL_OS_WINDOWS)
#include "shoal/platform/windows.hpp"
#else
#include <time.h>
#endif

namespace shoal::platform {

#if defined(SHOAL_OS_WINDOWS)

/// Monotonic wall time (QueryPerformanceCounter: no kernel transition on current Windows).
[[nodiscard]] inline uint64_t now_ns() noexcept {
    static const uint64_t frequency = [] {
        LARGE_INTEGER f;
        QueryPerformanceFrequency(&f);
        return static_cast<uint64_t>(f.QuadPart);
    }();
    LARGE_INTEGER count;
    QueryPerformanceCounter(&count);
    const uint64_t ticks = static_cast<uint64_t>(count.QuadPart);
    return ticks / frequency * 1'000'000'000u + ticks % frequency * 1'000'000'000u / frequency;
}

/// Windows has no fine per-thread CPU clock (GetThreadTimes advances in scheduler ticks of ~15.6
/// ms), so this is wall time: the pool's "wall time exceeds CPU time" preemption checks then never
/// fire, and its other evidence (the clock jumping while a worker spins) stays in force.
[[nodiscard]] inline uint64_t thread_cpu_ns() noexcept {
    return now_ns();
}

/// Whether thread_cpu_ns() measures CPU time (false where it is wall time).
inline constexpr bool kHasThreadCpuClock = false;

#else

[[nodiscard]] inline uint64_t clock_ns(clockid_t clock) noexcept {
    timespec ts;
    clock_gettime(clock, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

/// Monotonic wall time (vDSO on Linux, commpage on macOS: no syscall).
[[nodiscard]] inline uint64_t now_ns() noexcept {
    return clock_ns(CLOCK_MONOTONIC);
}

/// CPU time consumed by the calling thread (a syscall: keep it off the hot path).
[[nodiscard]] inline uint64_t thread_cpu_ns() noexcept {
    return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

inline constexpr bool kHasThreadCpuClock = true;

#endif

}  // namespace shoal::platform
