/* shoal/rng.h — per-env random streams for native environments.
 *
 * Every env owns one shoal_rng. Its seed is derived from (vector seed, env index) with the
 * SplitMix64 finalizer, so streams of neighbouring envs are decorrelated and an env's stream
 * depends only on its global index, never on which thread steps it.
 *
 * Generator: PCG32 (XSH-RR 64/32, O'Neill 2014): 16 bytes of state, one multiply per draw.
 */
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SHOAL_GOLDEN_GAMMA 0x9E3779B97F4A7C15ULL

typedef struct shoal_rng {
    uint64_t state;
    uint64_t increment; /* always odd: selects one of 2^63 PCG streams */
} shoal_rng;

/* SplitMix64 finalizer: a bijective 64-bit mixer. */
static inline uint64_t shoal_mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Seed of env `index` under vector seed `seed`: the index-th output of a SplitMix64 stream
 * started at `seed`. Offsetting `seed` by k * SHOAL_GOLDEN_GAMMA shifts indices by k, which is
 * how a vectorizer hands a sub-vector of envs [k, k+n) its seed (see shoal/seeding.py). */
static inline uint64_t shoal_env_seed(uint64_t seed, uint64_t index) {
    return shoal_mix64(seed + (index + 1) * SHOAL_GOLDEN_GAMMA);
}

static inline uint32_t shoal_rng_next(shoal_rng* rng) {
    uint64_t old = rng->state;
    rng->state = old * 6364136223846793005ULL + rng->increment;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31u));
}

static inline void shoal_rng_seed(shoal_rng* rng, uint64_t env_seed) {
    rng->state = 0;
    rng->increment = (shoal_mix64(env_seed ^ SHOAL_GOLDEN_GAMMA) << 1u) | 1u;
    shoal_rng_next(rng);
    rng->state += shoal_mix64(env_seed);
    shoal_rng_next(rng);
}

/* Uniform float in [0, 1) with 24 random bits. */
static inline float shoal_rng_float(shoal_rng* rng) {
    return (float)(shoal_rng_next(rng) >> 8) * (1.0f / 16777216.0f);
}

/* Uniform double in [0, 1) with 32 random bits. */
static inline double shoal_rng_double(shoal_rng* rng) {
    return (double)shoal_rng_next(rng) * (1.0 / 4294967296.0);
}

/* Uniform float in [low, high). */
static inline float shoal_rng_uniform(shoal_rng* rng, float low, float high) {
    return low + (high - low) * shoal_rng_float(rng);
}

/* Uniform integer in [0, bound), bound > 0, without modulo bias (Lemire 2019). */
static inline uint32_t shoal_rng_below(shoal_rng* rng, uint32_t bound) {
    uint64_t m = (uint64_t)shoal_rng_next(rng) * bound;
    uint32_t low = (uint32_t)m;
    if (low < bound) {
        uint32_t threshold = (uint32_t)(-bound) % bound;
        while (low < threshold) {
            m = (uint64_t)shoal_rng_next(rng) * bound;
            low = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

#ifdef __cplusplus
}
#endif
