// shoal/platform/wait_futex.hpp — the Linux waiting layer: process-private futexes.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>

namespace shoal::platform {

inline void wait(std::atomic<uint32_t>* word, uint32_t expected) noexcept {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

inline void wait_for(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) noexcept {
    const timespec timeout{static_cast<time_t>(timeout_ns / 1'000'000'000u),
                           static_cast<long>(timeout_ns % 1'000'000'000u)};
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, &timeout, nullptr, 0);
}

inline void wake_all(std::atomic<uint32_t>* word) noexcept {
    syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace shoal::platform
