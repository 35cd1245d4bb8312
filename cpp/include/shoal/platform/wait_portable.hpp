// shoal/platform/wait_portable.hpp — the portable waiting layer: standard C++ only.
//
// A fixed table of buckets, each a mutex and a condition variable; a word waits in the bucket its
// address hashes to. wait() compares the word under the bucket's mutex and wake_all() takes that
// mutex before notifying, so a waker that stored a new value either runs before the comparison
// (which then sees the value) or after the waiter sleeps (and wakes it): the futex contract. Words
// sharing a bucket wake each other spuriously, which callers tolerate.
//
// Why not std::atomic::wait: it has no timed form (parking and the pipeline's polling sleeps need
// one), and libstdc++ 12 lost a notification under the doorbell's test.
//
// fork(): a bucket's mutex may be held, and its condition variable may count waiters, by threads
// that do not exist in the child. Fork handlers lock every mutex before the fork, so no thread is
// inside one; the child unlocks them and makes its condition variables anew.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>

#include "shoal/platform/os.hpp"

#if !defined(SHOAL_OS_WINDOWS)
#include <pthread.h>
#endif

namespace shoal::platform {

namespace portable {

struct alignas(64) Bucket {
    std::mutex mutex;
    std::condition_variable changed;
};

inline constexpr size_t kBuckets = 64;

/// The buckets; one table per program (or shared object), set up on first use.
inline Bucket* buckets() noexcept {
    static Bucket table[kBuckets];
#if !defined(SHOAL_OS_WINDOWS)
    static const int registered = pthread_atfork(
        [] {
            for (Bucket& b : table) b.mutex.lock();
        },
        [] {
            for (Bucket& b : table) b.mutex.unlock();
        },
        [] {
            for (Bucket& b : table) {
                b.mutex.unlock();
                new (&b.changed) std::condition_variable();  // the old one's waiters are gone
            }
        });
    (void)registered;
#endif
    return table;
}

inline Bucket& bucket_of(const void* word) noexcept {
    const auto address = reinterpret_cast<uintptr_t>(word);
    return buckets()[(address >> 6 ^ address >> 12) % kBuckets];
}

}  // namespace portable

inline void wait(std::atomic<uint32_t>* word, uint32_t expected) noexcept {
    portable::Bucket& b = portable::bucket_of(word);
    std::unique_lock<std::mutex> lock(b.mutex);
    if (word->load(std::memory_order_seq_cst) == expected) b.changed.wait(lock);
}

inline void wait_for(std::atomic<uint32_t>* word, uint32_t expected, uint64_t timeout_ns) noexcept {
    portable::Bucket& b = portable::bucket_of(word);
    std::unique_lock<std::mutex> lock(b.mutex);
    if (word->load(std::memory_order_seq_cst) == expected)
        b.changed.wait_for(lock, std::chrono::nanoseconds(timeout_ns));
}

inline void wake_all(std::atomic<uint32_t>* word) noexcept {
    portable::Bucket& b = portable::bucket_of(word);
    {
        std::lock_guard<std::mutex> lock(b.mutex);
    }
    b.changed.notify_all();
}

}  // namespace shoal::platform
