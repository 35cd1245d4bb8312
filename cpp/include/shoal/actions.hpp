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
/// `values` widened to Wide with their own sign all lie in [0, upper), for 1 <= upper <= 2^(bits - 1):
/// u is inside exactly when neither u nor u + (2^(bits - 1) - upper) has the top bit set (u below
/// 2^(bits - 1), then u + shift below it too exactly when u < upper; negative values widened with
/// their sign have it set). Only adds and ors, carried in one accumulator and tested once: SSE2
/// vectorises both widths (it has no unsigned compare, which a plain `u >= upper` would need).
template <class Wide, class Int>
[[nodiscard]] bool ints_below_top_bit(const Int* values, size_t count, Wide upper) noexcept {
    constexpr Wide top = Wide(1) << (8 * sizeof(Wide) - 1);
    const Wide shift = top - upper;
    Wide seen = 0;
    for (size_t i = 0; i < count; ++i) {
        Wide u;
        if constexpr (std::is_signed_v<Int>)
            u = Wide(std::make_signed_t<Wide>(values[i]));
        else
            u = Wide(values[i]);
        seen |= u | Wide(u + shift);
    }
    return (seen & top) == 0;
}

template <class Int>
[[nodiscard]] bool ints_below_compared(const Int* values, size_t count, uint64_t upper) noexcept {
    uint64_t outside = 0;
    for (size_t i = 0; i < count; ++i) {
        if constexpr (std::is_signed_v<Int>)
            outside |= (values[i] < 0) | (uint64_t(values[i]) >= upper);  // above 2^63, -1 read unsigned is inside
        else
            outside |= uint64_t(values[i]) >= upper;
    }
    return outside == 0;
}
}  // namespace detail

/// True if every one of `count` integers is in [0, upper). Widened with the type's own sign, then
/// read unsigned: a negative value lands above every bound whatever its width (int8's -1 read as
/// uint8 would be 255, inside Discrete(1000)). Values of 32 bits or fewer are checked in 32-bit lanes
/// when the bound allows it (every native spec's does: its nvec is int32), twice as many per vector
/// register.
template <class Int>
[[nodiscard]] bool ints_below(const Int* values, size_t count, uint64_t upper) noexcept {
    if (upper == 0) return count == 0;
    if constexpr (sizeof(Int) <= 4) {
        if (upper <= uint64_t(1) << 31) return detail::ints_below_top_bit<uint32_t>(values, count, uint32_t(upper));
    }
    if (upper <= uint64_t(1) << 63) return detail::ints_below_top_bit<uint64_t>(values, count, upper);
    return detail::ints_below_compared(values, count, upper);
}

/// Copies `bytes` of int32/float32 action values into the action buffer from `source`, whose values
/// are of that type or (`wide`) int64 integers already checked in range, narrowed on the way: what
/// numpy's astype(np.int32) makes of them.
inline void copy_actions(unsigned char* target, const unsigned char* source, size_t bytes, bool wide) noexcept {
    if (!wide) {
        std::memcpy(target, source, bytes);
        return;
    }
    // Value by value through memcpy (the bytes are numpy's and the env's, of no declared C++ type):
    // compilers turn these fixed-size copies into plain loads and stores and vectorise the loop.
    const size_t count = bytes / sizeof(int32_t);
    for (size_t i = 0; i < count; ++i) {
        int64_t value;
        std::memcpy(&value, source + i * sizeof(int64_t), sizeof value);
        const int32_t narrowed = int32_t(value);
        std::memcpy(target + i * sizeof(int32_t), &narrowed, sizeof narrowed);
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
