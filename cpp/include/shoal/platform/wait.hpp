// shoal/platform/wait.hpp — sleeping on a 32-bit word until another thread changes it.
//
//   wait(word, expected)                 blocks while *word == expected; may return spuriously
//   wait_for(word, expected, timeout_ns) the same, giving up after timeout_ns
//   wake_all(word)                       wakes every thread blocked on word
//
// The contract every layer keeps (the pool's and the doorbell's no-lost-wake-up rules rely on it):
// the comparison with `expected` and the queueing of the waiter are one atomic step with respect
// to wake_all(), so a wake_all() that follows a store of a new value can never be missed. Words are
// process-private. The layers are chosen in os.hpp.
#pragma once

#include <atomic>
#include <cstdint>

#include "shoal/platform/os.hpp"

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) && std::atomic<uint32_t>::is_always_lock_free,
              "wait words must be plain 32-bit integers");

#if defined(SHOAL_WAIT_FUTEX)
#include "shoal/platform/wait_futex.hpp"
#elif defined(SHOAL_WAIT_ULOCK)
#include "shoal/platform/wait_darwin.hpp"
#elif defined(SHOAL_WAIT_WIN32)
#include "shoal/platform/wait_windows.hpp"
#else
#include "shoal/platform/wait_portable.hpp"
#endif
