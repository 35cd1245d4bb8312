/* raymath.h — shoal's stand-in for raylib's math header: the few helpers Ocean env code calls,
 * written out (they are plain arithmetic, so env logic that uses them keeps its dynamics). */
#ifndef SHOAL_OCEAN_RAYMATH_H
#define SHOAL_OCEAN_RAYMATH_H

/* One declaration per line, a table mirroring raylib's API: kept out of clang-format. */
/* clang-format off */
#include <math.h>
#include "raylib.h"

static inline SHOAL_UNUSED float Clamp(float value, float low, float high) {
    const float above = value < low ? low : value;
    return above > high ? high : above;
}
static inline SHOAL_UNUSED float Lerp(float start, float end, float amount) { return start + amount * (end - start); }
static inline SHOAL_UNUSED float Normalize(float value, float start, float end) {
    return (value - start) / (end - start);
}
static inline SHOAL_UNUSED float Remap(float value, float in_start, float in_end, float out_start, float out_end) {
    return (value - in_start) / (in_end - in_start) * (out_end - out_start) + out_start;
}
static inline SHOAL_UNUSED float Wrap(float value, float low, float high) {
    return value - (high - low) * floorf((value - low) / (high - low));
}
static inline SHOAL_UNUSED Vector2 Vector2Add(Vector2 a, Vector2 b) { return (Vector2){a.x + b.x, a.y + b.y}; }
static inline SHOAL_UNUSED Vector2 Vector2Subtract(Vector2 a, Vector2 b) { return (Vector2){a.x - b.x, a.y - b.y}; }
static inline SHOAL_UNUSED Vector2 Vector2Scale(Vector2 v, float s) { return (Vector2){v.x * s, v.y * s}; }
static inline SHOAL_UNUSED float Vector2Length(Vector2 v) { return sqrtf(v.x * v.x + v.y * v.y); }
static inline SHOAL_UNUSED float Vector2Distance(Vector2 a, Vector2 b) {
    return sqrtf((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y));
}
static inline SHOAL_UNUSED Vector3 Vector3Add(Vector3 a, Vector3 b) { return (Vector3){a.x + b.x, a.y + b.y, a.z + b.z}; }
static inline SHOAL_UNUSED Vector3 Vector3Subtract(Vector3 a, Vector3 b) {
    return (Vector3){a.x - b.x, a.y - b.y, a.z - b.z};
}
static inline SHOAL_UNUSED Vector3 Vector3Scale(Vector3 v, float s) { return (Vector3){v.x * s, v.y * s, v.z * s}; }
static inline SHOAL_UNUSED float Vector3DotProduct(Vector3 a, Vector3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static inline SHOAL_UNUSED Vector3 Vector3CrossProduct(Vector3 a, Vector3 b) {
    return (Vector3){a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}
static inline SHOAL_UNUSED float Vector3Length(Vector3 v) { return sqrtf(v.x * v.x + v.y * v.y + v.z * v.z); }
static inline SHOAL_UNUSED Vector3 Vector3Normalize(Vector3 v) {
    const float length = sqrtf(v.x * v.x + v.y * v.y + v.z * v.z);
    if (length == 0.0f) return v;
    const float inverse = 1.0f / length;
    return (Vector3){v.x * inverse, v.y * inverse, v.z * inverse};
}

static inline SHOAL_UNUSED Vector3 Vector3Zero(void) { return (Vector3){0.0f, 0.0f, 0.0f}; }

/* clang-format on */
#endif /* SHOAL_OCEAN_RAYMATH_H */
