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
//
// Beside this file: area_resize.hpp/.cpp (OpenCV's INTER_AREA resize), seed_sequence.hpp (numpy's
// SeedSequence); shoal.atari.build compiles every .cpp here into the env library, keyed by every file
// here. bench/native/atari_limit.cpp runs these callbacks in a bare loop (bench/bench_atari.py's limit).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "ale/ale_interface.hpp"
#include "area_resize.hpp"
#include "seed_sequence.hpp"
#include "shoal/env.h"

namespace {

using shoal_atari::AreaResize;
using shoal_atari::kRowBlock;
using shoal_atari::SeedSequence;

constexpr int kMaxActions = 18;
constexpr int kMaxScreen = 1024;
constexpr int kMaxStack = 64;

enum Rules : int32_t { kGymnasium = 0, kAleVector = 1, kEnvPool = 2 };

// What every env of a vector shares, read-only: the game and the resize's weights.
struct Game {
    std::string rom;
    int num_actions = 0;
    ale::Action actions[kMaxActions];
    bool has_fire = false;  // the action set holds FIRE (a FIRE reset presses it)
    AreaResize resize;      // the kept screens (height x width, column by column) to screen_size
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

size_t frame_bytes(const AtariEnv* env) {
    return size_t(env->screen_size) * size_t(env->screen_size);
}

// ALE's grayscale of the screen (its palette's, as getScreenGrayscale gives it), stored column by column:
// kRowBlock rows at a time, each column's kRowBlock bytes written at once.
void grayscale(AtariEnv* env, uint8_t* out) {
    static_assert(kRowBlock == 4, "a block of rows is written as four bytes");
    const AreaResize& game = env->game->resize;
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
        const size_t pixels = env->game->resize.source_bytes();
        uint8_t* first = env->screens[0];
        const uint8_t* second = env->screens[1];
        for (size_t i = 0; i < pixels; ++i) first[i] = std::max(first[i], second[i]);
    }
    uint8_t* slot = env->stack + size_t(env->head) * frame_bytes(env);
    env->game->resize.resize(env->screens[0], slot, env->row_sums);
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
        const size_t pixels = env->game->resize.source_bytes();
        env->screens[0] = new uint8_t[pixels]();
        env->screens[1] = new uint8_t[pixels]();
        env->stack = new uint8_t[size_t(env->stack_size) * frame_bytes(env)]();
        env->row_sums = new float[env->game->resize.buffer_floats()]();
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
    std::memset(env->screens[1], 0, env->game->resize.source_bytes());
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
    int height = 0, width = 0;
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
        height = int(ale.getScreen().height());
        width = int(ale.getScreen().width());
        game->num_actions = int(std::min<size_t>(actions.size(), kMaxActions));
        std::copy(actions.begin(), actions.begin() + game->num_actions, game->actions);
        game->has_fire = std::find(game->actions, game->actions + game->num_actions, ale::PLAYER_A_FIRE) !=
                         game->actions + game->num_actions;
    } catch (const std::exception& failure) {
        std::snprintf(error, SHOAL_ERROR_CAPACITY, "ALE cannot load ROM %s: %s", p.rom ? p.rom : "(none)",
                      failure.what());
        return 1;
    }
    if (p.screen_size > height || p.screen_size > width) {
        std::snprintf(error, SHOAL_ERROR_CAPACITY,
                      "screen_size %d is larger than the %dx%d screen (shoal resizes down)", p.screen_size, height,
                      width);
        return 1;
    }
    game->resize = AreaResize(height, width, p.screen_size);
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
    const AreaResize resize(height, width, size);
    std::vector<uint8_t> columns(resize.source_bytes());
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
            columns[size_t(x) * size_t(resize.column_stride) + size_t(y)] =
                source[size_t(y) * size_t(width) + size_t(x)];
    std::vector<float> buffer(resize.buffer_floats());
    resize.resize(columns.data(), target, buffer.data());
}

SHOAL_EXTERN_C SHOAL_VISIBLE int32_t shoal_atari_ale_seed(uint64_t entropy) {
    uint32_t state[2];
    SeedSequence(entropy).generate_state(state, 2);
    return int32_t(state[1]);
}
