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

/* Quaternions (x, y, z, w with w the scalar part), in raymath's operation order so that results
 * round as in raylib: rotations are the env's dynamics (school's agents turn by them). */
static inline SHOAL_UNUSED Quaternion QuaternionIdentity(void) { return (Quaternion){0.0f, 0.0f, 0.0f, 1.0f}; }
static inline SHOAL_UNUSED Quaternion QuaternionNormalize(Quaternion q) {
    float length = sqrtf(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
    if (length == 0.0f) length = 1.0f;
    const float inverse = 1.0f / length;
    return (Quaternion){q.x * inverse, q.y * inverse, q.z * inverse, q.w * inverse};
}
/* The Hamilton product a*b: rotating by b, then by a. */
static inline SHOAL_UNUSED Quaternion QuaternionMultiply(Quaternion a, Quaternion b) {
    return (Quaternion){
        a.x * b.w + a.w * b.x + a.y * b.z - a.z * b.y,
        a.y * b.w + a.w * b.y + a.z * b.x - a.x * b.z,
        a.z * b.w + a.w * b.z + a.x * b.y - a.y * b.x,
        a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
    };
}
/* The rotation by `angle` radians about `axis` (any length but zero; a zero axis gives the identity). */
static inline SHOAL_UNUSED Quaternion QuaternionFromAxisAngle(Vector3 axis, float angle) {
    if (sqrtf(axis.x * axis.x + axis.y * axis.y + axis.z * axis.z) == 0.0f) return QuaternionIdentity();
    const float half = angle * 0.5f;
    const Vector3 unit = Vector3Normalize(axis);
    const float s = sinf(half), c = cosf(half);
    return QuaternionNormalize((Quaternion){unit.x * s, unit.y * s, unit.z * s, c});
}
/* v rotated by the unit quaternion q (q v q*, written out as the rotation matrix times v). */
static inline SHOAL_UNUSED Vector3 Vector3RotateByQuaternion(Vector3 v, Quaternion q) {
    return (Vector3){
        v.x * (q.x * q.x + q.w * q.w - q.y * q.y - q.z * q.z) + v.y * (2 * q.x * q.y - 2 * q.w * q.z) +
            v.z * (2 * q.x * q.z + 2 * q.w * q.y),
        v.x * (2 * q.w * q.z + 2 * q.x * q.y) + v.y * (q.w * q.w - q.x * q.x + q.y * q.y - q.z * q.z) +
            v.z * (-2 * q.w * q.x + 2 * q.y * q.z),
        v.x * (-2 * q.w * q.y + 2 * q.x * q.z) + v.y * (2 * q.w * q.x + 2 * q.y * q.z) +
            v.z * (q.w * q.w - q.x * q.x - q.y * q.y + q.z * q.z),
    };
}
/* The rotation matrix of the unit quaternion q (raylib's column-major Matrix, no translation). */
static inline SHOAL_UNUSED Matrix QuaternionToMatrix(Quaternion q) {
    const float xx = q.x * q.x, yy = q.y * q.y, zz = q.z * q.z;
    const float xz = q.x * q.z, xy = q.x * q.y, yz = q.y * q.z;
    const float wx = q.w * q.x, wy = q.w * q.y, wz = q.w * q.z;
    Matrix m = {0};
    m.m0 = 1 - 2 * (yy + zz);
    m.m1 = 2 * (xy + wz);
    m.m2 = 2 * (xz - wy);
    m.m4 = 2 * (xy - wz);
    m.m5 = 1 - 2 * (xx + zz);
    m.m6 = 2 * (yz + wx);
    m.m8 = 2 * (xz + wy);
    m.m9 = 2 * (yz - wx);
    m.m10 = 1 - 2 * (xx + yy);
    m.m15 = 1.0f;
    return m;
}
static inline SHOAL_UNUSED Vector3 Vector3Zero(void) { return (Vector3){0.0f, 0.0f, 0.0f}; }

/* clang-format on */
#endif /* SHOAL_OCEAN_RAYMATH_H */
