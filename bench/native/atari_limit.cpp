// atari_limit.cpp — row (a) of bench/bench_atari.py: shoal's Atari env callbacks in a bare C++ loop.
//
// Not part of the env library: bench/bench_atari.py (limit_function) compiles it as the env library is
// compiled, with this file in place of csrc/shoal_atari.cpp (which it includes, callbacks and all) and
// csrc/'s other sources beside it, the same flags and the same ALE archive (shoal.atari.build's
// env_compile_command), and caches the result under shoal's Atari cache like the env (keyed by this file
// and csrc/). Run it through the bench:
//
//   python bench/bench_atari.py --games pong --num-envs 16
//
// (from the repository root; its row (a) is this loop, (a2) two of them in two threads).
//
//   double shoal_atari_limit_sps(const char* rom, int32_t num_envs, int64_t steps, int32_t frame_skip,
//                                int32_t noop_max, float repeat_action_probability, int32_t reward_clipping,
//                                int32_t rules)
#include <chrono>
#include <vector>

#include "shoal_atari.cpp"

// The env's callbacks in a bare loop on the calling thread, with what the core does around them that the
// semantics need (flags zeroed, same-step reset) and nothing else, under a preset's rules (with FIRE resets
// but Gymnasium's); `steps` steps of `num_envs` envs after 20 warm-up steps, actions drawn in advance; env
// steps per second, or a negative number if the game does not load.
SHOAL_EXTERN_C SHOAL_VISIBLE double shoal_atari_limit_sps(const char* rom, int32_t num_envs, int64_t steps,
                                                          int32_t frame_skip, int32_t noop_max,
                                                          float repeat_action_probability, int32_t reward_clipping,
                                                          int32_t rules) {
    AtariEnv params{};
    params.rules = rules;
    params.use_fire_reset = rules != kGymnasium;
    params.rom = rom;
    params.frame_skip = frame_skip;
    params.noop_max = noop_max;
    params.screen_size = 84;
    params.stack_size = 4;
    params.reward_clipping = reward_clipping;
    params.max_num_frames_per_episode = 108000;
    params.repeat_action_probability = repeat_action_probability;
    shoal_env_spec spec = atari_spec;
    char error[SHOAL_ERROR_CAPACITY];
    if (atari_configure(&spec, &params, error) != 0) return -1.0;
    const size_t n = size_t(num_envs), obs_bytes = 4 * 84 * 84;
    std::vector<AtariEnv> envs(n, params);
    std::vector<uint8_t> observations(n * obs_bytes), flags(3 * n);
    std::vector<float> rewards(n);
    std::vector<char> errors(n * SHOAL_ERROR_CAPACITY);
    constexpr int kBatches = 16;
    std::vector<int32_t> actions(kBatches * n);
    shoal_rng draws;
    shoal_rng_seed(&draws, 12345);
    for (int32_t& action : actions) action = int32_t(shoal_rng_below(&draws, uint32_t(spec.action_nvec[0])));
    for (size_t i = 0; i < n; ++i) {
        shoal_env& base = envs[i].base;
        base.observations = observations.data() + i * obs_bytes;
        base.rewards = &rewards[i];
        base.terminals = &flags[i];
        base.truncations = &flags[n + i];
        base.masks = &flags[2 * n + i];
        base.error = &errors[i * SHOAL_ERROR_CAPACITY];
        base.num_agents = 1;
        base.env_index = int64_t(i);
        base.shared = spec.shared;
        shoal_rng_seed(&base.rng, shoal_env_seed(0, i));
        if (atari_init(&envs[i]) != 0) return -1.0;
        atari_reset(&envs[i]);
    }
    auto run = [&](int64_t count) {
        for (int64_t t = 0; t < count; ++t) {
            const int32_t* batch = actions.data() + size_t(t % kBatches) * n;
            for (size_t i = 0; i < n; ++i) {
                AtariEnv* env = &envs[i];
                env->base.actions = batch + i;
                rewards[i] = 0.0f;
                flags[i] = flags[n + i] = 0;
                if (atari_step(env) == SHOAL_EPISODE_OVER) atari_reset(env);
            }
        }
    };
    run(20);
    const auto start = std::chrono::steady_clock::now();
    run(steps);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (AtariEnv& env : envs) atari_close(&env);
    release_game(spec.shared);
    return double(n) * double(steps) / seconds;
}
