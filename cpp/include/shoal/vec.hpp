// shoal/vec.hpp — native env instances over caller-owned buffers.
//
// EnvArray owns the env structs of one vector and knows how to reset and step any contiguous
// range of them. It knows nothing about threads: the worker pool hands it disjoint ranges, and
// everything a range touches (env structs, buffer rows, per-env tallies) belongs to that range
// alone, so results never depend on how the envs are split between threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "shoal/detail/sync.hpp"
#include "shoal/env.h"
#include "shoal/errors.hpp"

namespace shoal {

/// Bytes per element of an observation dtype.
[[nodiscard]] inline size_t dtype_size(shoal_dtype dtype) {
    switch (dtype) {
        case SHOAL_FLOAT32: return 4;
        case SHOAL_UINT8: return 1;
        case SHOAL_INT8: return 1;
        case SHOAL_INT32: return 4;
        case SHOAL_FLOAT64: return 8;
    }
    throw UsageError("unknown observation dtype " + std::to_string(int(dtype)));
}

/// Elements of one agent's observation.
[[nodiscard]] inline size_t observation_size(const shoal_env_spec& spec) {
    size_t size = 1;
    for (int32_t d = 0; d < spec.obs_ndim; ++d) size *= size_t(spec.obs_shape[d]);
    return size;
}

/// Bytes of a parameter's field in the env struct.
[[nodiscard]] inline size_t param_size(shoal_param_type type) {
    switch (type) {
        case SHOAL_PARAM_INT32:
        case SHOAL_PARAM_FLOAT32:
        case SHOAL_PARAM_BOOL: return 4;
        case SHOAL_PARAM_FLOAT64: return 8;
        case SHOAL_PARAM_PAIR: return 16;
        case SHOAL_PARAM_TEXT: return sizeof(const char*);
    }
    return 0;
}

/// Values a parameter takes in a row of the parameter matrix (a PAIR two, a TEXT none: its text
/// is the vector's, in the spec copy's default_text).
[[nodiscard]] inline size_t param_columns(shoal_param_type type) noexcept {
    return type == SHOAL_PARAM_PAIR ? 2 : type == SHOAL_PARAM_TEXT ? 0 : 1;
}

/// Columns of the parameter matrix (one row per env).
[[nodiscard]] inline size_t param_columns(const shoal_env_spec& spec) noexcept {
    size_t columns = 0;
    for (int32_t p = 0; p < spec.num_params; ++p) columns += param_columns(spec.params[p].type);
    return columns;
}

/// Writes one env's parameters (`values`: a row of param_columns(spec) values; null = the defaults)
/// into its struct.
inline void write_params(const shoal_env_spec& spec, void* env, const double* values) noexcept {
    unsigned char* bytes = static_cast<unsigned char*>(env);
    size_t column = 0;
    for (int32_t p = 0; p < spec.num_params; ++p) {
        const shoal_param& param = spec.params[p];
        unsigned char* field = bytes + param.offset;
        const double value = values ? values[column] : param.default_value;
        switch (param.type) {
            case SHOAL_PARAM_INT32:
            case SHOAL_PARAM_BOOL: {
                const int32_t v = int32_t(value);
                std::memcpy(field, &v, sizeof v);
                break;
            }
            case SHOAL_PARAM_FLOAT32: {
                const float v = float(value);
                std::memcpy(field, &v, sizeof v);
                break;
            }
            case SHOAL_PARAM_FLOAT64: std::memcpy(field, &value, sizeof value); break;
            case SHOAL_PARAM_PAIR: {
                const double pair[2] = {value, values ? values[column + 1] : param.default_high};
                std::memcpy(field, pair, sizeof pair);
                break;
            }
            case SHOAL_PARAM_TEXT: {
                const char* text = param.default_text ? param.default_text : "";
                std::memcpy(field, &text, sizeof text);
                break;
            }
        }
        column += param_columns(param.type);
    }
}

/// Throws UsageError if the spec breaks the ABI contract of env.h.
inline void validate_spec(const shoal_env_spec& spec) {
    auto fail = [&](const std::string& what) {
        std::string name = spec.name ? spec.name : "<unnamed>";
        throw UsageError("native env spec '" + name + "': " + what);
    };
    if (spec.abi_version != SHOAL_ABI_VERSION)
        fail("built against SDK ABI " + std::to_string(spec.abi_version) + ", this shoal speaks " +
             std::to_string(SHOAL_ABI_VERSION) + "; rebuild the env against this shoal's headers");
    if (!spec.name) fail("name is missing");
    if (spec.env_size < sizeof(shoal_env))
        fail("env_size is smaller than shoal_env; is `shoal_env base` the first member?");
    if (spec.env_align == 0 || (spec.env_align & (spec.env_align - 1)) != 0) fail("env_align must be a power of two");
    if (!spec.init || !spec.reset || !spec.step) fail("init, reset and step callbacks are required");
    if (spec.take_log && !spec.step_range)
        fail("take_log needs the spec's own step_range (the core's loop tallies episodes in the core)");
    if (spec.num_agents < 1) fail("num_agents must be >= 1");
    (void)dtype_size(spec.obs_dtype);
    if (spec.obs_ndim < 1 || spec.obs_ndim > SHOAL_MAX_OBS_DIMS) fail("obs_ndim must be in [1, 3]");
    for (int32_t d = 0; d < spec.obs_ndim; ++d)
        if (spec.obs_shape[d] < 1) fail("obs_shape entries must be >= 1");
    if (spec.action_kind < SHOAL_ACTION_DISCRETE || spec.action_kind > SHOAL_ACTION_BOX) fail("unknown action_kind");
    if (spec.action_dims < 1 || spec.action_dims > SHOAL_MAX_ACTION_DIMS)
        fail("action_dims must be in [1, " + std::to_string(SHOAL_MAX_ACTION_DIMS) + "]");
    if (spec.action_kind == SHOAL_ACTION_DISCRETE && spec.action_dims != 1)
        fail("DISCRETE actions have action_dims == 1");
    if (spec.action_kind != SHOAL_ACTION_BOX)
        for (int32_t d = 0; d < spec.action_dims; ++d)
            if (spec.action_nvec[d] < 1) fail("action_nvec entries must be >= 1");
    if ((spec.action_lows == nullptr) != (spec.action_highs == nullptr))
        fail("action_lows and action_highs go together");
    if (spec.action_kind == SHOAL_ACTION_BOX && spec.action_lows) {
        for (int32_t d = 0; d < spec.action_dims; ++d) {
            const float low = spec.action_lows[d], high = spec.action_highs[d];
            if (!(low <= high))
                fail("action_lows[" + std::to_string(d) + "] > action_highs[" + std::to_string(d) + "]");
            // The fast check's box must lie inside every dimension's range (NaN: it accepts nothing).
            if (spec.action_low < low || spec.action_high > high)
                fail("action_low/action_high must lie inside every dimension's bounds");
        }
    } else if (spec.action_kind == SHOAL_ACTION_BOX && !(spec.action_low <= spec.action_high)) {
        fail("action_low > action_high");
    }
    if (spec.max_episode_steps < 0) fail("max_episode_steps must be >= 0");
    if (spec.num_params < 0 || (spec.num_params > 0 && !spec.params)) fail("params missing");
    for (int32_t p = 0; p < spec.num_params; ++p) {
        const shoal_param& param = spec.params[p];
        if (!param.name) fail("parameter " + std::to_string(p) + " has no name");
        const size_t size = param_size(param.type);
        if (size == 0) fail(std::string("parameter '") + param.name + "' has an unknown type");
        if (param.offset < sizeof(shoal_env) || param.offset + size > spec.env_size)
            fail(std::string("parameter '") + param.name + "' lies outside the env struct (after base)");
    }
    const int32_t max_stats = spec.take_log ? SHOAL_MAX_LOG_STATS : SHOAL_MAX_STATS;
    if (spec.num_stats < 0 || spec.num_stats > max_stats || (spec.num_stats > 0 && !spec.stat_names))
        fail("num_stats must be in [0, " + std::to_string(max_stats) + "] with stat_names" +
             (spec.take_log ? "" : " (up to " + std::to_string(SHOAL_MAX_LOG_STATS) + " with take_log)"));
}

/// Caller-owned buffers of a whole vector; rows = num_envs * num_agents, C-contiguous.
struct VecBuffers {
    void* observations = nullptr;
    void* final_observations = nullptr;
    void* actions = nullptr;
    float* rewards = nullptr;
    uint8_t* terminals = nullptr;
    uint8_t* truncations = nullptr;
    uint8_t* masks = nullptr;
};

/// Episodes finished by a range of envs since the log was last collected: sums over episodes.
struct EpisodeTally {
    double return_sum = 0;
    double length_sum = 0;
    double stat_sums[SHOAL_MAX_LOG_STATS] = {};
    uint64_t episodes = 0;

    void add(const EpisodeTally& part) noexcept {
        return_sum += part.return_sum;
        length_sum += part.length_sum;
        for (size_t s = 0; s < SHOAL_MAX_LOG_STATS; ++s) stat_sums[s] += part.stat_sums[s];
        episodes += part.episodes;
    }
};

/// Each env's episode sums, one array per quantity: collecting a log reads ~20 bytes per env
/// (not a whole EpisodeTally). Sums run in a fixed order over env indices (see take), so the log
/// never depends on the thread count.
class EpisodeTallies {
public:
    EpisodeTallies(size_t num_envs, size_t num_stats)
        : num_stats_(num_stats),
          returns_(num_envs),
          lengths_(num_envs),
          episodes_(num_envs),
          stats_(num_envs * num_stats) {}

    /// Points `range` at the tallies of its envs, from env `first` on (shoal_step_envs adds to them).
    void attach(shoal_range& range, size_t first) noexcept {
        range.return_sums = returns_.data() + first;
        range.length_sums = lengths_.data() + first;
        range.episode_counts = episodes_.data() + first;
        range.stat_sums = stats_.data() + first * num_stats_;
        range.num_stats = int32_t(num_stats_);
    }

    /// Sums and clears envs [begin, end), each quantity in one pass. Env begin + k adds to lane k % 4
    /// and the lanes are added last, (0 + 1) + (2 + 3): four independent chains of additions, so the
    /// sum is not bound by one addition's latency per env, in an order fixed by the range alone
    /// (the log never depends on the thread count). Clearing in the same pass reads each line once.
    [[nodiscard]] EpisodeTally take(size_t begin, size_t end) noexcept {
        EpisodeTally total;
        total.return_sum = take_sum(returns_.data(), begin, end, 1);
        total.length_sum = take_sum(lengths_.data(), begin, end, 1);
        for (size_t i = begin; i < end; ++i) total.episodes += std::exchange(episodes_[i], 0);
        for (size_t s = 0; s < num_stats_; ++s)
            total.stat_sums[s] = take_sum(stats_.data() + s, begin, end, num_stats_);
        return total;
    }

private:
    size_t num_stats_;
    std::vector<double> returns_, lengths_;
    std::vector<uint64_t> episodes_;
    std::vector<double> stats_;  // num_envs rows of num_stats

    /// The lane sum of values[i * stride] over [begin, end), those values cleared.
    static double take_sum(double* values, size_t begin, size_t end, size_t stride) noexcept {
        double lanes[4] = {0, 0, 0, 0};
        size_t i = begin;
        for (; i + 4 <= end; i += 4)
            for (size_t k = 0; k < 4; ++k) lanes[k] += std::exchange(values[(i + k) * stride], 0.0);
        for (size_t k = 0; i < end; ++i, ++k) lanes[k] += std::exchange(values[i * stride], 0.0);
        return (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    }
};

/// Episodes ended during one step, added to by every thread that steps a range of it: one counter
/// per cache line for each sixteenth of the envs, so that threads stepping different ranges do not
/// pull one line (and whatever shares it, such as the caller's locals) between their cores.
class EpisodeCounter {
public:
    explicit EpisodeCounter(size_t num_envs) noexcept : num_envs_(std::max<size_t>(num_envs, 1)) {}

    /// Adds the episodes that ended in a range starting at env `first`.
    void add(size_t first, uint64_t episodes) noexcept {
        shards_[first * kShards / num_envs_].count.fetch_add(episodes, std::memory_order_relaxed);
    }

    /// The total since the last take(), which starts a new count (after the step's join).
    [[nodiscard]] uint64_t take() noexcept {
        uint64_t total = 0;
        for (Shard& shard : shards_) total += shard.count.exchange(0, std::memory_order_relaxed);
        return total;
    }

private:
    static constexpr size_t kShards = 16;
    struct alignas(detail::kCacheLine) Shard {
        std::atomic<uint64_t> count{0};
    };
    size_t num_envs_;
    Shard shards_[kShards];
};

/// The envs of one vector, stepped range by range.
class EnvArray {
public:
    /// params: num_envs rows of spec.num_params values (row-major). Throws UsageError if the spec
    /// or an argument is malformed, EnvFailure if an env's init() reports a failure.
    EnvArray(const shoal_env_spec& spec, size_t num_envs, const double* params, int32_t max_episode_steps,
             const VecBuffers& buffers)
        : spec_(spec),
          num_envs_(num_envs),
          max_episode_steps_(uint32_t(max_episode_steps)),
          // An env that keeps its own log (take_log) tallies nothing here: collecting skips the arrays.
          tallies_(spec.take_log ? 0 : num_envs, size_t(spec.num_stats > 0 ? spec.num_stats : 0)),
          errors_(static_cast<char*>(std::calloc(std::max<size_t>(num_envs, 1), SHOAL_ERROR_CAPACITY)), &std::free) {
        if (!errors_) throw std::bad_alloc();
        validate_spec(spec);
        observation_bytes_ = observation_size(spec) * dtype_size(spec.obs_dtype);
        // An invariant, not the user-facing check: callers check num_envs first (NativeEnv with
        // validation.check_integer); a direct caller of the core that breaks it is refused here.
        if (num_envs == 0) throw UsageError("internal invariant broken: EnvArray needs at least one env");
        if (max_episode_steps < 0) throw UsageError("max_episode_steps must be >= 0");
        // Envs start on their own cache lines so two threads never write one line at a slice edge.
        alignment_ = std::max(spec.env_align, detail::kCacheLine);
        stride_ = (spec.env_size + alignment_ - 1) / alignment_ * alignment_;
        memory_ = static_cast<unsigned char*>(::operator new(stride_ * num_envs, std::align_val_t(alignment_)));
        std::memset(memory_, 0, stride_ * num_envs);

        const size_t agents = size_t(spec.num_agents);
        const size_t action_bytes = size_t(spec.action_dims) * 4;
        for (size_t i = 0; i < num_envs; ++i) {
            shoal_env* base = env(i);
            const size_t row = i * agents;
            base->observations = static_cast<unsigned char*>(buffers.observations) + row * observation_bytes_;
            base->actions = static_cast<const unsigned char*>(buffers.actions) + row * action_bytes;
            base->rewards = buffers.rewards + row;
            base->terminals = buffers.terminals + row;
            base->truncations = buffers.truncations + row;
            base->masks = buffers.masks + row;
            base->env_index = int64_t(i);
            base->num_agents = spec.num_agents;
            base->error = errors_.get() + i * SHOAL_ERROR_CAPACITY;
            base->shared = spec.shared;
            write_params(spec, base, params ? params + i * param_columns(spec) : nullptr);
        }
        final_observations_ = static_cast<unsigned char*>(buffers.final_observations);
        for (size_t i = 0; i < num_envs; ++i) {
            shoal_env* base = env(i);
            if (spec_.init(base) != 0 || base->failed) {
                std::string message = base->failed ? std::string(base->error) : "init() returned an error";
                release(i);  // close only the envs whose init succeeded
                throw EnvFailure("env " + std::to_string(i) + " (" + spec.name + "): " + message);
            }
            initialized_ = i + 1;
        }
    }

    EnvArray(const EnvArray&) = delete;
    EnvArray& operator=(const EnvArray&) = delete;

    ~EnvArray() { release(initialized_); }

    [[nodiscard]] const shoal_env_spec& spec() const noexcept { return spec_; }
    [[nodiscard]] size_t num_envs() const noexcept { return num_envs_; }
    [[nodiscard]] size_t stride() const noexcept { return stride_; }
    [[nodiscard]] shoal_env* env(size_t i) const noexcept {
        return reinterpret_cast<shoal_env*>(memory_ + i * stride_);
    }

    /// Seeds env i from shoal_env_seed(seed, i) and starts its first episode.
    void reset_range(size_t begin, size_t end, uint64_t seed) noexcept {
        const size_t agents = size_t(spec_.num_agents);
        for (size_t i = begin; i < end; ++i) {
            shoal_env* base = env(i);
            shoal_rng_seed(&base->rng, shoal_env_seed(seed, i));
            std::memset(base->rewards, 0, agents * sizeof(float));
            std::memset(base->terminals, 0, agents);
            std::memset(base->truncations, 0, agents);
            shoal_start_episode(base, spec_.reset);
            if (base->failed) any_failed_.store(true, std::memory_order_relaxed);
        }
    }

    /// One step of envs [begin, end): the hot loop, shoal_step_envs() of env.h (same-step
    /// autoreset), compiled into the env's own file when its spec has step_range.
    /// Returns how many episodes ended in the range.
    uint64_t step_range(size_t begin, size_t end) noexcept {
        shoal_range range = make_range(begin, end);
        const uint64_t episodes =
            spec_.step_range ? spec_.step_range(&range) : shoal_step_envs(&range, spec_.step, spec_.reset);
        if (range.failed) any_failed_.store(true, std::memory_order_relaxed);
        return episodes;
    }

    /// True if some env reported a failure since the last take_failures().
    [[nodiscard]] bool any_failed() const noexcept { return any_failed_.load(std::memory_order_relaxed); }

    /// Messages "env <i> (<name>): <error>" of the failed envs, clearing their flags.
    [[nodiscard]] std::vector<std::string> take_failures() {
        std::vector<std::string> failures;
        for (size_t i = 0; i < num_envs_; ++i) {
            shoal_env* base = env(i);
            if (!base->failed) continue;
            failures.push_back("env " + std::to_string(i) + " (" + spec_.name + "): " + base->error);
            base->failed = 0;
            base->error[0] = '\0';
        }
        any_failed_.store(false, std::memory_order_relaxed);
        return failures;
    }

    /// Sums and clears the tallies of every env (call between steps, not during).
    [[nodiscard]] EpisodeTally collect_log() noexcept { return collect_log(0, num_envs_); }

    /// Sums and clears the tallies of envs [begin, end), or the logs they keep themselves (spec take_log);
    /// not while that range is being stepped.
    [[nodiscard]] EpisodeTally collect_log(size_t begin, size_t end) noexcept {
        EpisodeTally total;
        for (size_t b = 0, blocks = log_blocks(begin, end); b < blocks; ++b) total.add(take_log_block(begin, end, b));
        return total;
    }

    /// Logs are collected in blocks of this many envs from the range's first, each block summed on its
    /// own and the blocks added in order: the log is then the same whichever threads take which blocks
    /// (see collect_log and the bindings' parallel collection).
    static constexpr size_t kLogBlockEnvs = 256;

    [[nodiscard]] static size_t log_blocks(size_t begin, size_t end) noexcept {
        return (end - begin + kLogBlockEnvs - 1) / kLogBlockEnvs;
    }

    /// Block `b` of [begin, end)'s log, taken and cleared; blocks may be taken concurrently by
    /// different threads.
    [[nodiscard]] EpisodeTally take_log_block(size_t begin, size_t end, size_t b) noexcept {
        const size_t first = begin + b * kLogBlockEnvs, last = std::min(end, first + kLogBlockEnvs);
        if (!spec_.take_log) return tallies_.take(first, last);
        EpisodeTally block;
        shoal_range range = make_range(first, last);
        spec_.take_log(&range, block.stat_sums, &block.episodes);
        return block;
    }

private:
    /// Envs [begin, end) as env.h's step loop (and the spec's take_log) sees them.
    shoal_range make_range(size_t begin, size_t end) noexcept {
        shoal_range range;
        range.envs = memory_ + begin * stride_;
        range.stride = stride_;
        range.count = end - begin;
        range.final_observations = final_observations_ + begin * size_t(spec_.num_agents) * observation_bytes_;
        range.observation_bytes = observation_bytes_;
        range.num_agents = spec_.num_agents;
        range.max_episode_steps = max_episode_steps_;
        range.failed = 0;
        if (spec_.take_log) {  // the env keeps its log itself: no tallies
            range.return_sums = range.length_sums = range.stat_sums = nullptr;
            range.episode_counts = nullptr;
            range.num_stats = spec_.num_stats;
        } else {
            tallies_.attach(range, begin);
        }
        return range;
    }

    void release(size_t initialized) noexcept {
        if (!memory_) return;
        if (spec_.close)
            for (size_t i = 0; i < initialized; ++i) spec_.close(env(i));
        ::operator delete(memory_, std::align_val_t(alignment_));
        memory_ = nullptr;
    }

    const shoal_env_spec& spec_;
    size_t num_envs_;
    uint32_t max_episode_steps_;
    size_t observation_bytes_ = 0;
    size_t alignment_ = detail::kCacheLine;
    size_t stride_ = 0;
    unsigned char* memory_ = nullptr;
    unsigned char* final_observations_ = nullptr;
    size_t initialized_ = 0;
    EpisodeTallies tallies_;
    // Error messages, calloc'ed: pages of zeros cost no memory until an env reports an error.
    std::unique_ptr<char, void (*)(void*)> errors_;
    std::atomic<bool> any_failed_{false};
};

}  // namespace shoal
