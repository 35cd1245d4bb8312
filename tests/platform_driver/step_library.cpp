// step_library: loads an env library as shoal's core does (shoal/platform/library.hpp: dlopen, or
// LoadLibraryExW on Windows), steps it with the core's EnvArray on the caller's thread, and prints
// a digest of every observation, reward and flag it produced. The same source compiled for Linux and
// (MinGW, run under Wine) for Windows must print the same line for the same env built both ways.
// Usage: step_library LIBRARY NAME NUM_ENVS STEPS SEED
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "shoal/env.h"
#include "shoal/platform/library.hpp"
#include "shoal/vec.hpp"

namespace {

struct Digest {
    uint64_t state = 1469598103934665603ull;  // FNV-1a
    void add(const void* data, size_t bytes) {
        const auto* p = static_cast<const unsigned char*>(data);
        for (size_t i = 0; i < bytes; ++i) state = (state ^ p[i]) * 1099511628211ull;
    }
};

uint64_t next(uint64_t& x) {  // splitmix64: the same actions on every platform
    uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void fill_actions(const shoal_env_spec& spec, std::vector<unsigned char>& actions, uint64_t& rng) {
    const size_t count = actions.size() / 4;
    for (size_t i = 0; i < count; ++i) {
        const int32_t d = int32_t(i % size_t(spec.action_dims));
        if (spec.action_kind == SHOAL_ACTION_BOX) {
            const float low = spec.action_lows ? spec.action_lows[d] : spec.action_low;
            const float high = spec.action_highs ? spec.action_highs[d] : spec.action_high;
            const float unit = float(next(rng) >> 40) / float(1 << 24);
            const float value = low + (high - low) * unit;
            std::memcpy(&actions[i * 4], &value, 4);
        } else {
            const int32_t value = int32_t(next(rng) % uint64_t(spec.action_nvec[d]));
            std::memcpy(&actions[i * 4], &value, 4);
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s LIBRARY NAME NUM_ENVS STEPS SEED\n", argv[0]);
        return 2;
    }
    std::string why;
    void* library = shoal::platform::open_library(argv[1], &why);
    if (!library) {
        std::fprintf(stderr, "cannot load %s: %s\n", argv[1], why.c_str());
        return 1;
    }
    const std::string symbol = std::string("shoal_env_spec_") + argv[2];
    auto get = reinterpret_cast<const shoal_env_spec* (*)()>(shoal::platform::find_symbol(library, symbol.c_str()));
    if (!get) {
        std::fprintf(stderr, "%s does not export %s\n", argv[1], symbol.c_str());
        return 1;
    }
    const shoal_env_spec& spec = *get();
    const size_t num_envs = std::strtoull(argv[3], nullptr, 10), steps = std::strtoull(argv[4], nullptr, 10);
    const uint64_t seed = std::strtoull(argv[5], nullptr, 10);
    try {
        const size_t rows = num_envs * size_t(spec.num_agents);
        const size_t obs_bytes = rows * shoal::observation_size(spec) * shoal::dtype_size(spec.obs_dtype);
        std::vector<unsigned char> observations(obs_bytes), final_observations(obs_bytes);
        std::vector<unsigned char> actions(rows * size_t(spec.action_dims) * 4);
        std::vector<float> rewards(rows);
        std::vector<uint8_t> terminals(rows), truncations(rows), masks(rows, 1);
        shoal::VecBuffers buffers;
        buffers.observations = observations.data();
        buffers.final_observations = final_observations.data();
        buffers.actions = actions.data();
        buffers.rewards = rewards.data();
        buffers.terminals = terminals.data();
        buffers.truncations = truncations.data();
        buffers.masks = masks.data();
        shoal::EnvArray vec(spec, num_envs, nullptr, spec.max_episode_steps, buffers);
        vec.reset_range(0, num_envs, seed);
        Digest digest;
        digest.add(observations.data(), observations.size());
        uint64_t episodes = 0, rng = seed;
        for (size_t step = 0; step < steps; ++step) {
            fill_actions(spec, actions, rng);
            episodes += vec.step_range(0, num_envs);
            if (vec.any_failed()) {
                std::fprintf(stderr, "%s: an env failed at step %zu\n", argv[2], step);
                return 1;
            }
            digest.add(observations.data(), observations.size());
            digest.add(rewards.data(), rewards.size() * sizeof(float));
            digest.add(terminals.data(), terminals.size());
            digest.add(truncations.data(), truncations.size());
        }
        std::printf("%s envs=%zu steps=%zu episodes=%llu digest=%016llx\n", spec.name, num_envs, steps,
                    (unsigned long long)episodes, (unsigned long long)digest.state);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "%s: %s\n", argv[2], error.what());
        return 1;
    }
    return 0;
}
