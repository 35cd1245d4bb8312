// shoal/platform/wait_windows.hpp — the Windows waiting layer: WaitOnAddress/WakeByAddressAll
// (Windows 8+, synchronization.lib; MinGW: -lsynchronization).
#pragma once

#include <atomic>
#include <cstdint>

#include "shoal/platform/windows.hpp"

#if defined(_MSC_VER)
#pragma comment(lib, "synchronization.lib")
#endif

namespace shoal::platform {

inline void wait(std::atomic<uint32_t>* word, uint32_t expected) noexcept {
    WaitOnAddress(reinterpret_cast<volatile VOID*>(word), &expected, sizeof(expected), INFINITE);
}

inline void wait_for(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) noexcept {
    // Milliseconds, rounded up (a timeout of 0 would only poll); below INFINITE (0xFFFFFFFF).
    uint64_t ms = (timeout_ns + 999'999) / 1'000'000;
    if (ms >= INFINITE) ms = INFINITE - 1;
    WaitOnAddress(reinterpret_cast<volatile VOID*>(word), &expected, sizeof(expected), static_cast<DWORD>(ms));
}

inline void wake_all(std::atomic<uint32_t>* word) noexcept {
    WakeByAddressAll(reinterpret_cast<PVOID>(word));
}

}  // namespace shoal::platform
