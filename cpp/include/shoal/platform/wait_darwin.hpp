// shoal/platform/wait_darwin.hpp — the macOS waiting layer: __ulock_wait/__ulock_wake.
//
// These are libSystem's (since macOS 10.12) and what libc++'s std::atomic::wait is built on there;
// unlike std::atomic::wait they take a timeout. os_sync_wait_on_address (macOS 14.4+) is the same
// kernel call under a public name; the wheels target older systems, so the ulock names are used.
// Declared here because no public header declares them.
#pragma once

#include <atomic>
#include <cstdint>

extern "C" int __ulock_wait(uint32_t operation, void* address, uint64_t value, uint32_t timeout_us);
extern "C" int __ulock_wake(uint32_t operation, void* address, uint64_t wake_value);

namespace shoal::platform {

namespace darwin {
inline constexpr uint32_t kCompareAndWait = 1;    // UL_COMPARE_AND_WAIT: 32-bit word, process-private
inline constexpr uint32_t kWakeAll = 0x00000100;  // ULF_WAKE_ALL
inline constexpr uint32_t kNoErrno = 0x01000000;  // ULF_NO_ERRNO: errors as return values
inline constexpr uint64_t kMaxTimeoutUs = 0xFFFFFFFFu;
}  // namespace darwin

inline void wait(std::atomic<uint32_t>* word, uint32_t expected) noexcept {
    __ulock_wait(darwin::kCompareAndWait | darwin::kNoErrno, word, expected, 0);  // 0 = no timeout
}

inline void wait_for(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) noexcept {
    // At least 1 us: a timeout of 0 would mean "forever".
    uint64_t us = timeout_ns / 1000 + 1;
    if (us > darwin::kMaxTimeoutUs) us = darwin::kMaxTimeoutUs;
    __ulock_wait(darwin::kCompareAndWait | darwin::kNoErrno, word, expected, static_cast<uint32_t>(us));
}

inline void wake_all(std::atomic<uint32_t>* word) noexcept {
    __ulock_wake(darwin::kCompareAndWait | darwin::kWakeAll | darwin::kNoErrno, word, 0);
}

}  // namespace shoal::platform
