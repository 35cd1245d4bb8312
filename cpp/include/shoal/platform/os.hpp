// shoal/platform/os.hpp — which operating system and which waiting layer this build uses.
//
// Everything OS-specific in the native core lives in shoal/platform/ (the rest of the core calls
// shoal::platform:: only). The waiting layer is one of:
//   SHOAL_WAIT_FUTEX     Linux futex (FUTEX_WAIT/WAKE_PRIVATE): the default on Linux, the fastest
//   SHOAL_WAIT_ULOCK     macOS __ulock_wait/__ulock_wake (what libc++'s own atomic wait uses there)
//   SHOAL_WAIT_WIN32     Windows WaitOnAddress/WakeByAddressAll
//   SHOAL_WAIT_PORTABLE  std::mutex + std::condition_variable per address bucket (any C++20 OS);
//                        forced by defining SHOAL_PORTABLE_WAIT (CMake option of the same name)
#pragma once

#if defined(_WIN32)
#define SHOAL_OS_WINDOWS 1
#elif defined(__APPLE__)
#define SHOAL_OS_MACOS 1
#elif defined(__linux__)
#define SHOAL_OS_LINUX 1
#endif

#if defined(SHOAL_PORTABLE_WAIT)
#define SHOAL_WAIT_PORTABLE 1
#elif defined(SHOAL_OS_LINUX)
#define SHOAL_WAIT_FUTEX 1
#elif defined(SHOAL_OS_MACOS)
#define SHOAL_WAIT_ULOCK 1
#elif defined(SHOAL_OS_WINDOWS)
#define SHOAL_WAIT_WIN32 1
#else
#define SHOAL_WAIT_PORTABLE 1
#endif

namespace shoal::platform {

/// The waiting layer compiled in: "futex", "ulock", "win32" or "portable".
inline constexpr const char* kWaitLayer =
#if defined(SHOAL_WAIT_FUTEX)
    "futex";
#elif defined(SHOAL_WAIT_ULOCK)
    "ulock";
#elif defined(SHOAL_WAIT_WIN32)
    "win32";
#else
    "portable";
#endif

}  // namespace shoal::platform
