// shoal/platform/cpu.hpp — per-architecture and per-compiler one-liners: a spin loop's pause and
// a prefetch for writing.
#pragma once

#include <atomic>

#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#elif defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace shoal::platform {

/// One pause of a spin loop: lets the sibling hyperthread run and saves power.
inline void cpu_relax() noexcept {
#if defined(_MSC_VER) && !defined(__clang__) && (defined(_M_X64) || defined(_M_IX86))
    _mm_pause();
#elif defined(_MSC_VER) && !defined(__clang__) && defined(_M_ARM64)
    __yield();
#elif defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#else
    std::atomic_signal_fence(std::memory_order_seq_cst);
#endif
}

/// Starts pulling the cache line of `address` for a write (a hint; nothing where unsupported).
inline void prefetch_for_write(const void* address) noexcept {
#if defined(__GNUC__) || defined(__clang__)
    __builtin_prefetch(address, 1);
#else
    (void)address;
#endif
}

}  // namespace shoal::platform
