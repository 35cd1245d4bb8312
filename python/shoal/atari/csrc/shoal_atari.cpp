// shoal_atari — an Atari 2600 game on ALE (the Arcade Learning Environment, built from ale-py's own
// sources) with the standard preprocessing, as a shoal native env.
//
// One env is one ALEInterface plus Gymnasium's AtariPreprocessing and FrameStackObservation, in the
// same order of operations:
//   step   frame_skip emulated frames of the action (each frame the previous action instead, with
//          probability repeat_action_probability, from the env's own stream); rewards summed; the
//          grayscale screens of the last two frames kept (only frames that ran to the end of the
//          skip: a frame that ends the episode leaves the buffers as they were, as Gymnasium does),
//          max-pooled in place, resized with OpenCV's INTER_AREA arithmetic, pushed onto the stack.
//   reset  ALE's reset_game, then 1..noop_max NOOP frames (a number from the env's stream); the
//          stack filled with the reset frame (FrameStackObservation's "reset" padding).
// A reset that follows shoal's vector reset (the core zeroed the env's terminals and truncations;
// an autoreset follows a step that set one of them) seeds ALE as ale-py's reset(seed=X) does, with
// X the env's first two 32-bit draws: random_seed = SeedSequence(X).generate_state(2)[1], then the
// ROM loaded again. Autoresets continue ALE's own random state, as Gymnasium's autoreset does.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ale/ale_interface.hpp"
#include "shoal/env.h"

// INTER_AREA's sums are float products and sums in a set order; a fused multiply-add would round once
// where OpenCV rounds twice.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace {

constexpr int kMaxActions = 18;
constexpr int kMaxScreen = 1024;
constexpr int kMaxStack = 64;

// numpy's SeedSequence (the entropy pool and generate_state), for one non-negative integer of entropy.
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

// One source index's share of one destination index (OpenCV's DecimateAlpha).
struct AreaWeight {
    int source;
    int target;
    float alpha;
};

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

// The horizontal weights as a fixed number of taps per output column, tap-major (tap k of every column,
// then tap k + 1): the pass then adds one tap to every column at a time, the columns' sums independent of
// each other, each in OpenCV's order. Zero-weight taps pad the short columns (adding +0.0f to a
// non-negative sum changes nothing).
struct ColumnTaps {
    int taps = 0;
    std::vector<int> source;   // taps * size
    std::vector<float> alpha;  // taps * size

    ColumnTaps() = default;

    ColumnTaps(const std::vector<AreaWeight>& weights, int size) {
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
            for (int k = count[size_t(d)]; k < taps; ++k)
                source[size_t(k) * size_t(size) + size_t(d)] = source[size_t(d)];
    }
};

// What every env of a vector shares, read-only: the game and the resize's weights.
struct Game {
    std::string rom;
    int height = 0, width = 0;
    int num_actions = 0;
    ale::Action actions[kMaxActions];
    ColumnTaps columns;
    std::vector<AreaWeight> rows;
};

}  // namespace

typedef struct AtariEnv {
    shoal_env base;
    // Parameters (written by the core before init).
    const char* rom;
    int32_t frame_skip;
    int32_t noop_max;
    int32_t screen_size;
    int32_t stack_size;
    int32_t terminal_on_life_loss;
    int32_t reward_clipping;
    int32_t full_action_space;
    int32_t max_num_frames_per_episode;
    float repeat_action_probability;
    // State.
    ale::ALEInterface* ale;
    const Game* game;
    uint8_t* screens[2];  // the last two grayscale frames (Gymnasium's obs_buffer)
    uint8_t* stack;       // stack_size resized frames, oldest first from `head`
    float* row_sums;      // the resize's per-row buffers (OpenCV's buf and sum)
    int32_t head;
    int32_t lives;
    ale::Action previous;  // the action of the last frame (sticky actions)
    std::vector<unsigned char>* gray;
} AtariEnv;

namespace {

const AtariEnv& params_of(const void* params) {
    return *static_cast<const AtariEnv*>(params);
}

// OpenCV's ResizeArea_Invoker for one channel of uint8: per source row, each output column's taps summed in
// order from 0 (OpenCV's buf), then the rows weighted into the output row's sums; rounded to nearest even.
void resize_area(const Game& game, const uint8_t* source, uint8_t* target, int size, float* sums) {
    float* buf = sums;
    float* sum = sums + size;
    std::fill(sum, sum + size, 0.0f);
    const int taps = game.columns.taps;
    const int* columns = game.columns.source.data();
    const float* alphas = game.columns.alpha.data();
    int previous_row = game.rows.empty() ? 0 : game.rows[0].target;
    for (const AreaWeight& row : game.rows) {
        const uint8_t* line = source + size_t(row.source) * size_t(game.width);
        std::fill(buf, buf + size, 0.0f);
        for (int k = 0; k < taps; ++k) {
            const int* at = columns + size_t(k) * size_t(size);
            const float* alpha = alphas + size_t(k) * size_t(size);
            for (int x = 0; x < size; ++x) buf[x] += float(line[at[x]]) * alpha[x];
        }
        const float beta = row.alpha;
        if (row.target != previous_row) {
            uint8_t* out = target + size_t(previous_row) * size_t(size);
            for (int x = 0; x < size; ++x) {
                out[x] = uint8_t(std::clamp(int(std::nearbyint(sum[x])), 0, 255));
                sum[x] = beta * buf[x];
            }
            previous_row = row.target;
        } else {
            for (int x = 0; x < size; ++x) sum[x] += beta * buf[x];
        }
    }
    uint8_t* out = target + size_t(previous_row) * size_t(size);
    for (int x = 0; x < size; ++x) out[x] = uint8_t(std::clamp(int(std::nearbyint(sum[x])), 0, 255));
}

size_t frame_bytes(const AtariEnv* env) {
    return size_t(env->screen_size) * size_t(env->screen_size);
}

void grayscale(AtariEnv* env, uint8_t* out) {
    env->ale->getScreenGrayscale(*env->gray);
    std::memcpy(out, env->gray->data(), env->gray->size());
}

// The stack as the observation: slots head..stack_size-1, then 0..head-1 (oldest first).
void write_stack(AtariEnv* env) {
    const size_t bytes = frame_bytes(env);
    auto* obs = static_cast<uint8_t*>(env->base.observations);
    const size_t older = size_t(env->stack_size - env->head) * bytes;
    std::memcpy(obs, env->stack + size_t(env->head) * bytes, older);
    std::memcpy(obs + older, env->stack, size_t(env->head) * bytes);
}

// Max-pools the two screens into screens[0] (in place, as Gymnasium does), resizes it over the
// stack's oldest slot, which becomes the newest.
void push_frame(AtariEnv* env, bool pool) {
    if (pool) {
        const size_t pixels = size_t(env->game->height) * size_t(env->game->width);
        uint8_t* first = env->screens[0];
        const uint8_t* second = env->screens[1];
        for (size_t i = 0; i < pixels; ++i) first[i] = std::max(first[i], second[i]);
    }
    uint8_t* slot = env->stack + size_t(env->head) * frame_bytes(env);
    resize_area(*env->game, env->screens[0], slot, env->screen_size, env->row_sums);
    env->head = (env->head + 1) % env->stack_size;
}

void seed_ale(AtariEnv* env) {
    const uint64_t high = shoal_rng_next(&env->base.rng);
    const uint64_t entropy = (high << 32) | shoal_rng_next(&env->base.rng);
    uint32_t state[2];
    SeedSequence(entropy).generate_state(state, 2);
    env->ale->setInt("random_seed", int32_t(state[1]));
    env->ale->loadROM(env->game->rom);
}

int atari_init(AtariEnv* env) {
    env->game = static_cast<const Game*>(env->base.shared);
    try {
        env->ale = new ale::ALEInterface();
        env->ale->setInt("random_seed", 0);
        env->ale->setFloat("repeat_action_probability", 0.0f);  // sticky actions draw from the env's stream
        env->ale->setInt("max_num_frames_per_episode", env->max_num_frames_per_episode);
        // No loadROM here: every env's first reset follows a vector reset, which seeds ALE and loads it.
        const size_t pixels = size_t(env->game->height) * size_t(env->game->width);
        env->gray = new std::vector<unsigned char>(pixels);
        env->screens[0] = new uint8_t[pixels]();
        env->screens[1] = new uint8_t[pixels]();
        env->stack = new uint8_t[size_t(env->stack_size) * frame_bytes(env)]();
        env->row_sums = new float[2 * size_t(env->screen_size)]();
    } catch (const std::exception& error) {
        shoal_env_fail(&env->base, "ALE could not start %s: %s", env->game->rom.c_str(), error.what());
        return 1;
    }
    return 0;
}

bool episode_over(const AtariEnv* env) {
    return env->ale->game_over(false) || env->ale->game_truncated();
}

void atari_reset(AtariEnv* env) {
    const bool seeded = !env->base.terminals[0] && !env->base.truncations[0];
    try {
        if (seeded) seed_ale(env);
        env->ale->reset_game();
        const int noops = env->noop_max > 0 ? 1 + int(shoal_rng_below(&env->base.rng, uint32_t(env->noop_max))) : 0;
        for (int i = 0; i < noops; ++i) {
            env->ale->act(env->game->actions[0]);
            if (episode_over(env)) {
                if (seeded) seed_ale(env);
                env->ale->reset_game();
            }
        }
    } catch (const std::exception& error) {
        shoal_env_fail(&env->base, "ALE failed to reset %s: %s", env->game->rom.c_str(), error.what());
        return;
    }
    env->previous = ale::PLAYER_A_NOOP;
    env->lives = env->ale->lives();
    grayscale(env, env->screens[0]);
    std::memset(env->screens[1], 0, size_t(env->game->height) * size_t(env->game->width));
    env->head = 0;
    push_frame(env, false);
    const size_t bytes = frame_bytes(env);
    for (int i = 1; i < env->stack_size; ++i) std::memcpy(env->stack + size_t(i) * bytes, env->stack, bytes);
    env->head = 0;
    write_stack(env);
}

int atari_step(AtariEnv* env) {
    const ale::Action chosen = env->game->actions[static_cast<const int32_t*>(env->base.actions)[0]];
    const double sticky = env->repeat_action_probability;
    double reward = 0.0;
    bool terminated = false, truncated = false;
    for (int t = 0; t < env->frame_skip; ++t) {
        if (sticky <= 0.0 || shoal_rng_double(&env->base.rng) >= sticky) env->previous = chosen;
        reward += env->ale->act(env->previous);
        terminated = env->ale->game_over(false);
        if (env->terminal_on_life_loss) {
            const int lives = env->ale->lives();
            terminated = terminated || lives < env->lives;
            env->lives = lives;
        }
        truncated = env->ale->game_truncated();
        if (terminated || truncated) break;
        if (t == env->frame_skip - 2)
            grayscale(env, env->screens[1]);
        else if (t == env->frame_skip - 1)
            grayscale(env, env->screens[0]);
    }
    push_frame(env, env->frame_skip > 1);
    write_stack(env);
    env->base.rewards[0] = env->reward_clipping ? float((reward > 0) - (reward < 0)) : float(reward);
    env->base.terminals[0] = terminated;
    env->base.truncations[0] = truncated;
    return terminated || truncated ? SHOAL_EPISODE_OVER : SHOAL_EPISODE_RUNNING;
}

void atari_close(void* opaque) {
    auto* env = static_cast<AtariEnv*>(opaque);
    delete env->ale;
    delete env->gray;
    delete[] env->screens[0];
    delete[] env->screens[1];
    delete[] env->stack;
    delete[] env->row_sums;
}

void release_game(void* shared) {
    delete static_cast<Game*>(shared);
}

int atari_configure(shoal_env_spec* spec, const void* params, char* error) {
    const AtariEnv& p = params_of(params);
    if (p.screen_size > kMaxScreen || p.stack_size > kMaxStack) {
        std::snprintf(error, SHOAL_ERROR_CAPACITY, "screen_size <= %d and stack_size <= %d", kMaxScreen, kMaxStack);
        return 1;
    }
    auto game = std::make_unique<Game>();
    try {
        ale::Logger::setMode(ale::Logger::Error);
        // loadROM ends the process (std::exit) on a ROM ALE has no single-player wrapper for: asked first.
        if (!ale::ALEInterface::isSupportedROM(p.rom ? p.rom : "")) {
            std::snprintf(error, SHOAL_ERROR_CAPACITY, "ALE does not support ROM %s (unknown, or multi-player only)",
                          p.rom ? p.rom : "(none)");
            return 1;
        }
        ale::ALEInterface ale;
        ale.setInt("random_seed", 0);
        ale.loadROM(p.rom ? p.rom : "");
        const ale::ActionVect actions = p.full_action_space ? ale.getLegalActionSet() : ale.getMinimalActionSet();
        game->rom = p.rom;
        game->height = int(ale.getScreen().height());
        game->width = int(ale.getScreen().width());
        game->num_actions = int(std::min<size_t>(actions.size(), kMaxActions));
        std::copy(actions.begin(), actions.begin() + game->num_actions, game->actions);
    } catch (const std::exception& failure) {
        std::snprintf(error, SHOAL_ERROR_CAPACITY, "ALE cannot load ROM %s: %s", p.rom ? p.rom : "(none)",
                      failure.what());
        return 1;
    }
    if (p.screen_size > game->height || p.screen_size > game->width) {
        std::snprintf(error, SHOAL_ERROR_CAPACITY,
                      "screen_size %d is larger than the %dx%d screen (shoal resizes down)", p.screen_size,
                      game->height, game->width);
        return 1;
    }
    game->columns = ColumnTaps(area_weights(game->width, p.screen_size), p.screen_size);
    game->rows = area_weights(game->height, p.screen_size);
    spec->obs_shape[0] = p.stack_size;
    spec->obs_shape[1] = p.screen_size;
    spec->obs_shape[2] = p.screen_size;
    spec->action_nvec[0] = game->num_actions;
    spec->shared = game.release();
    spec->release_shared = release_game;
    return 0;
}

const shoal_param atari_params[] = {
    SHOAL_PARAM_STRING(AtariEnv, rom, "", "path of the game's ROM file (ale-py's roms folder)"),
    {"frame_skip", SHOAL_PARAM_INT32, offsetof(AtariEnv, frame_skip), 4, 1, 1000,
     "emulated frames per agent step (the action repeated)", 0, 0, nullptr},
    {"noop_max", SHOAL_PARAM_INT32, offsetof(AtariEnv, noop_max), 30, 0, 100000,
     "a reset runs 1..noop_max NOOP frames (0: none)", 0, 0, nullptr},
    {"screen_size", SHOAL_PARAM_INT32, offsetof(AtariEnv, screen_size), 84, 1, kMaxScreen,
     "side of the square observation frame (INTER_AREA resize)", SHOAL_PARAM_PER_VECTOR, 0, nullptr},
    {"stack_size", SHOAL_PARAM_INT32, offsetof(AtariEnv, stack_size), 4, 1, kMaxStack,
     "frames stacked in an observation, oldest first", SHOAL_PARAM_PER_VECTOR, 0, nullptr},
    {"terminal_on_life_loss", SHOAL_PARAM_BOOL, offsetof(AtariEnv, terminal_on_life_loss), 0, 0, 1,
     "a lost life ends the episode (and the reset restarts the game), as Gymnasium's option", 0, 0, nullptr},
    {"reward_clipping", SHOAL_PARAM_BOOL, offsetof(AtariEnv, reward_clipping), 0, 0, 1,
     "rewards are their sign (-1, 0, 1)", 0, 0, nullptr},
    {"full_action_space", SHOAL_PARAM_BOOL, offsetof(AtariEnv, full_action_space), 0, 0, 1,
     "all 18 actions instead of the game's minimal set", SHOAL_PARAM_PER_VECTOR, 0, nullptr},
    {"max_num_frames_per_episode", SHOAL_PARAM_INT32, offsetof(AtariEnv, max_num_frames_per_episode), 108000, 0,
     2147483647, "emulated frames after which an episode is truncated (0: no limit)", 0, 0, nullptr},
    {"repeat_action_probability", SHOAL_PARAM_FLOAT32, offsetof(AtariEnv, repeat_action_probability), 0.25, 0, 1,
     "each frame keeps the previous frame's action with this probability (sticky actions)", 0, 0, nullptr},
};

}  // namespace

SHOAL_ENV_CALLBACKS(atari, AtariEnv, atari_init, atari_reset, atari_step)

// In the struct's order (C++ designated initializers must be).
static const shoal_env_spec atari_spec = {
    .abi_version = SHOAL_ABI_VERSION,
    .name = "atari",
    .doc = "An Atari 2600 game on ALE with Gymnasium's AtariPreprocessing and frame stack",
    .env_size = sizeof(AtariEnv),
    .env_align = alignof(AtariEnv),
    .num_agents = 1,
    .obs_dtype = SHOAL_UINT8,
    .obs_ndim = 3,
    .obs_shape = {4, 84, 84},
    .obs_low = 0,
    .obs_high = 255,
    .action_kind = SHOAL_ACTION_DISCRETE,
    .action_dims = 1,
    .action_nvec = {18},
    .max_episode_steps = 0,
    .params = atari_params,
    .num_params = SHOAL_COUNT(atari_params),
    .init = shoal__atari_init,
    .reset = shoal__atari_reset,
    .step = shoal__atari_step,
    .close = atari_close,
    .class_name = "AtariEnv",
    .step_range = shoal__atari_step_range,
    .configure = atari_configure,
};

SHOAL_EXPORT_ENV(atari, atari_spec)

// For the tests: the env's INTER_AREA resize of one image, and the ALE seed it derives from 64 bits.
SHOAL_EXTERN_C SHOAL_VISIBLE void shoal_atari_resize_area(const uint8_t* source, int32_t height, int32_t width,
                                                          uint8_t* target, int32_t size) {
    Game game;
    game.height = height;
    game.width = width;
    game.columns = ColumnTaps(area_weights(width, size), size);
    game.rows = area_weights(height, size);
    std::vector<float> sums(2 * size_t(size));
    resize_area(game, source, target, size, sums.data());
}

SHOAL_EXTERN_C SHOAL_VISIBLE int32_t shoal_atari_ale_seed(uint64_t entropy) {
    uint32_t state[2];
    SeedSequence(entropy).generate_state(state, 2);
    return int32_t(state[1]);
}

// bench/bench_atari.py's limit: these callbacks in a bare loop on the calling thread, with what the core
// does around them that the semantics need (flags zeroed, same-step reset) and nothing else: `steps`
// steps of `num_envs` envs after 20 warm-up steps, actions drawn in advance; env steps per second, or a
// negative number if the game does not load.
SHOAL_EXTERN_C SHOAL_VISIBLE double shoal_atari_limit_sps(const char* rom, int32_t num_envs, int64_t steps,
                                                          int32_t frame_skip, int32_t noop_max,
                                                          float repeat_action_probability, int32_t reward_clipping) {
    AtariEnv params{};
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
