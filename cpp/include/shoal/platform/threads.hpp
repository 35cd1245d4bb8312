// shoal/platform/threads.hpp — native threads: starting and joining them, their signal mask,
// yielding the CPU, the caller's identity, pinning to CPUs, and fork().
//
//   NativeThread       one OS thread (pthread; Windows: _beginthreadex)
//   SignalsBlocked     a scope whose new threads take no asynchronous signals (Windows: nothing to do,
//                      a console's Ctrl-C runs its handler on a thread of its own)
//   yield_cpu          lends the CPU to another ready thread
//   ThreadId, current_thread, same_thread
//   set_affinity       pins a thread to CPUs (Linux: pthread_setaffinity_np; Windows:
//                      SetThreadAffinityMask, CPUs 0-63 of the first processor group; macOS: a
//                      no-op, it has no call that binds a thread to a CPU)
//   at_fork_child      registers a function run in the child after fork() (Windows has no fork)
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <system_error>
#include <vector>

#include "shoal/platform/os.hpp"

#if defined(SHOAL_OS_WINDOWS)
#include <process.h>

#include "shoal/platform/windows.hpp"
#else
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#endif

namespace shoal::platform {

#if defined(SHOAL_OS_WINDOWS)

using ThreadId = DWORD;
[[nodiscard]] inline ThreadId current_thread() noexcept {
    return GetCurrentThreadId();
}
[[nodiscard]] inline bool same_thread(ThreadId a, ThreadId b) noexcept {
    return a == b;
}
inline void yield_cpu() noexcept {
    SwitchToThread();
}

class SignalsBlocked {
public:
    SignalsBlocked() noexcept = default;
    SignalsBlocked(const SignalsBlocked&) = delete;
    SignalsBlocked& operator=(const SignalsBlocked&) = delete;
};

/// One OS thread running entry(arg).
class NativeThread {
public:
    using Entry = void* (*)(void*);

    /// `extra_stack_bytes` is for TSan's reuse of dead threads' stacks after fork (POSIX only).
    /// @throws std::system_error if the thread cannot be created.
    void start(Entry entry, void* arg, size_t extra_stack_bytes = 0) {
        (void)extra_stack_bytes;
        entry_ = entry;
        arg_ = arg;
        const uintptr_t handle = _beginthreadex(nullptr, 0, &NativeThread::trampoline, this, 0, nullptr);
        if (handle == 0) throw std::system_error(errno, std::generic_category(), "shoal: _beginthreadex");
        handle_ = reinterpret_cast<HANDLE>(handle);
    }

    void join() noexcept {
        WaitForSingleObject(handle_, INFINITE);
        CloseHandle(handle_);
        handle_ = nullptr;
    }

    [[nodiscard]] HANDLE handle() const noexcept { return handle_; }

private:
    static unsigned __stdcall trampoline(void* self) {
        auto* thread = static_cast<NativeThread*>(self);
        thread->entry_(thread->arg_);
        return 0;
    }

    HANDLE handle_ = nullptr;
    Entry entry_ = nullptr;
    void* arg_ = nullptr;
};

/// Allows the thread on `cpus` (CPU numbers below 64; others are ignored). False if not applied.
inline bool set_affinity(const NativeThread& thread, const std::vector<int>& cpus) noexcept {
    DWORD_PTR mask = 0;
    for (int cpu : cpus)
        if (cpu >= 0 && cpu < static_cast<int>(8 * sizeof(DWORD_PTR))) mask |= DWORD_PTR{1} << cpu;
    return mask != 0 && SetThreadAffinityMask(thread.handle(), mask) != 0;
}

/// Windows has no fork(): nothing to register.
inline void at_fork_child(void (*)()) noexcept {}

#else

using ThreadId = pthread_t;
[[nodiscard]] inline ThreadId current_thread() noexcept {
    return pthread_self();
}
[[nodiscard]] inline bool same_thread(ThreadId a, ThreadId b) noexcept {
    return pthread_equal(a, b) != 0;
}
inline void yield_cpu() noexcept {
    sched_yield();
}

/// While alive, the calling thread blocks asynchronous signals; threads it creates inherit the mask.
/// SIGINT and friends belong to Python's main thread; fault signals stay deliverable.
class SignalsBlocked {
public:
    SignalsBlocked() noexcept {
        sigset_t all;
        sigfillset(&all);
        for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT}) sigdelset(&all, sig);
        pthread_sigmask(SIG_SETMASK, &all, &previous_);
    }
    ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
    SignalsBlocked(const SignalsBlocked&) = delete;
    SignalsBlocked& operator=(const SignalsBlocked&) = delete;

private:
    sigset_t previous_;
};

/// One OS thread running entry(arg).
class NativeThread {
public:
    using Entry = void* (*)(void*);

    /// With `extra_stack_bytes` != 0 the stack is 2x the default plus that much: larger than any
    /// stack libc cached from threads that died in a fork (TSan rejects their reused pthread_t).
    /// @throws std::system_error if the thread cannot be created.
    void start(Entry entry, void* arg, size_t extra_stack_bytes = 0) {
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        if (extra_stack_bytes != 0) {
            size_t stack = 0;
            pthread_attr_getstacksize(&attr, &stack);
            pthread_attr_setstacksize(&attr, 2 * stack + extra_stack_bytes);
        }
        const int error = pthread_create(&handle_, &attr, entry, arg);
        pthread_attr_destroy(&attr);
        if (error != 0) throw std::system_error(error, std::generic_category(), "shoal: pthread_create");
    }

    void join() noexcept { pthread_join(handle_, nullptr); }

    [[nodiscard]] pthread_t handle() const noexcept { return handle_; }

private:
    pthread_t handle_{};
};

#if defined(SHOAL_OS_LINUX)
/// Allows the thread on `cpus` only. False if not applied.
inline bool set_affinity(const NativeThread& thread, const std::vector<int>& cpus) noexcept {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int cpu : cpus)
        if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &set);
    return pthread_setaffinity_np(thread.handle(), sizeof(set), &set) == 0;
}
#else
/// macOS (and other POSIX systems here) cannot bind a thread to a CPU: pinning is a no-op.
inline bool set_affinity(const NativeThread&, const std::vector<int>&) noexcept {
    return false;
}
#endif

/// Runs `child` in the child process after every fork().
inline void at_fork_child(void (*child)()) noexcept {
    pthread_atfork(nullptr, nullptr, child);
}

#endif

}  // namespace shoal::platform
