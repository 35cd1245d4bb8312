// shoal/actions.hpp — the native side of the one action rule (spaces.py's ActionChecker holds all of it).
//
// Integer actions (Discrete, MultiDiscrete) must lie in [0, n). Box actions go to the env as given by
// default, as Gymnasium and PufferLib pass them (MuJoCo clamps its controls itself, and Gymnasium's
// costs read the raw action); a vector may instead refuse values outside the bounds or NaN (Strict),
// or clip them to the bounds (Clip). The native fast path only ever answers "these bytes can be
// stepped as they are"; every other case goes to ActionChecker, which converts, clips or names the
// offending value, its row and the remedy. Both the vector's check (vector.hpp) and the Discrete fast
// path of Python envs (python_steps.cpp) use the loops below, so the rule has one native form.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "shoal/errors.hpp"

namespace shoal {

/// What a vector does with Box actions (make()'s box_actions option).
enum class BoxActions : uint8_t {
    Pass,    ///< the env gets them as given, outside the bounds, NaN and infinities included
    Strict,  ///< a value outside the bounds, or NaN, is refused before any env steps
    Clip,    ///< clipped to the bounds first (NaN stays NaN, as np.clip leaves it)
};

/// The option's value from its name ("pass", "strict", "clip"); UsageError for another.
inline BoxActions parse_box_actions(const std::string& name) {
    if (name == "pass") return BoxActions::Pass;
    if (name == "strict") return BoxActions::Strict;
    if (name == "clip") return BoxActions::Clip;
    throw UsageError("box_actions must be 'pass', 'strict' or 'clip', got '" + name + "'");
}

namespace detail {
template <class Wide, class Int>
[[nodiscard]] bool ints_below_as(const Int* values, size_t count, Wide bound) noexcept {
    Wide outside = 0;
    for (size_t i = 0; i < count; ++i) {
        if constexpr (std::is_signed_v<Int>)
            outside |= Wide(std::make_signed_t<Wide>(values[i])) >= bound;
        else
            outside |= Wide(values[i]) >= bound;
    }
    return outside == 0;
}
}  // namespace detail

/// True if every one of `count` integers is in [0, upper). Widened with the type's own sign, then
/// compared unsigned: a negative value lands above every bound whatever its width (int8's -1 read
/// as uint8 would be 255, inside Discrete(1000)). Values of 32 bits or fewer are compared in 32-bit
/// lanes when the bound allows it (every native spec's does: its nvec is int32), twice as many per
/// vector register. An `or` of comparisons vectorises with nothing but the `or` carried between
/// iterations; a max reduction's select chain is longer.
template <class Int>
[[nodiscard]] bool ints_below(const Int* values, size_t count, uint64_t upper) noexcept {
    if constexpr (sizeof(Int) <= 4) {
        // A negative value widened with its sign is >= 2^31 as uint32, so at or above any such bound.
        if (upper <= uint64_t(1) << 31) return detail::ints_below_as<uint32_t>(values, count, uint32_t(upper));
    }
    return detail::ints_below_as<uint64_t>(values, count, upper);
}

/// Copies `bytes` of int32/float32 action values into the action buffer from `source`, whose values
/// are of that type or (`wide`) int64 integers already checked in range, narrowed on the way: what
/// numpy's astype(np.int32) makes of them.
inline void copy_actions(unsigned char* target, const unsigned char* source, size_t bytes, bool wide) noexcept {
    if (!wide) {
        std::memcpy(target, source, bytes);
        return;
    }
    int32_t narrowed[64];  // in blocks: the compiler vectorises the narrowing, memcpy keeps the aliasing rules
    for (size_t done = 0; done < bytes; done += sizeof(narrowed)) {
        const size_t count = std::min(sizeof(narrowed), bytes - done) / sizeof(int32_t);
        int64_t values[64];
        std::memcpy(values, source + 2 * done, count * sizeof(int64_t));
        for (size_t i = 0; i < count; ++i) narrowed[i] = int32_t(values[i]);
        std::memcpy(target + done, narrowed, count * sizeof(int32_t));
    }
}

/// True if every one of `count` floats is in [low, high] (NaN is not). Counted as a sum the compiler
/// vectorises: `&` on both comparisons, not a branch per value.
[[nodiscard]] inline bool floats_inside(const float* values, size_t count, float low, float high) noexcept {
    uint32_t outside = 0;
    for (size_t i = 0; i < count; ++i) outside += !((values[i] >= low) & (values[i] <= high));
    return outside == 0;
}

}  // namespace shoal
