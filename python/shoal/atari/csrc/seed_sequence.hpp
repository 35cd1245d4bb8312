// numpy's SeedSequence (the entropy pool and generate_state), for one non-negative integer of entropy:
// how ale-py's reset(seed=X) turns X into ALE's random_seed (SeedSequence(X).generate_state(2)[1]).
// tests/test_atari.py compares it with numpy's through shoal_atari_ale_seed.
#pragma once

#include <cstdint>

namespace shoal_atari {

class SeedSequence {
public:
    explicit SeedSequence(uint64_t entropy) {
        uint32_t words[2] = {uint32_t(entropy), uint32_t(entropy >> 32)};
        const int count = words[1] != 0 ? 2 : 1;
        uint32_t hash = kInitA;
        for (int i = 0; i < kPoolSize; ++i) pool_[i] = hashmix(i < count ? words[i] : 0u, hash);
        for (int src = 0; src < kPoolSize; ++src)
            for (int dst = 0; dst < kPoolSize; ++dst)
                if (src != dst) pool_[dst] = mix(pool_[dst], hashmix(pool_[src], hash));
    }

    void generate_state(uint32_t* out, int n_words) const {
        uint32_t hash = kInitB;
        for (int i = 0; i < n_words; ++i) {
            uint32_t value = pool_[i % kPoolSize];
            value ^= hash;
            hash *= kMultB;
            value *= hash;
            value ^= value >> kXShift;
            out[i] = value;
        }
    }

private:
    static constexpr int kPoolSize = 4;
    static constexpr uint32_t kInitA = 0x43b0d7e5u, kMultA = 0x931e8875u;
    static constexpr uint32_t kInitB = 0x8b51f9ddu, kMultB = 0x58f38dedu;
    static constexpr uint32_t kMixMultL = 0xca01f9ddu, kMixMultR = 0x4973f715u;
    static constexpr int kXShift = 16;

    static uint32_t hashmix(uint32_t value, uint32_t& hash) {
        value ^= hash;
        hash *= kMultA;
        value *= hash;
        value ^= value >> kXShift;
        return value;
    }

    static uint32_t mix(uint32_t x, uint32_t y) {
        uint32_t result = kMixMultL * x - kMixMultR * y;
        result ^= result >> kXShift;
        return result;
    }

    uint32_t pool_[kPoolSize];
};

}  // namespace shoal_atari
