// shoal/actions.hpp — the native form of the one action rule.
//
// Integer actions (Discrete, MultiDiscrete) must lie in [0, n) (per dimension for MultiDiscrete).
// Box actions go to the env as given by default, as Gymnasium and PufferLib pass them (MuJoCo clamps
// its controls itself, and Gymnasium's costs read the raw action); a vector may instead refuse values
// outside the bounds or NaN (Strict), or clip them to the bounds (Clip). A native vector enforces the
// rule here for every array it steps: int32/int64 (float32 for a box) in native byte order, C-contiguous,
// of the exact shape, checked (or clipped) and copied in one pass, a refusal thrown as ActionsRefused
// (where: the first offending value and how many there are), whose message the bindings have spaces.py
// word (the one text of each action error). Other dtypes and layouts are converted first by
// spaces.py's ActionChecker, which is also the rule of the Python backends. The vector's check
// (vector.hpp) and the Discrete fast path of Python envs (python_steps.cpp) use the loops below.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
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

/// True if every (Multi)Discrete action of `rows` agent rows of `dims` values is in [0, nvec[d]) (nvec:
/// the spec's, each in [1, 2^31)). One bound: ints_below; several: the same adds and ors with each
/// dimension's shift, which the compiler vectorises along a row.
template <class Int>
[[nodiscard]] bool ints_below_each(const Int* values, size_t rows, size_t dims, const int32_t* nvec) noexcept {
    if (dims == 1) return ints_below(values, rows, uint64_t(nvec[0]));
    using Wide = std::conditional_t<(sizeof(Int) > 4), uint64_t, uint32_t>;
    constexpr Wide top = Wide(1) << (8 * sizeof(Wide) - 1);
    Wide seen = 0;
    for (size_t row = 0; row < rows; ++row) {
        const Int* r = values + row * dims;
        for (size_t d = 0; d < dims; ++d) {
            Wide u;
            if constexpr (std::is_signed_v<Int>)
                u = Wide(std::make_signed_t<Wide>(r[d]));
            else
                u = Wide(r[d]);
            seen |= u | Wide(u + (top - Wide(nvec[d])));
        }
    }
    return (seen & top) == 0;
}

/// True if every one of `rows` rows of `dims` floats lies in [lows[d], highs[d]] (NaN does not).
[[nodiscard]] inline bool floats_inside_each(const float* values, size_t rows, size_t dims, const float* lows,
                                             const float* highs) noexcept {
    uint32_t outside = 0;
    for (size_t row = 0; row < rows; ++row)
        for (size_t d = 0; d < dims; ++d)
            outside += !((values[row * dims + d] >= lows[d]) & (values[row * dims + d] <= highs[d]));
    return outside == 0;
}

/// Where actions break the rule: the first offending value (its flat, row-major index) and how many do.
struct ActionRefusal {
    static constexpr size_t kLayout = std::numeric_limits<size_t>::max();  ///< index: the layout, not a value
    size_t index = kLayout;
    size_t count = 0;
};

/// Actions the rule refuses; nothing was stepped. `where` says which value, so that the caller can
/// name it in its own words (the bindings: spaces.py's ActionChecker.refusal, the one text of the error).
struct ActionsRefused : UsageError {
    ActionRefusal where;
    ActionsRefused(const std::string& what, ActionRefusal refusal) : UsageError(what), where(refusal) {}
};

/// The first integer of `rows` rows of `dims` outside [0, nvec[d]) and the count of those (the
/// refusal's slow path: plain compares, after a fast loop said some value is outside).
template <class Int>
[[nodiscard]] ActionRefusal ints_refused(const Int* values, size_t rows, size_t dims, const int32_t* nvec) noexcept {
    ActionRefusal refusal;
    for (size_t i = 0; i < rows * dims; ++i) {
        const Int value = values[i];
        bool inside = uint64_t(value) < uint64_t(nvec[i % dims]);
        if constexpr (std::is_signed_v<Int>) inside &= value >= 0;
        if (inside) continue;
        if (refusal.count++ == 0) refusal.index = i;
    }
    return refusal;
}

/// The first float of `rows` rows of `dims` outside [low, high] of its dimension, or NaN, and the count
/// of those (`lows`/`highs`: per dimension, or null for the scalar bounds).
[[nodiscard]] inline ActionRefusal floats_refused(const float* values, size_t rows, size_t dims, float low, float high,
                                                  const float* lows, const float* highs) noexcept {
    ActionRefusal refusal;
    for (size_t i = 0; i < rows * dims; ++i) {
        const float l = lows ? lows[i % dims] : low, h = highs ? highs[i % dims] : high;
        if (values[i] >= l && values[i] <= h) continue;
        if (refusal.count++ == 0) refusal.index = i;
    }
    return refusal;
}

/// Copies `rows` rows of `dims` floats clipped to their dimension's bounds, as np.clip does: NaN stays
/// NaN, and max then min with numpy's comparisons (so -0.0 against a bound of 0.0 becomes 0.0).
inline void clip_floats(float* target, const float* values, size_t rows, size_t dims, float low, float high,
                        const float* lows, const float* highs) noexcept {
    for (size_t i = 0; i < rows * dims; ++i) {
        const float l = lows ? lows[i % dims] : low, h = highs ? highs[i % dims] : high;
        float v = values[i];
        if (v == v) {
            v = v > l ? v : l;
            v = v < h ? v : h;
        }
        target[i] = v;
    }
}

}  // namespace shoal
