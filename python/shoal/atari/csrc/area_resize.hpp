// OpenCV's INTER_AREA downscale of one uint8 channel (cv::resize(..., INTER_AREA)), bit for bit: its
// weights (computeResizeAreaTab), its general path (ResizeArea_Invoker: float products and sums in its
// order, rounded to nearest even) and its integer fast path (resizeAreaFast) where OpenCV takes it.
// tests/test_atari.py compares it with cv2 through shoal_atari_resize_area. Compiled without fused
// multiply-adds (-ffp-contract=off, and the pragma in area_resize.cpp): OpenCV rounds twice.
//
// The source image is stored column by column (column_stride bytes per column, the height rounded up to
// whole blocks of kRowBlock rows), which is how the env keeps its grayscale screens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shoal_atari {

constexpr int kRowBlock = 4;  // source rows resized across at once

// The bytes of one stored column of an image `height` rows high.
inline int column_stride(int height) {
    return (height + kRowBlock - 1) / kRowBlock * kRowBlock;
}

// One source index's share of one destination index (OpenCV's DecimateAlpha).
struct AreaWeight {
    int source;
    int target;
    float alpha;
};

// The horizontal weights as a fixed number of taps per output column, tap-major (tap k of every column,
// then tap k + 1): the pass then adds one tap to every column at a time, the columns' sums independent of
// each other, each in OpenCV's order. Zero-weight taps pad the short columns (adding +0.0f to a
// non-negative sum changes nothing).
struct ColumnTaps {
    int taps = 0;
    std::vector<int> source;   // taps * size
    std::vector<float> alpha;  // taps * size

    ColumnTaps() = default;
    ColumnTaps(const std::vector<AreaWeight>& weights, int size);
};

// The resize of a height x width image to size x size: its weights, computed once and shared read-only.
struct AreaResize {
    int height = 0, width = 0, size = 0;
    int column_stride = 0;
    ColumnTaps columns;
    std::vector<AreaWeight> rows;
    int fast_x = 0, fast_y = 0;  // OpenCV's integer scales where it takes its fast path (both, or neither)

    AreaResize() = default;
    AreaResize(int height, int width, int size);

    // The bytes of a source image (width columns of column_stride bytes).
    size_t source_bytes() const { return size_t(width) * size_t(column_stride); }
    // The floats of the buffer resize() works in.
    size_t buffer_floats() const { return size_t(column_stride) * size_t(size) + size_t(size); }

    // `source` (column by column) resized into `target` (size x size, row by row); `buffer` holds
    // buffer_floats() floats.
    void resize(const uint8_t* source, uint8_t* target, float* buffer) const;
};

}  // namespace shoal_atari
