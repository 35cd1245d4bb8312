// envs_test.cpp — self-checking test of the bundled native envs (exit status 0 = pass).
//
// For every bundled env: the spec matches what the env promises; observations stay within the
// spec's bounds; terminals, truncations and masks are 0 or 1; episodes end and autoreset in the
// same step; the episode log agrees with what the buffers showed; the same seed gives identical
// buffers at every step, another seed diverges, and splitting the vector into two ranges (stepped
// in either order, or on two threads) changes nothing. Then env-specific checks: cartpole's state
// layout, squared's rewards, grid's dead agents, deep's cost scaling with `work`.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "shoal/vec.hpp"

#include "bundled_envs.h"
#include "test_support.hpp"

namespace {

int failures = 0;

/// Records a failure with a printf-style message unless ok; returns ok.
__attribute__((format(printf, 2, 3))) bool check(bool ok, const char* format, ...) {
    if (ok) return true;
    ++failures;
    std::va_list args;
    va_start(args, format);
    std::fputs("FAIL: ", stdout);
    std::vprintf(format, args);
    std::fputc('\n', stdout);
    va_end(args);
    return false;
}

/// How a vector is stepped: as one range, or split at `split` into two ranges.
enum class Split { kNone, kForward, kReverse, kThreads };

/// Caller-owned buffers plus the EnvArray over them.
class Run {
public:
    Run(const shoal_env_spec& spec, size_t num_envs, const double* params, Split split)
        : spec_(spec),
          num_envs_(num_envs),
          split_(split),
          rows_(num_envs * size_t(spec.num_agents)),
          storage_(spec, num_envs) {
        vec_ = std::make_unique<shoal::EnvArray>(spec, num_envs, params, spec.max_episode_steps, storage_.buffers());
    }

    void reset(uint64_t seed) {
        const size_t k = num_envs_ / 2;
        switch (split_) {
            case Split::kNone: vec_->reset_range(0, num_envs_, seed); break;
            case Split::kForward:
                vec_->reset_range(0, k, seed);
                vec_->reset_range(k, num_envs_, seed);
                break;
            case Split::kReverse:
                vec_->reset_range(k, num_envs_, seed);
                vec_->reset_range(0, k, seed);
                break;
            case Split::kThreads: {
                std::thread first([&] { vec_->reset_range(0, k, seed); });
                vec_->reset_range(k, num_envs_, seed);
                first.join();
                break;
            }
        }
    }

    void step() {
        const size_t k = num_envs_ / 2;
        switch (split_) {
            case Split::kNone: vec_->step_range(0, num_envs_); break;
            case Split::kForward:
                vec_->step_range(0, k);
                vec_->step_range(k, num_envs_);
                break;
            case Split::kReverse:
                vec_->step_range(k, num_envs_);
                vec_->step_range(0, k);
                break;
            case Split::kThreads: {
                std::thread first([&] { vec_->step_range(0, k); });
                vec_->step_range(k, num_envs_);
                first.join();
                break;
            }
        }
    }

    /// True if every output buffer of the rows [first, last) equals that of `other`.
    [[nodiscard]] bool same_rows(const Run& other, size_t first, size_t last) const {
        const size_t obs_bytes = storage_.obs_bytes;
        return storage_.same_rows(other.storage_, first, last) &&
               std::memcmp(&storage_.final_observations[first * obs_bytes],
                           &other.storage_.final_observations[first * obs_bytes], (last - first) * obs_bytes) == 0;
    }
    [[nodiscard]] bool same(const Run& other) const { return same_rows(other, 0, rows_); }

    [[nodiscard]] size_t rows() const { return rows_; }
    [[nodiscard]] shoal::EnvArray& vec() { return *vec_; }
    [[nodiscard]] int32_t* actions() { return reinterpret_cast<int32_t*>(storage_.actions.data()); }
    [[nodiscard]] const unsigned char* observation(size_t row) const {
        return &storage_.observations[row * storage_.obs_bytes];
    }
    [[nodiscard]] const unsigned char* final_observation(size_t row) const {
        return &storage_.final_observations[row * storage_.obs_bytes];
    }
    [[nodiscard]] float reward(size_t row) const { return storage_.rewards[row]; }
    [[nodiscard]] uint8_t terminal(size_t row) const { return storage_.terminals[row]; }
    [[nodiscard]] uint8_t truncation(size_t row) const { return storage_.truncations[row]; }
    [[nodiscard]] uint8_t mask(size_t row) const { return storage_.masks[row]; }

private:
    const shoal_env_spec& spec_;
    size_t num_envs_;
    Split split_;
    size_t rows_;
    shoal_test::Storage storage_;
    std::unique_ptr<shoal::EnvArray> vec_;
};

/// Seeded uniform actions for every row of the given runs (the same actions for all of them).
class ActionSource {
public:
    ActionSource(const shoal_env_spec& spec, uint64_t seed) : spec_(spec), generator_(seed) {}
    void fill(size_t rows, std::initializer_list<Run*> runs) {
        const size_t dims = size_t(spec_.action_dims);
        for (size_t r = 0; r < rows * dims; ++r) {
            const int32_t action = int32_t(generator_() % uint64_t(spec_.action_nvec[r % dims]));
            for (Run* run : runs) run->actions()[r] = action;
        }
    }

private:
    const shoal_env_spec& spec_;
    std::mt19937_64 generator_;
};

/// True if every element of the observation lies within the spec's bounds (NaN never does).
bool observation_in_bounds(const shoal_env_spec& spec, const unsigned char* observation) {
    const size_t size = shoal::observation_size(spec);
    for (size_t e = 0; e < size; ++e) {
        double value = 0;
        switch (spec.obs_dtype) {
            case SHOAL_FLOAT32: {
                float v;
                std::memcpy(&v, observation + 4 * e, 4);
                value = v;
                break;
            }
            case SHOAL_UINT8: value = observation[e]; break;
            case SHOAL_INT8: value = int8_t(observation[e]); break;
            case SHOAL_INT32: {
                int32_t v;
                std::memcpy(&v, observation + 4 * e, 4);
                value = v;
                break;
            }
        }
        if (!(value >= spec.obs_low && value <= spec.obs_high)) return false;
    }
    return true;
}

/// Totals over the episodes that ended during a run, counted from the buffers.
struct Observed {
    uint64_t episodes = 0;
    uint64_t terminals = 0;      // every terminal row
    uint64_t truncations = 0;    // every truncated row
    double return_sum = 0;       // of ended episodes
    double length_sum = 0;       // of ended episodes
    double ended_terminals = 0;  // terminal rows of ended episodes
    double ended_positive = 0;   // rows with reward > 0 of ended episodes
};

/// What an env promises beyond the generic contract, checked on every step.
struct Expectations {
    bool terminals = true;    // some episode ends by a terminal within the run
    bool truncations = true;  // some episode hits the time limit within the run
};

/// The generic checks: bounds, flags, autoreset, log, determinism, seeds, range splits.
Observed check_generic(const shoal_env_spec& spec, size_t num_envs, const std::vector<double>* params, int steps,
                       Expectations expect) {
    const double* values = params ? params->data() : nullptr;
    const char* name = spec.name;
    Run a(spec, num_envs, values, Split::kNone);
    Run same_seed(spec, num_envs, values, Split::kNone);
    Run forward(spec, num_envs, values, Split::kForward);
    Run reverse(spec, num_envs, values, Split::kReverse);
    Run threads(spec, num_envs, values, Split::kThreads);
    Run other_seed(spec, num_envs, values, Split::kNone);
    std::vector<Run*> twins = {&same_seed, &forward, &reverse, &threads};
    const char* twin_names[] = {"same seed", "split forward", "split reverse", "split on threads"};

    const uint64_t seed = 12345;
    for (Run* run : twins) run->reset(seed);
    a.reset(seed);
    other_seed.reset(seed + 1);

    const size_t agents = size_t(spec.num_agents);
    const size_t rows = a.rows();
    bool diverged = !a.same(other_seed);
    bool twin_ok[4] = {true, true, true, true};
    for (size_t t = 0; t < twins.size(); ++t)
        twin_ok[t] = check(a.same(*twins[t]), "%s: %s differs after reset", name, twin_names[t]);
    for (size_t row = 0; row < rows; ++row) {
        check(observation_in_bounds(spec, a.observation(row)), "%s: reset observation of row %zu out of bounds", name,
              row);
        check(a.mask(row) == 1, "%s: mask of row %zu is not 1 after reset", name, row);
    }

    Observed seen;
    std::vector<double> episode_return(num_envs, 0.0), episode_terminals(num_envs, 0.0),
        episode_positive(num_envs, 0.0);
    ActionSource source(spec, 99);
    int reported = 0;  // cap per-step failure messages
    for (int step = 0; step < steps; ++step) {
        source.fill(rows, {&a, &same_seed, &forward, &reverse, &threads, &other_seed});
        a.step();
        for (Run* run : twins) run->step();
        other_seed.step();

        for (size_t t = 0; t < twins.size(); ++t)
            if (twin_ok[t])
                twin_ok[t] = check(a.same(*twins[t]), "%s: %s differs at step %d", name, twin_names[t], step);
        diverged = diverged || !a.same(other_seed);

        const int before = failures;
        for (size_t i = 0; i < num_envs; ++i) {
            const shoal_env* base = a.vec().env(i);
            const bool ended = base->tick == 0;
            double reward = 0;
            bool truncated = false;
            for (size_t r = i * agents; r < (i + 1) * agents; ++r) {
                check(a.terminal(r) <= 1 && a.truncation(r) <= 1 && a.mask(r) <= 1,
                      "%s: row %zu has flags terminal=%d truncation=%d mask=%d at step %d", name, r, a.terminal(r),
                      a.truncation(r), a.mask(r), step);
                check(std::isfinite(a.reward(r)), "%s: row %zu reward is not finite", name, r);
                check(observation_in_bounds(spec, a.observation(r)),
                      "%s: observation of row %zu out of bounds at step %d", name, r, step);
                if (a.terminal(r) || a.truncation(r))
                    check(observation_in_bounds(spec, a.final_observation(r)),
                          "%s: final observation of row %zu out of bounds at step %d", name, r, step);
                reward += double(a.reward(r));
                seen.terminals += a.terminal(r);
                seen.truncations += a.truncation(r);
                truncated = truncated || a.truncation(r);
                episode_terminals[i] += a.terminal(r);
                episode_positive[i] += a.reward(r) > 0;
            }
            episode_return[i] += reward;
            if (truncated) check(ended, "%s: env %zu truncated without an autoreset at step %d", name, i, step);
            if (agents == 1 && a.terminal(i)) check(ended, "%s: env %zu terminal without an autoreset", name, i);
            check(base->tick <= uint32_t(spec.max_episode_steps), "%s: env %zu ran past the time limit", name, i);
            if (ended) {
                for (size_t r = i * agents; r < (i + 1) * agents; ++r)
                    check(a.mask(r) == 1, "%s: mask of row %zu is not 1 after an autoreset", name, r);
                seen.episodes += 1;
                seen.return_sum += episode_return[i];
                seen.ended_terminals += episode_terminals[i];
                seen.ended_positive += episode_positive[i];
                episode_return[i] = episode_terminals[i] = episode_positive[i] = 0;
            }
        }
        // Lengths come from the core's tallies; returns are cross-checked against them below.
        if (failures != before && ++reported >= 5) {
            std::printf("%s: stopping after repeated failures\n", name);
            break;
        }
    }
    check(diverged, "%s: another seed gave identical buffers for %d steps", name, steps);

    const shoal::EpisodeTally log = a.vec().collect_log();
    check(log.episodes == seen.episodes, "%s: the log counts %llu episodes, the buffers showed %llu", name,
          (unsigned long long)log.episodes, (unsigned long long)seen.episodes);
    check(seen.episodes > 0, "%s: no episode ended in %d steps", name, steps);
    check(std::fabs(log.return_sum - seen.return_sum) <= 1e-6 * std::max(1.0, std::fabs(seen.return_sum)),
          "%s: logged return %.9g, observed %.9g", name, log.return_sum, seen.return_sum);
    if (expect.terminals) check(seen.terminals > 0, "%s: no terminal in %d steps", name, steps);
    if (expect.truncations) check(seen.truncations > 0, "%s: no truncation in %d steps", name, steps);
    seen.length_sum = log.length_sum;
    for (int32_t s = 0; s < spec.num_stats; ++s) {
        if (std::string(spec.stat_names[s]) == "hit" || std::string(spec.stat_names[s]) == "deaths")
            check(log.stat_sums[s] == seen.ended_terminals, "%s: stat %s is %g, terminals of ended episodes %g", name,
                  spec.stat_names[s], log.stat_sums[s], seen.ended_terminals);
        if (std::string(spec.stat_names[s]) == "food_eaten")
            check(log.stat_sums[s] == seen.ended_positive, "%s: stat food_eaten is %g, rewarded rows %g", name,
                  log.stat_sums[s], seen.ended_positive);
    }
    std::printf(
        "%-8s %zu envs x %d steps: %llu episodes (mean length %.1f, mean return %.3f), %llu terminal rows, "
        "%llu truncated rows\n",
        name, num_envs, steps, (unsigned long long)seen.episodes,
        seen.episodes ? log.length_sum / double(seen.episodes) : 0.0,
        seen.episodes ? log.return_sum / double(seen.episodes) : 0.0, (unsigned long long)seen.terminals,
        (unsigned long long)seen.truncations);
    return seen;
}

/// Expects EnvArray construction with these params to throw shoal::EnvFailure naming `word`.
void check_init_fails(const shoal_env_spec& spec, std::vector<double> params, const char* word) {
    try {
        Run run(spec, 1, params.data(), Split::kNone);
        check(false, "%s: init accepted bad params (expected an error about %s)", spec.name, word);
    } catch (const shoal::EnvFailure& error) {
        check(std::strstr(error.what(), word) != nullptr, "%s: init error '%s' does not mention %s", spec.name,
              error.what(), word);
    }
}

void check_spec_shape(const shoal_env_spec& spec, const char* name, int32_t agents, shoal_dtype dtype,
                      std::vector<int32_t> shape, int32_t actions, int32_t time_limit) {
    shoal::validate_spec(spec);
    check(std::string(spec.name) == name, "spec name is %s, expected %s", spec.name, name);
    check(spec.doc && std::strlen(spec.doc) > 10, "%s: doc is missing", name);
    check(spec.num_agents == agents, "%s: num_agents %d", name, spec.num_agents);
    check(spec.obs_dtype == dtype, "%s: obs_dtype %d", name, int(spec.obs_dtype));
    check(spec.obs_ndim == int32_t(shape.size()), "%s: obs_ndim %d", name, spec.obs_ndim);
    for (size_t d = 0; d < shape.size() && d < size_t(spec.obs_ndim); ++d)
        check(spec.obs_shape[d] == shape[d], "%s: obs_shape[%zu] is %d", name, d, spec.obs_shape[d]);
    check(spec.action_kind == SHOAL_ACTION_DISCRETE && spec.action_dims == 1 && spec.action_nvec[0] == actions,
          "%s: action space is not Discrete(%d)", name, actions);
    check(spec.max_episode_steps == time_limit, "%s: max_episode_steps %d", name, spec.max_episode_steps);
}

// ---- cartpole ------------------------------------------------------------------------------

void check_cartpole() {
    const int start = failures;
    const shoal_env_spec& spec = *shoal_env_spec_cartpole();
    check_spec_shape(spec, "cartpole", 1, SHOAL_FLOAT32, {4}, 2, 500);
    check(spec.num_params == 0 && spec.obs_low == -INFINITY && spec.obs_high == INFINITY,
          "cartpole: expected no params and unbounded observations");
    check_generic(spec, 5, nullptr, 2000, {.terminals = true, .truncations = false});

    // The state is float64 x, x_dot, theta, theta_dot right after base; the observation is its
    // float32 rounding; every step pays 1; resets draw from [-0.05, 0.05).
    Run run(spec, 3, nullptr, Split::kNone);
    run.reset(3);
    const size_t offset = (sizeof(shoal_env) + 7) / 8 * 8;
    ActionSource source(spec, 5);
    int episodes_started = 3;
    for (int step = 0; step <= 600 && failures == start; ++step) {
        for (size_t i = 0; i < 3; ++i) {
            double state[4];
            std::memcpy(state, reinterpret_cast<const unsigned char*>(run.vec().env(i)) + offset, sizeof state);
            float observation[4];
            std::memcpy(observation, run.observation(i), sizeof observation);
            for (int k = 0; k < 4; ++k)
                check(observation[k] == float(state[k]), "cartpole: observation %d is not the float32 of the state", k);
            if (run.vec().env(i)->tick == 0) {
                for (int k = 0; k < 4; ++k)
                    check(state[k] >= -0.05 && state[k] < 0.05, "cartpole: reset state %g outside [-0.05, 0.05)",
                          state[k]);
                if (step > 0) {
                    float final_observation[4];
                    std::memcpy(final_observation, run.final_observation(i), sizeof final_observation);
                    const bool fell =
                        std::fabs(final_observation[0]) > 2.39f || std::fabs(final_observation[2]) > 0.2094f;
                    check(run.terminal(i) == 1 && fell, "cartpole: episode ended without the pole falling");
                    ++episodes_started;
                }
            }
            if (step > 0) check(run.reward(i) == 1.0f, "cartpole: reward %g, expected 1", double(run.reward(i)));
        }
        source.fill(3, {&run});
        run.step();
    }
    check(episodes_started > 10, "cartpole: too few episodes under random actions");

    // Always pushing right makes the pole fall within a few dozen steps, from any reset.
    Run pushed(spec, 1, nullptr, Split::kNone);
    pushed.reset(0);
    pushed.actions()[0] = 1;
    int length = 0;
    do {
        pushed.step();
        ++length;
    } while (pushed.terminal(0) == 0 && length < 500);
    check(length > 5 && length < 100, "cartpole: pushing right for %d steps", length);
}

// ---- squared -------------------------------------------------------------------------------

void check_squared() {
    const int start = failures;
    const shoal_env_spec& spec = *shoal_env_spec_squared();
    check_spec_shape(spec, "squared", 1, SHOAL_UINT8, {11, 11}, 5, 60);
    check(spec.num_params == 0 && spec.num_stats == 1 && std::string(spec.stat_names[0]) == "hit" &&
              spec.obs_low == 0 && spec.obs_high == 2,
          "squared: expected no params, the stat 'hit' and codes 0..2");
    check_generic(spec, 5, nullptr, 2000, {});

    Run run(spec, 4, nullptr, Split::kNone);
    run.reset(1);
    ActionSource source(spec, 2);
    for (int step = 0; step < 2000 && failures == start; ++step) {
        for (size_t i = 0; i < 4; ++i) {
            const unsigned char* grid = run.vec().env(i)->tick == 0 ? run.observation(i) : nullptr;
            if (grid) {  // a fresh episode: agent in the centre, target on the border
                int target = -1;
                for (int c = 0; c < 121; ++c)
                    if (grid[c] == 2) target = c;
                const int row = target / 11, col = target % 11;
                check(grid[5 * 11 + 5] == 1, "squared: agent not in the centre after reset");
                check(target >= 0 && (row == 0 || row == 10 || col == 0 || col == 10),
                      "squared: target not on the border");
            }
            int agents = 0;
            for (int c = 0; c < 121; ++c) agents += run.observation(i)[c] == 1;
            check(agents == 1, "squared: %d agent cells", agents);
            if (step == 0) continue;
            if (run.terminal(i))
                check(run.reward(i) == 1.0f, "squared: terminal step paid %g", double(run.reward(i)));
            else
                check(run.reward(i) == -0.01f, "squared: non-terminal step paid %g", double(run.reward(i)));
        }
        source.fill(4, {&run});
        run.step();
    }
}

// ---- grid ----------------------------------------------------------------------------------

void check_grid() {
    const int start = failures;
    const shoal_env_spec& spec = *shoal_env_spec_grid();
    check_spec_shape(spec, "grid", 4, SHOAL_UINT8, {5, 5}, 5, 128);
    check(spec.num_params == 2 && std::string(spec.params[0].name) == "num_traps" &&
              spec.params[0].default_value == 6 && std::string(spec.params[1].name) == "num_food" &&
              spec.params[1].default_value == 8,
          "grid: expected params num_traps=6, num_food=8");
    check(spec.num_stats == 2 && std::string(spec.stat_names[0]) == "food_eaten" &&
              std::string(spec.stat_names[1]) == "deaths",
          "grid: expected stats food_eaten, deaths");
    check_generic(spec, 5, nullptr, 2000, {});
    const std::vector<double> crowded = {60, 60, 0, 1, 30, 20};  // per-env num_traps, num_food
    check_generic(spec, 3, &crowded, 2000, {});
    check_init_fails(spec, {-1, 8}, "num_traps");
    check_init_fails(spec, {6, 0}, "num_food");

    // Dead agents: terminal once (with mask 1), then mask 0, reward 0, zero observation and no
    // further terminal until the env resets.
    const size_t num_envs = 6;
    const std::vector<double> deadly = {40, 8, 40, 8, 40, 8, 40, 8, 40, 8, 40, 8};
    Run run(spec, num_envs, deadly.data(), Split::kNone);
    run.reset(4);
    ActionSource source(spec, 8);
    std::vector<uint8_t> dead(num_envs * 4, 0);
    uint64_t deaths = 0, masked_rows = 0, wipeouts = 0;
    for (int step = 0; step < 3000 && failures == start; ++step) {
        source.fill(num_envs * 4, {&run});
        run.step();
        for (size_t i = 0; i < num_envs; ++i) {
            const bool ended = run.vec().env(i)->tick == 0;
            bool all_dead = true;
            for (size_t r = i * 4; r < i * 4 + 4; ++r) {
                if (dead[r]) {
                    check(run.reward(r) == 0.0f && run.terminal(r) == 0, "grid: dead row %zu got reward or terminal",
                          r);
                    if (!ended) {
                        bool zeros = true;
                        for (int c = 0; c < 25; ++c) zeros = zeros && run.observation(r)[c] == 0;
                        check(run.mask(r) == 0 && zeros, "grid: dead row %zu has mask %d or a nonzero observation", r,
                              run.mask(r));
                        ++masked_rows;
                    }
                } else if (run.terminal(r)) {
                    check(run.mask(r) == 1, "grid: row %zu died with mask 0", r);
                    check(run.final_observation(r)[12] == 2, "grid: row %zu died off a trap", r);
                    dead[r] = 1;
                    ++deaths;
                } else if (!ended) {
                    check(run.mask(r) == 1 && run.observation(r)[12] == 3,
                          "grid: living row %zu is masked or misplaced", r);
                }
                all_dead = all_dead && dead[r];
            }
            if (all_dead) {
                check(ended, "grid: env %zu kept running with every agent dead", i);
                ++wipeouts;
            }
            if (ended) std::fill(dead.begin() + long(i * 4), dead.begin() + long(i * 4 + 4), 0);
        }
    }
    check(deaths > 20 && masked_rows > 100 && wipeouts > 0,
          "grid: too few deaths (%llu), masked rows (%llu) or wipeouts (%llu)", (unsigned long long)deaths,
          (unsigned long long)masked_rows, (unsigned long long)wipeouts);
    std::printf("grid     dead agents: %llu deaths, %llu masked rows, %llu wipeouts\n", (unsigned long long)deaths,
                (unsigned long long)masked_rows, (unsigned long long)wipeouts);
}

// ---- deep ----------------------------------------------------------------------------------

/// Least wall time in nanoseconds of `steps` steps of envs [begin, end), over `repeats` tries.
double time_steps(Run& run, size_t begin, size_t end, int steps, int repeats) {
    double best = 1e300;
    for (int t = 0; t < repeats; ++t) {
        const auto start = std::chrono::steady_clock::now();
        for (int s = 0; s < steps; ++s) run.vec().step_range(begin, end);
        const auto stop = std::chrono::steady_clock::now();
        best = std::min(best, double(std::chrono::duration_cast<std::chrono::nanoseconds>(stop - start).count()));
    }
    return best;
}

void check_deep() {
    const int start = failures;
    const shoal_env_spec& spec = *shoal_env_spec_deep();
    check_spec_shape(spec, "deep", 1, SHOAL_FLOAT32, {8}, 4, 200);
    check(spec.num_params == 1 && std::string(spec.params[0].name) == "work" && spec.params[0].default_value == 20000,
          "deep: expected the param work=20000");
    const std::vector<double> light = {500, 0, 1000, 7, 300};
    check_generic(spec, 5, &light, 2000, {});
    check_generic(spec, 4, nullptr, 300, {});  // the default work
    check_init_fails(spec, {-5}, "work");

    // Per-env work: env 0 of {100, 5000} behaves like env 0 of {100, 100}, env 1 like env 1 of
    // {5000, 5000}, and not like env 1 of {100, 100}.
    const std::vector<double> mixed = {100, 5000}, low = {100, 100}, high = {5000, 5000};
    Run x(spec, 2, mixed.data(), Split::kNone), y(spec, 2, low.data(), Split::kNone),
        z(spec, 2, high.data(), Split::kNone);
    for (Run* run : {&x, &y, &z}) run->reset(6);
    ActionSource source(spec, 6);
    bool env1_differs = false;
    for (int step = 0; step < 200; ++step) {
        source.fill(2, {&x, &y, &z});
        for (Run* run : {&x, &y, &z}) run->step();
        check(x.same_rows(y, 0, 1), "deep: env 0 with work 100 differs between vectors at step %d", step);
        check(x.same_rows(z, 1, 2), "deep: env 1 with work 5000 differs between vectors at step %d", step);
        env1_differs = env1_differs || !x.same_rows(y, 1, 2);
        if (failures != start) break;
    }
    check(env1_differs, "deep: work 100 and work 5000 gave the same trajectory");

    // Cost: per-step time grows with work (bounds are loose: the machine is shared).
    const std::vector<double> small = {2000}, large = {200000}, standard = {20000};
    Run cheap(spec, 1, small.data(), Split::kNone), costly(spec, 1, large.data(), Split::kNone),
        typical(spec, 1, standard.data(), Split::kNone);
    for (Run* run : {&cheap, &costly, &typical}) run->reset(0);
    const double cheap_ns = time_steps(cheap, 0, 1, 200, 5) / 200;
    const double costly_ns = time_steps(costly, 0, 1, 20, 5) / 20;
    const double typical_ns = time_steps(typical, 0, 1, 50, 5) / 50;
    const double per_iteration = (costly_ns - cheap_ns) / (200000 - 2000);
    std::printf("deep     step cost: work 2000 %.1f us, 20000 (default) %.1f us, 200000 %.1f us; %.2f ns/iteration\n",
                cheap_ns / 1e3, typical_ns / 1e3, costly_ns / 1e3, per_iteration);
    check(costly_ns > 10 * cheap_ns, "deep: work 200000 costs %.0f ns, only %.1fx work 2000", costly_ns,
          costly_ns / cheap_ns);
    check(typical_ns > 10e3, "deep: the default work costs %.1f us per step, expected >= 10 us", typical_ns / 1e3);

    // Per-env cost: in one vector, the env with more work takes longer.
    const std::vector<double> uneven = {0, 200000};
    Run both(spec, 2, uneven.data(), Split::kNone);
    both.reset(0);
    const double idle_ns = time_steps(both, 0, 1, 20, 5);
    const double busy_ns = time_steps(both, 1, 2, 20, 5);
    check(busy_ns > 20 * idle_ns, "deep: env with work 200000 took %.0f ns, env with work 0 took %.0f ns", busy_ns,
          idle_ns);
}

// The final-observation copy of the step loop (shoal__copy_small) for every size from 0 to 40 bytes
// and every offset of source and destination in a 16-byte window: exactly the bytes, none around.
void check_final_observation_copy() {
    unsigned char from[128], to[128], expected[128];
    for (size_t i = 0; i < sizeof from; ++i) from[i] = static_cast<unsigned char>(i * 7 + 1);
    for (size_t bytes = 0; bytes <= 40; ++bytes)
        for (size_t at = 0; at < 16; ++at) {
            std::memset(to, 0xAB, sizeof to);
            std::memset(expected, 0xAB, sizeof expected);
            std::memcpy(expected + at, from + 3 + at, bytes);
            shoal__copy_small(to + at, from + 3 + at, bytes);
            check(std::memcmp(to, expected, sizeof to) == 0, "copy of %zu bytes at offset %zu is wrong", bytes, at);
        }
}

}  // namespace

int main() {
    try {
        check_final_observation_copy();
        check_cartpole();
        check_squared();
        check_grid();
        check_deep();
    } catch (const std::exception& error) {
        check(false, "unexpected exception: %s", error.what());
    }
    if (failures) {
        std::printf("envs_test: %d failure(s)\n", failures);
        return 1;
    }
    std::printf("envs_test: all checks passed\n");
    return 0;
}
