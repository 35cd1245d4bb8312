// OpenCV's INTER_AREA resize of one uint8 channel (see area_resize.hpp).
#include "area_resize.hpp"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

// INTER_AREA's sums are float products and sums in a set order; a fused multiply-add would round once
// where OpenCV rounds twice.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace shoal_atari {
namespace {

// OpenCV's computeResizeAreaTab: the weights of a downscale from `source` to `target` samples, grouped by
// target in increasing source order.
std::vector<AreaWeight> area_weights(int source, int target) {
    std::vector<AreaWeight> weights;
    const double scale = 1.0 / (double(target) / double(source));
    for (int d = 0; d < target; ++d) {
        const double first = d * scale, last = first + scale;
        const double cell = std::min(scale, source - first);
        int begin = int(std::ceil(first)), end = int(std::floor(last));
        end = std::min(end, source - 1);
        begin = std::min(begin, end);
        if (begin - first > 1e-3) weights.push_back({begin - 1, d, float((begin - first) / cell)});
        for (int s = begin; s < end; ++s) weights.push_back({s, d, float(1.0 / cell)});
        if (last - end > 1e-3) weights.push_back({end, d, float(std::min(std::min(last - end, 1.0), cell) / cell)});
    }
    return weights;
}

// OpenCV's test for its integer fast path (resizeAreaFast): the scale computed as its resize() computes it
// (1 / (target / source) in double) lands on an integer. Not every divisor does: 210 to 2 gives
// 104.99999999999999, and takes the general path. 0 where the general path applies.
int area_fast_scale(int source, int target) {
    const double scale = 1.0 / (double(target) / double(source));
    const double whole = std::nearbyint(scale);
    return std::abs(scale - whole) < DBL_EPSILON ? int(whole) : 0;
}

// The horizontal pass of kRowBlock source rows from `first`: across[row][x] = each output column's taps
// summed in order from 0 (OpenCV's buf). The screen is stored column by column, so a tap's pixel in the
// block's rows is kRowBlock consecutive bytes: the rows go in the lanes, each lane in OpenCV's order.
void resize_rows_across(const AreaResize& area, const uint8_t* columns_first, int first, int size, float* across) {
    const int taps = area.columns.taps;
    const int* sources = area.columns.source.data();
    const float* alphas = area.columns.alpha.data();
    const size_t stride = size_t(area.column_stride);
    float* out = across + size_t(first) * size_t(size);
#if defined(__SSE2__)
    // One output column's sums for the block's rows, in the lanes.
    auto column = [&](int x) {
        const __m128i zero = _mm_setzero_si128();
        __m128 sum = _mm_setzero_ps();
        for (int k = 0; k < taps; ++k) {
            const size_t at = size_t(k) * size_t(size) + size_t(x);
            int32_t bytes;
            std::memcpy(&bytes, columns_first + size_t(sources[at]) * stride, sizeof bytes);
            const __m128i words = _mm_unpacklo_epi8(_mm_cvtsi32_si128(bytes), zero);
            const __m128 pixels = _mm_cvtepi32_ps(_mm_unpacklo_epi16(words, zero));
            sum = _mm_add_ps(sum, _mm_mul_ps(pixels, _mm_set1_ps(alphas[at])));
        }
        return sum;
    };
    int x = 0;
    for (; x + 4 <= size; x += 4) {  // four columns, turned into four rows
        __m128 a = column(x), b = column(x + 1), c = column(x + 2), d = column(x + 3);
        _MM_TRANSPOSE4_PS(a, b, c, d);
        _mm_storeu_ps(out + x, a);
        _mm_storeu_ps(out + size_t(size) + x, b);
        _mm_storeu_ps(out + 2 * size_t(size) + x, c);
        _mm_storeu_ps(out + 3 * size_t(size) + x, d);
    }
    for (; x < size; ++x) {
        float lanes[kRowBlock];
        _mm_storeu_ps(lanes, column(x));
        for (int r = 0; r < kRowBlock; ++r) out[size_t(r) * size_t(size) + size_t(x)] = lanes[r];
    }
#else
    for (int x = 0; x < size; ++x) {
        float sum[kRowBlock] = {};
        for (int k = 0; k < taps; ++k) {
            const size_t at = size_t(k) * size_t(size) + size_t(x);
            const uint8_t* pixels = columns_first + size_t(sources[at]) * stride;
            for (int r = 0; r < kRowBlock; ++r) sum[r] += float(pixels[r]) * alphas[at];
        }
        for (int r = 0; r < kRowBlock; ++r) out[size_t(r) * size_t(size) + size_t(x)] = sum[r];
    }
#endif
}

// An output row: each sum rounded to nearest even (the default rounding mode, as OpenCV's saturate_cast),
// saturated to 0..255.
void finish_row(const float* sums, uint8_t* out, int size) {
    int x = 0;
#if defined(__SSE2__)
    for (; x + 8 <= size; x += 8) {
        const __m128i low = _mm_cvtps_epi32(_mm_loadu_ps(sums + x));
        const __m128i high = _mm_cvtps_epi32(_mm_loadu_ps(sums + x + 4));
        const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(low, high), _mm_setzero_si128());
        _mm_storel_epi64(reinterpret_cast<__m128i*>(out + x), bytes);
    }
#endif
    for (; x < size; ++x) out[x] = uint8_t(std::clamp(int(std::nearbyint(sums[x])), 0, 255));
}

// OpenCV's resizeAreaFast for one channel of uint8: each output pixel the integer sum of its fast_y x fast_x
// block; a 2x2 block is (sum + 2) >> 2 (its vector path's rounding), any other the float sum * (1.f / area)
// rounded to nearest even (saturate_cast).
void resize_area_fast(const AreaResize& area, const uint8_t* screen, uint8_t* target, int size) {
    const int sx = area.fast_x, sy = area.fast_y;
    const float scale = 1.f / float(sx * sy);
    const size_t stride = size_t(area.column_stride);
    for (int dy = 0; dy < size; ++dy) {
        for (int dx = 0; dx < size; ++dx) {
            int sum = 0;
            for (int x = dx * sx; x < (dx + 1) * sx; ++x) {
                const uint8_t* column = screen + size_t(x) * stride + size_t(dy * sy);
                for (int y = 0; y < sy; ++y) sum += column[y];
            }
            const int value = sx == 2 && sy == 2 ? (sum + 2) >> 2 : int(std::nearbyint(float(sum) * scale));
            target[size_t(dy) * size_t(size) + size_t(dx)] = uint8_t(std::clamp(value, 0, 255));
        }
    }
}

}  // namespace

ColumnTaps::ColumnTaps(const std::vector<AreaWeight>& weights, int size) {
    std::vector<int> count(size_t(size), 0);
    for (const AreaWeight& w : weights) taps = std::max(taps, ++count[size_t(w.target)]);
    source.assign(size_t(taps) * size_t(size), 0);
    alpha.assign(size_t(taps) * size_t(size), 0.0f);
    std::fill(count.begin(), count.end(), 0);
    for (const AreaWeight& w : weights) {
        const size_t at = size_t(count[size_t(w.target)]++) * size_t(size) + size_t(w.target);
        source[at] = w.source;
        alpha[at] = w.alpha;
    }
    for (int d = 0; d < size; ++d)  // a padding tap reads a pixel its column reads anyway
        for (int k = count[size_t(d)]; k < taps; ++k) source[size_t(k) * size_t(size) + size_t(d)] = source[size_t(d)];
}

AreaResize::AreaResize(int height, int width, int size)
    : height(height),
      width(width),
      size(size),
      column_stride(shoal_atari::column_stride(height)),
      columns(area_weights(width, size), size),
      rows(area_weights(height, size)),
      fast_x(area_fast_scale(width, size)),
      fast_y(area_fast_scale(height, size)) {
    if (fast_x == 0 || fast_y == 0) fast_x = fast_y = 0;
}

// OpenCV's ResizeArea_Invoker for one channel of uint8 (or its fast path, where OpenCV takes it): every
// source row resized across once, then the rows weighted into each output row's sums in order; rounded to
// nearest even.
void AreaResize::resize(const uint8_t* screen, uint8_t* target, float* buffer) const {
    if (fast_x != 0) {
        resize_area_fast(*this, screen, target, size);
        return;
    }
    float* across = buffer;
    float* sum = buffer + size_t(column_stride) * size_t(size);
    for (int first = 0; first < height; first += kRowBlock)
        resize_rows_across(*this, screen + first, first, size, across);
    std::fill(sum, sum + size, 0.0f);
    int previous_row = rows.empty() ? 0 : rows[0].target;
    for (const AreaWeight& row : rows) {
        const float* buf = across + size_t(row.source) * size_t(size);
        const float beta = row.alpha;
        if (row.target != previous_row) {
            finish_row(sum, target + size_t(previous_row) * size_t(size), size);
            for (int x = 0; x < size; ++x) sum[x] = beta * buf[x];
            previous_row = row.target;
        } else {
            for (int x = 0; x < size; ++x) sum[x] += beta * buf[x];
        }
    }
    finish_row(sum, target + size_t(previous_row) * size_t(size), size);
}

}  // namespace shoal_atari
