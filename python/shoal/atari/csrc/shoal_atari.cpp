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
// `rules` selects whose Atari it is where the libraries differ (python/shoal/atari/presets.py):
//   ale_vector  (ale-py's AtariVectorEnv) a reset presses FIRE (use_fire_reset, where the game has it)
//          before 0..noop_max-1 NOOP frames less the FIRE; the stack padded with zeros; the frame limit
//          counts the frames after the reset; a life loss ends the skip (terminal_on_life_loss).
//   envpool  a reset runs 1..noop_max NOOP frames less the FIRE, then FIRE; the frame that ends an
//          episode is captured and only a full skip of 2 frames or more is max-pooled; a life loss is
//          seen after the skip, and the reset that follows it continues the game (EnvPool's episodic_life).
// A reset that follows shoal's vector reset (the core zeroed the env's terminals and truncations;
// an autoreset follows a step that set one of them) seeds ALE as ale-py's reset(seed=X) does, with
// X the env's first two 32-bit draws: random_seed = SeedSequence(X).generate_state(2)[1], then the
// ROM loaded again. Autoresets continue ALE's own random state, as Gymnasium's autoreset does.
#include <algorithm>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#include <xmmintrin.h>
#endif

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

enum Rules : int32_t { kGymnasium = 0, kAleVector = 1, kEnvPool = 2 };

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

// OpenCV's test for its integer fast path (resizeAreaFast): the scale computed as its resize() computes it
// (1 / (target / source) in double) lands on an integer. Not every divisor does: 210 to 2 gives
// 104.99999999999999, and takes the general path. 0 where the general path applies.
int area_fast_scale(int source, int target) {
    const double scale = 1.0 / (double(target) / double(source));
    const double whole = std::nearbyint(scale);
    return std::abs(scale - whole) < DBL_EPSILON ? int(whole) : 0;
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
    int column_stride = 0;  // a column of a kept screen: `height` rounded up to whole row blocks
    int num_actions = 0;
    ale::Action actions[kMaxActions];
    bool has_fire = false;  // the action set holds FIRE (a FIRE reset presses it)
    ColumnTaps columns;
    std::vector<AreaWeight> rows;
    int fast_x = 0, fast_y = 0;  // OpenCV's integer scales where it takes its fast path (both, or neither)
};

void set_resize(Game& game, int size) {
    game.columns = ColumnTaps(area_weights(game.width, size), size);
    game.rows = area_weights(game.height, size);
    game.fast_x = area_fast_scale(game.width, size);
    game.fast_y = area_fast_scale(game.height, size);
    if (game.fast_x == 0 || game.fast_y == 0) game.fast_x = game.fast_y = 0;
}

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
    int32_t use_fire_reset;
    int32_t rules;
    // State.
    ale::ALEInterface* ale;
    const Game* game;
    uint8_t* screens[2];   // the last two grayscale frames (Gymnasium's obs_buffer), column by column
    uint8_t* stack;        // stack_size resized frames, oldest first from `head`
    float* row_sums;       // the resize's buffers: each source row resized across, then the output row's sums
    uint8_t gray_of[256];  // ALE's grayscale of each palette index (the loaded game's palette)
    int32_t head;
    int32_t lives;
    int32_t episode_frames;  // the ale_vector and envpool rules' frame limit count
    ale::Action previous;    // the action of the last frame (sticky actions)
} AtariEnv;

namespace {

const AtariEnv& params_of(const void* params) {
    return *static_cast<const AtariEnv*>(params);
}

constexpr int kRowBlock = 4;  // source rows resized across at once

int column_stride(int height) {
    return (height + kRowBlock - 1) / kRowBlock * kRowBlock;
}

size_t screen_bytes(const Game& game) {
    return size_t(game.width) * size_t(game.column_stride);
}

size_t resize_buffer_floats(const Game& game, int size) {
    return size_t(game.column_stride) * size_t(size) + size_t(size);
}

// The horizontal pass of kRowBlock source rows from `first`: across[row][x] = each output column's taps
// summed in order from 0 (OpenCV's buf). The screen is stored column by column, so a tap's pixel in the
// block's rows is kRowBlock consecutive bytes: the rows go in the lanes, each lane in OpenCV's order.
void resize_rows_across(const Game& game, const uint8_t* columns_first, int first, int size, float* across) {
    const int taps = game.columns.taps;
    const int* sources = game.columns.source.data();
    const float* alphas = game.columns.alpha.data();
    const size_t stride = size_t(game.column_stride);
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
void resize_area_fast(const Game& game, const uint8_t* screen, uint8_t* target, int size) {
    const int sx = game.fast_x, sy = game.fast_y;
    const float scale = 1.f / float(sx * sy);
    const size_t stride = size_t(game.column_stride);
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

// OpenCV's ResizeArea_Invoker for one channel of uint8 (or its fast path, where OpenCV takes it): every
// source row resized across once, then the rows weighted into each output row's sums in order; rounded to
// nearest even. `screen` is column by column (column_stride bytes each); `buffer` holds resize_buffer_floats.
void resize_area(const Game& game, const uint8_t* screen, uint8_t* target, int size, float* buffer) {
    if (game.fast_x != 0) {
        resize_area_fast(game, screen, target, size);
        return;
    }
    float* across = buffer;
    float* sum = buffer + size_t(game.column_stride) * size_t(size);
    for (int first = 0; first < game.height; first += kRowBlock)
        resize_rows_across(game, screen + first, first, size, across);
    std::fill(sum, sum + size, 0.0f);
    int previous_row = game.rows.empty() ? 0 : game.rows[0].target;
    for (const AreaWeight& row : game.rows) {
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

size_t frame_bytes(const AtariEnv* env) {
    return size_t(env->screen_size) * size_t(env->screen_size);
}

// ALE's grayscale of the screen (its palette's, as getScreenGrayscale gives it), stored column by column:
// kRowBlock rows at a time, each column's kRowBlock bytes written at once.
void grayscale(AtariEnv* env, uint8_t* out) {
    static_assert(kRowBlock == 4, "a block of rows is written as four bytes");
    const Game& game = *env->game;
    const uint8_t* screen = env->ale->getScreen().getArray();
    const uint8_t* gray = env->gray_of;
    const size_t stride = size_t(game.column_stride), width = size_t(game.width);
    int y = 0;
    for (; y + kRowBlock <= game.height; y += kRowBlock) {
        const uint8_t* row = screen + size_t(y) * width;
        for (size_t x = 0; x < width; ++x) {
            const uint8_t bytes[kRowBlock] = {gray[row[x]], gray[row[x + width]], gray[row[x + 2 * width]],
                                              gray[row[x + 3 * width]]};
            std::memcpy(out + x * stride + size_t(y), bytes, sizeof bytes);
        }
    }
    for (; y < game.height; ++y) {
        const uint8_t* row = screen + size_t(y) * width;
        for (size_t x = 0; x < width; ++x) out[x * stride + size_t(y)] = gray[row[x]];
    }
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
        const size_t pixels = screen_bytes(*env->game);
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
    uint8_t indices[256];
    for (int i = 0; i < 256; ++i) indices[i] = uint8_t(i);
    env->ale->theOSystem->colourPalette().applyPaletteGrayscale(env->gray_of, indices, 256);
}

int atari_init(AtariEnv* env) {
    env->game = static_cast<const Game*>(env->base.shared);
    try {
        env->ale = new ale::ALEInterface();
        env->ale->setInt("random_seed", 0);
        env->ale->setFloat("repeat_action_probability", 0.0f);  // sticky actions draw from the env's stream
        // Gymnasium's frame limit is ALE's own (counted from reset_game); the other rules count themselves.
        env->ale->setInt("max_num_frames_per_episode", env->rules == kGymnasium ? env->max_num_frames_per_episode : 0);
        // No loadROM here: every env's first reset follows a vector reset, which seeds ALE and loads it.
        const size_t pixels = screen_bytes(*env->game);
        env->screens[0] = new uint8_t[pixels]();
        env->screens[1] = new uint8_t[pixels]();
        env->stack = new uint8_t[size_t(env->stack_size) * frame_bytes(env)]();
        env->row_sums = new float[resize_buffer_floats(*env->game, env->screen_size)]();
    } catch (const std::exception& error) {
        shoal_env_fail(&env->base, "ALE could not start %s: %s", env->game->rom.c_str(), error.what());
        return 1;
    }
    return 0;
}

bool episode_over(const AtariEnv* env) {
    return env->ale->game_over(false) || env->ale->game_truncated();
}

bool frame_limit_reached(const AtariEnv* env) {
    return env->max_num_frames_per_episode > 0 && env->episode_frames >= env->max_num_frames_per_episode;
}

// Under the envpool rules a reset after a life loss (the game neither over nor at its limit) goes on with
// the game.
bool continues_after_life_loss(const AtariEnv* env, bool seeded) {
    return env->rules == kEnvPool && env->terminal_on_life_loss && !seeded && !env->ale->game_over(false) &&
           !frame_limit_reached(env);
}

// NOOP frames after a reset: Gymnasium's and EnvPool's 1..noop_max, ale-py's vector's 0..noop_max-1; a
// FIRE reset's press counts as one of them (ale-py's vector and EnvPool).
int noop_frames(AtariEnv* env, bool fire) {
    if (env->noop_max <= 0) return 0;
    const int first = env->rules == kAleVector ? 0 : 1;
    return std::max(0, first + int(shoal_rng_below(&env->base.rng, uint32_t(env->noop_max))) - int(fire));
}

// ALE's part of a reset; false when it went on with the game (the stack keeps its frames).
bool reset_ale(AtariEnv* env, bool seeded) {
    const bool fire = env->rules != kGymnasium && env->use_fire_reset && env->game->has_fire;
    bool new_game = !continues_after_life_loss(env, seeded);
    if (new_game) {
        if (seeded) seed_ale(env);
        env->ale->reset_game();
        env->episode_frames = 0;  // a game over among the NOOPs below keeps the count, as EnvPool's does
    }
    if (fire && env->rules == kAleVector) env->ale->act(ale::PLAYER_A_FIRE);
    // Gymnasium's NOOP is action 0 of the env's action set; the vectors press ALE's NOOP itself.
    const ale::Action noop = env->rules == kGymnasium ? env->game->actions[0] : ale::PLAYER_A_NOOP;
    for (int i = noop_frames(env, fire); i > 0; --i) {
        env->ale->act(noop);
        if (episode_over(env)) {
            if (seeded && env->rules == kGymnasium) seed_ale(env);  // Gymnasium resets with the seed again
            env->ale->reset_game();
            new_game = true;
        }
    }
    if (fire && env->rules == kEnvPool) env->ale->act(ale::PLAYER_A_FIRE);
    return new_game;
}

void atari_reset(AtariEnv* env) {
    const bool seeded = !env->base.terminals[0] && !env->base.truncations[0];
    bool new_game = true;
    try {
        new_game = reset_ale(env, seeded);
    } catch (const std::exception& error) {
        shoal_env_fail(&env->base, "ALE failed to reset %s: %s", env->game->rom.c_str(), error.what());
        return;
    }
    env->previous = ale::PLAYER_A_NOOP;
    env->lives = env->ale->lives();
    grayscale(env, env->screens[0]);
    std::memset(env->screens[1], 0, screen_bytes(*env->game));
    if (!new_game) {  // the stack keeps the frames before the life loss
        push_frame(env, false);
        write_stack(env);
        return;
    }
    env->head = 0;
    push_frame(env, false);
    const size_t bytes = frame_bytes(env);
    if (env->rules == kAleVector) {  // zeros before the reset frame
        std::memset(env->stack + bytes, 0, size_t(env->stack_size - 1) * bytes);
    } else {  // the reset frame repeated
        for (int i = 1; i < env->stack_size; ++i) std::memcpy(env->stack + size_t(i) * bytes, env->stack, bytes);
        env->head = 0;
    }
    write_stack(env);
}

ale::Action frame_action(AtariEnv* env, ale::Action chosen) {
    const double sticky = env->repeat_action_probability;
    if (sticky <= 0.0 || shoal_rng_double(&env->base.rng) >= sticky) env->previous = chosen;
    return env->previous;
}

float clipped(const AtariEnv* env, double reward) {
    return env->reward_clipping ? float((reward > 0) - (reward < 0)) : float(reward);
}

// Gymnasium's AtariPreprocessing and ale-py's vector: a frame that ends the episode ends the skip before
// its screen is kept; the last two screens are max-pooled.
int step_gymnasium(AtariEnv* env, ale::Action chosen) {
    double reward = 0.0;
    bool terminated = false, truncated = false;
    const int lives_before = env->lives;
    for (int t = 0; t < env->frame_skip; ++t) {
        reward += env->ale->act(frame_action(env, chosen));
        terminated = env->ale->game_over(false);
        const int lives = env->ale->lives();
        if (env->rules == kAleVector) {
            ++env->episode_frames;
            terminated = terminated || (env->terminal_on_life_loss && lives < lives_before && lives > 0);
            truncated = frame_limit_reached(env);
        } else {
            terminated = terminated || (env->terminal_on_life_loss && lives < env->lives);
            env->lives = lives;
            truncated = env->ale->game_truncated();
        }
        if (terminated || truncated) break;
        if (t == env->frame_skip - 2)
            grayscale(env, env->screens[1]);
        else if (t == env->frame_skip - 1)
            grayscale(env, env->screens[0]);
    }
    env->lives = env->ale->lives();
    push_frame(env, env->frame_skip > 1);
    write_stack(env);
    env->base.rewards[0] = clipped(env, reward);
    env->base.terminals[0] = terminated;
    env->base.truncations[0] = env->rules == kAleVector ? truncated && !terminated : truncated;
    return terminated || truncated ? SHOAL_EPISODE_OVER : SHOAL_EPISODE_RUNNING;
}

// EnvPool's: the frame that ends the game is kept too, only a full skip of 2 frames or more is max-pooled (one
// frame is that frame, as EnvPool and Gymnasium give it), and a life loss is seen after the skip; its step
// limit counted as the frames of the steps since the game's reset.
int step_envpool(AtariEnv* env, ale::Action chosen) {
    double reward = 0.0;
    bool game_over = false;
    int left = env->frame_skip;
    for (; left > 0 && !game_over; --left) {
        reward += env->ale->act(frame_action(env, chosen));
        game_over = env->ale->game_over(false);
        if (left <= 2) grayscale(env, env->screens[env->frame_skip == 1 ? 0 : 2 - left]);
    }
    push_frame(env, left == 0 && env->frame_skip > 1);
    write_stack(env);
    env->episode_frames += env->frame_skip;
    const int lives = env->ale->lives();
    const bool life_lost = env->terminal_on_life_loss && 0 < lives && lives < env->lives;
    const bool truncated = frame_limit_reached(env);
    env->lives = lives;
    env->base.rewards[0] = clipped(env, reward);
    env->base.terminals[0] = (game_over || life_lost) && !truncated;
    env->base.truncations[0] = truncated;
    return game_over || life_lost || truncated ? SHOAL_EPISODE_OVER : SHOAL_EPISODE_RUNNING;
}

int atari_step(AtariEnv* env) {
    const ale::Action chosen = env->game->actions[static_cast<const int32_t*>(env->base.actions)[0]];
    return env->rules == kEnvPool ? step_envpool(env, chosen) : step_gymnasium(env, chosen);
}

void atari_close(void* opaque) {
    auto* env = static_cast<AtariEnv*>(opaque);
    delete env->ale;
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
        game->column_stride = column_stride(game->height);
        game->num_actions = int(std::min<size_t>(actions.size(), kMaxActions));
        std::copy(actions.begin(), actions.begin() + game->num_actions, game->actions);
        game->has_fire = std::find(game->actions, game->actions + game->num_actions, ale::PLAYER_A_FIRE) !=
                         game->actions + game->num_actions;
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
    set_resize(*game, p.screen_size);
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
     2147483647,
     "emulated frames after which an episode is truncated (0: no limit); counted from ALE's reset (gymnasium), "
     "after the reset's own frames (ale_vector), or as frame_skip per step since the game's reset (envpool)",
     0, 0, nullptr},
    {"repeat_action_probability", SHOAL_PARAM_FLOAT32, offsetof(AtariEnv, repeat_action_probability), 0.25, 0, 1,
     "each frame keeps the previous frame's action with this probability (sticky actions)", 0, 0, nullptr},
    {"use_fire_reset", SHOAL_PARAM_BOOL, offsetof(AtariEnv, use_fire_reset), 0, 0, 1,
     "a reset presses FIRE where the game has it (ale_vector: before the NOOPs, envpool: after; not gymnasium)", 0, 0,
     nullptr},
    {"rules", SHOAL_PARAM_INT32, offsetof(AtariEnv, rules), kGymnasium, kGymnasium, kEnvPool,
     "whose Atari where the libraries differ: 0 gymnasium, 1 ale_vector, 2 envpool (set by the preset)",
     SHOAL_PARAM_PER_VECTOR, 0, nullptr},
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
    game.column_stride = column_stride(height);
    set_resize(game, size);
    std::vector<uint8_t> columns(screen_bytes(game));
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
            columns[size_t(x) * size_t(game.column_stride) + size_t(y)] = source[size_t(y) * size_t(width) + size_t(x)];
    std::vector<float> buffer(resize_buffer_floats(game, size));
    resize_area(game, columns.data(), target, size, buffer.data());
}

SHOAL_EXTERN_C SHOAL_VISIBLE int32_t shoal_atari_ale_seed(uint64_t entropy) {
    uint32_t state[2];
    SeedSequence(entropy).generate_state(state, 2);
    return int32_t(state[1]);
}

// bench/bench_atari.py's limit: these callbacks in a bare loop on the calling thread, with what the core
// does around them that the semantics need (flags zeroed, same-step reset) and nothing else, under a
// preset's rules (with FIRE resets but Gymnasium's); `steps`
// steps of `num_envs` envs after 20 warm-up steps, actions drawn in advance; env steps per second, or a
// negative number if the game does not load.
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
