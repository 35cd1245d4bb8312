// shoal/vector.hpp — one native vector: what a batch step is, whoever drives it (the bindings, the tests).
//
// A Vector owns the envs (EnvArray), the threads that step them (WorkerPool), the driver thread
// of a pipelined vector (Pipeline), the stop request a Ctrl-C or a close() from another thread sets
// (interrupt.hpp), the pacing that cuts a long synchronous step into pieces that can stop, the
// episode counter of a step, the parallel log collection and the action rule (actions.hpp). It knows
// nothing about Python: a caller that wants to be asked "stop?" while a step runs passes a
// StopPoll::Ask, and a refusal after a stop is a UsageError carrying kStoppedMessage.
//
// Threads: one caller at a time (a second thread's call, or any call after close(), is a
// UsageError instead of a race); abandon() is the exception, callable from any thread any time.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "shoal/actions.hpp"
#include "shoal/env.h"
#include "shoal/errors.hpp"
#include "shoal/interrupt.hpp"
#include "shoal/pipeline.hpp"
#include "shoal/pool.hpp"
#include "shoal/vec.hpp"

namespace shoal {

/// How the threads of a Vector share its envs out.
struct VectorOptions {
    unsigned num_threads = 0;  ///< threads stepping envs, the caller included (0 and 1: the caller alone)
    Schedule schedule = Schedule::Static;
    size_t dynamic_chunk = 0;  ///< items per chunk for Dynamic; 0 = auto
    bool pin_threads = false;
    size_t num_buffers = 1;                     ///< > 1: pipelined, the envs form this many equal buffers
    BoxActions box_actions = BoxActions::Pass;  ///< what Box actions outside the bounds do (actions.hpp)
    unsigned cpu_limit = 0;  ///< CPUs the process may use (a cgroup quota), 0 = its affinity mask (PoolOptions)
};

/// An action array as the vector's check sees it (the bindings describe a numpy array with it).
struct ActionArray {
    const void* data = nullptr;
    char kind = 0;  ///< numpy's dtype kind: 'i' signed integer, 'f' floating point
    size_t itemsize = 0;
    int ndim = 0;
    size_t shape[2] = {0, 0};
    bool native_layout = false;  ///< C-contiguous, aligned and in native byte order

    /// int64 integers (numpy's default integer, torch's argmax): narrowed to int32 as they are
    /// copied, once checked in range.
    [[nodiscard]] bool wide() const noexcept { return kind == 'i' && itemsize == 8; }
};

/// What check_actions() found in an action array.
enum class ActionCheck : uint8_t {
    Ready,            ///< its bytes are the action buffer's as they are: stepped or queued
    NeedsConversion,  ///< another dtype, byte order, layout or shape: not the native form
    OutOfRange,       ///< a value the rule refuses (or, in Clip mode, clips)
};

/// What a step with actions did (actions: always Ready, a refusal is thrown).
struct StepResult {
    ActionCheck actions = ActionCheck::Ready;
    uint64_t episodes = 0;  ///< episodes that ended in the step
};

class Vector {
public:
    /// The envs of `spec` (which must outlive the vector) over the caller's buffers, `params` as
    /// EnvArray takes them. Throws UsageError for a malformed spec or argument, EnvFailure if an
    /// env's init() fails, std::system_error if a thread cannot be started.
    Vector(const shoal_env_spec& spec, size_t num_envs, const double* params, int32_t max_episode_steps,
           const VecBuffers& buffers, const VectorOptions& options)
        : spec_(spec),
          action_buffer_(static_cast<unsigned char*>(buffers.actions)),
          pacer_(stop_, num_envs),
          reset_pacer_(stop_, num_envs),
          episodes_(num_envs),
          pin_threads_(options.pin_threads),
          cpu_limit_(options.cpu_limit),
          box_actions_(options.box_actions) {
        vec_ = std::make_unique<EnvArray>(spec, num_envs, params, max_episode_steps, buffers);
        pool_ =
            std::make_unique<WorkerPool>(workers_for(options.num_threads),
                                         pool_options(options.schedule, options.dynamic_chunk, options.num_buffers));
        log_blocks_.resize(EnvArray::log_blocks(0, num_envs));
        num_threads_ = options.num_threads;
        if (options.num_buffers == 0 || num_envs % options.num_buffers != 0)
            throw UsageError(
                "internal invariant broken (shoal.validation checks it first): num_envs must be divisible by "
                "num_buffers");
        rows_per_send_ = num_envs / options.num_buffers * size_t(spec.num_agents);
        if (options.num_buffers > 1)
            pipeline_ = std::make_unique<Pipeline>(*vec_, *pool_, stop_, options.num_buffers, action_buffer_,
                                                   env_action_bytes());
    }

    Vector(const Vector&) = delete;
    Vector& operator=(const Vector&) = delete;

    /// Seeds and resets every env; forgets an interrupted step or reset (and the episodes it
    /// counted). `ask` as for step(): a reset is paced and stopped as a step is (a seeded reset may
    /// be slow: an Atari env reloads its ROM), and a stopped one throws UsageError
    /// (kResetStoppedMessage); the vector then refuses steps until a reset runs to its end.
    void reset(uint64_t seed, StopPoll::Ask ask = nullptr, void* context = nullptr) {
        Busy busy(*this);
        if (pipeline_) pipeline_->clear();  // no buffer may be stepping while every env resets
        stop_.clear();
        (void)episodes_.take();
        StopPoll poll(stop_, ask ? ask : &never, context);
        auto piece = [&](size_t begin, size_t end) { vec_->reset_range(begin, end, seed); };
        auto body = [&](size_t begin, size_t end) { reset_pacer_.run(begin, end, piece); };
        reset_pacer_.start(poll);
        pool_->parallel_for(vec_->num_envs(), body);
        reset_pacer_.finish();
        if (stop_.requested()) {
            stop_.cut_reset();
            if (vec_->any_failed()) (void)vec_->take_failures();  // the reset is redone, its failures too
            throw UsageError(kResetStoppedMessage);
        }
        raise_failures();
    }

    /// Steps every env once with the actions already in the action buffer (or, with `new_actions`,
    /// each range first copies its envs' rows from there); returns the episodes that ended. `ask`
    /// is asked every kStopPollNs whether to stop; a stop (by it or by abandon()) throws UsageError
    /// (kStoppedMessage) and the vector refuses steps until reset(). Env failures throw EnvFailure.
    /// `wide_actions`: `new_actions` are int64 (ActionArray::wide()), narrowed as they are copied.
    uint64_t step(const unsigned char* new_actions = nullptr, StopPoll::Ask ask = nullptr, void* context = nullptr,
                  bool wide_actions = false) {
        Busy busy(*this);
        return step_held(new_actions, ask, context, wide_actions);
    }

    /// The hot path of a synchronous send: `actions` in the native form (native_form()) are checked
    /// against the rule and stepped, each participant copying its own envs' rows (in Clip mode,
    /// values outside the bounds are clipped into the vector's own copy first). Throws
    /// ActionsRefused (nothing stepped) for actions of another form or a value the rule refuses;
    /// UsageError for a closed or pipelined vector. `values_checked`: the caller's full check has
    /// passed (or clipped) these values (spaces.py's ActionChecker.converted), so only their layout
    /// is checked.
    StepResult step(const ActionArray& actions, StopPoll::Ask ask = nullptr, void* context = nullptr,
                    bool values_checked = false) {
        Busy busy(*this);
        if (pipeline_) throw UsageError("this vector is pipelined; use submit() and wait()");
        const unsigned char* source = accepted(actions, rows_per_send_, values_checked);
        StepResult result;
        result.episodes = step_held(source, ask, context, actions.wide() && source == actions.data);
        return result;
    }

    /// Pipelined: checks buffer b's actions as step() does and queues its step, returning at once
    /// (Ready; a refusal is thrown and nothing is queued).
    ActionCheck submit(size_t b, const ActionArray& actions, bool values_checked = false) {
        Busy busy(*this);
        check_buffer(b);
        const unsigned char* source = accepted(actions, rows_per_send_, values_checked);
        pipeline_->submit(b, source, actions.wide() && source == actions.data);
        return ActionCheck::Ready;
    }

private:
    uint64_t step_held(const unsigned char* new_actions, StopPoll::Ask ask, void* context, bool wide_actions) {
        if (pipeline_) throw UsageError("this vector is pipelined; use submit() and wait()");
        if (stop_.requested()) throw UsageError(stop_.refusal());
        const size_t env_action_bytes = this->env_action_bytes();
        unsigned char* action_buffer = action_buffer_;
        StopPoll poll(stop_, ask ? ask : &never, context);
        auto piece = [&](size_t begin, size_t end) {
            if (new_actions)
                copy_actions(action_buffer + begin * env_action_bytes,
                             new_actions + begin * env_action_bytes * (wide_actions ? 2 : 1),
                             (end - begin) * env_action_bytes, wide_actions);
            const uint64_t ended = vec_->step_range(begin, end);
            if (ended) episodes_.add(begin, ended);
        };
        auto body = [&](size_t begin, size_t end) { pacer_.run(begin, end, piece); };
        pacer_.start(poll);
        pool_->parallel_for(vec_->num_envs(), body);
        pacer_.finish();
        const uint64_t episodes = episodes_.take();
        if (stop_.requested()) {
            if (vec_->any_failed()) (void)vec_->take_failures();  // the step is discarded, its failures too
            throw UsageError(kStoppedMessage);
        }
        raise_failures();
        return episodes;
    }

    /// The bytes a step or submit copies from: `actions`' own when the rule takes them as they are,
    /// the vector's clipped copy when Clip mode clips some; otherwise throws ActionsRefused.
    const unsigned char* accepted(const ActionArray& actions, size_t rows, bool values_checked) {
        const ActionCheck check = check_actions(actions, rows, values_checked);
        if (check == ActionCheck::Ready) return static_cast<const unsigned char*>(actions.data);
        const size_t dims = size_t(spec_.action_dims);
        if (check == ActionCheck::NeedsConversion)
            throw ActionsRefused("actions are not in the native form: C-contiguous, aligned " +
                                     std::string(spec_.action_kind == SHOAL_ACTION_BOX ? "float32" : "int32 or int64") +
                                     " in native byte order, " + std::to_string(rows) + " rows of " +
                                     std::to_string(dims) + " (convert them first)",
                                 ActionRefusal{});
        if (spec_.action_kind == SHOAL_ACTION_BOX) {
            const float* values = static_cast<const float*>(actions.data);
            if (box_actions_ == BoxActions::Clip) {
                clipped_.resize(rows * dims);
                clip_floats(clipped_.data(), values, rows, dims, spec_.action_low, spec_.action_high, spec_.action_lows,
                            spec_.action_highs);
                return reinterpret_cast<const unsigned char*>(clipped_.data());
            }
            const ActionRefusal refusal = floats_refused(values, rows, dims, spec_.action_low, spec_.action_high,
                                                         spec_.action_lows, spec_.action_highs);
            throw ActionsRefused("action " + std::to_string(refusal.index) +
                                     " (row-major) is outside the bounds or NaN (" + std::to_string(refusal.count) +
                                     " value(s))",
                                 refusal);
        }
        const ActionRefusal refusal =
            actions.wide() ? ints_refused(static_cast<const int64_t*>(actions.data), rows, dims, spec_.action_nvec)
                           : ints_refused(static_cast<const int32_t*>(actions.data), rows, dims, spec_.action_nvec);
        throw ActionsRefused("action " + std::to_string(refusal.index) + " (row-major) is out of range (" +
                                 std::to_string(refusal.count) + " value(s))",
                             refusal);
    }

public:
    /// Pipelined: waits until buffer b's last step is done and returns the episodes it ended;
    /// `ask` as for step(). Env failures in it throw EnvFailure.
    uint64_t wait(size_t b, StopPoll::Ask ask = nullptr, void* context = nullptr) {
        Busy busy(*this);
        check_buffer(b);
        std::vector<std::string> failures;
        StopPoll poll(stop_, ask ? ask : &never, context);
        const uint64_t episodes = pipeline_->wait(b, failures, &poll);
        if (!failures.empty()) raise_env_error(failures);
        return episodes;
    }

    /// Pipelined: steps chunks of the buffer step in flight on the calling thread for about
    /// `budget_ns` (the caller lending its core while it waits for something else); false when there
    /// was none to step.
    bool help(uint64_t budget_ns) {
        Busy busy(*this);
        return pipeline_ && pipeline_->help(budget_ns);
    }

    /// Stops the step in flight at the next piece or chunk boundary, from any thread (close() from
    /// another thread while one waits in a step); the stepping call then throws, and the vector
    /// refuses steps until reset().
    void abandon() noexcept { stop_.request(); }

    /// Whether `actions` are in the native form of `rows` agent rows, which the vector checks and
    /// copies as they are: int32 or int64 (float32 for a box) in native byte order, C-contiguous and
    /// aligned, of the exact shape. Anything else is converted first (spaces.py's ActionChecker).
    [[nodiscard]] bool native_form(const ActionArray& actions, size_t rows) const noexcept {
        const bool box = spec_.action_kind == SHOAL_ACTION_BOX;
        const int ndim = spec_.action_kind == SHOAL_ACTION_DISCRETE ? 1 : 2;
        if (actions.ndim != ndim || actions.shape[0] != rows ||
            (ndim == 2 && actions.shape[1] != size_t(spec_.action_dims)) ||
            (actions.itemsize != 4 && !(actions.wide() && !box)))
            return false;
        return actions.kind == (box ? 'f' : 'i') && actions.native_layout;
    }

    /// Agent rows of a step() (a pipelined vector: of a buffer's submit()).
    [[nodiscard]] size_t rows_per_send() const noexcept { return rows_per_send_; }
    [[nodiscard]] bool pipelined() const noexcept { return pipeline_ != nullptr; }

    /// Checks actions for `rows` agent rows without converting anything. Ready: in the native form
    /// (native_form()), every integer in [0, nvec[d]), and box values as the vector's BoxActions
    /// takes them (Pass: any value, read by nobody here; Strict: inside the bounds; Clip: inside
    /// the bounds, so that clipping changes nothing). `values_checked`: only the form is checked
    /// (the values passed the caller's full check already).
    [[nodiscard]] ActionCheck check_actions(const ActionArray& actions, size_t rows,
                                            bool values_checked = false) const noexcept {
        if (!native_form(actions, rows)) return ActionCheck::NeedsConversion;
        const bool box = spec_.action_kind == SHOAL_ACTION_BOX;
        if (values_checked) return ActionCheck::Ready;
        const size_t count = rows * size_t(spec_.action_dims);
        bool ok = true;
        if (box) {
            if (box_actions_ == BoxActions::Pass) return ActionCheck::Ready;
            // Bounds in locals: the spec could alias the values. The scalar box lies inside every
            // dimension's bounds (vec.hpp checks it): what it takes, the exact bounds take too.
            const auto* values = static_cast<const float*>(actions.data);
            ok = floats_inside(values, count, spec_.action_low, spec_.action_high);
            if (!ok && spec_.action_lows)
                ok = floats_inside_each(values, rows, size_t(spec_.action_dims), spec_.action_lows, spec_.action_highs);
        } else if (actions.wide()) {
            ok = ints_below_each(static_cast<const int64_t*>(actions.data), rows, size_t(spec_.action_dims),
                                 spec_.action_nvec);
        } else {
            ok = ints_below_each(static_cast<const int32_t*>(actions.data), rows, size_t(spec_.action_dims),
                                 spec_.action_nvec);
        }
        return ok ? ActionCheck::Ready : ActionCheck::OutOfRange;
    }

    /// Changes what Box actions outside the bounds do, between steps.
    void set_box_actions(BoxActions box_actions) {
        Busy busy(*this);
        box_actions_ = box_actions;
    }

    [[nodiscard]] BoxActions box_actions() const noexcept { return box_actions_; }

    /// Sums and clears the episode log of envs [begin, end), read on the pool when there is one and
    /// no pipeline steps meanwhile: each thread takes the blocks of the envs it steps (the static
    /// schedule splits blocks as it splits envs), whose lines are in its own cache, instead of the
    /// caller reading the other cores' halves. The result is the same as on one thread
    /// (EnvArray::collect_log).
    EpisodeTally collect_log(size_t begin, size_t end) {
        Busy busy(*this);
        if (begin > end || end > vec_->num_envs()) throw UsageError("env range out of bounds");
        const size_t blocks = EnvArray::log_blocks(begin, end);
        if (pipeline_ || pool_->num_threads() == 0 || blocks < 2) return vec_->collect_log(begin, end);
        auto body = [&](size_t first, size_t last) {
            for (size_t b = first; b < last; ++b) log_blocks_[b] = vec_->take_log_block(begin, end, b);
        };
        pool_->parallel_for(blocks, body);
        EpisodeTally total;
        for (size_t b = 0; b < blocks; ++b) total.add(log_blocks_[b]);
        return total;
    }

    /// Changes the thread count between steps (a pipelined vector first finishes its steps in flight).
    void set_num_threads(unsigned num_threads) {
        Busy busy(*this);
        if (pipeline_) pipeline_->drain();
        pool_->resize(workers_for(num_threads));
        num_threads_ = num_threads;
    }

    /// Changes how envs are shared out between steps.
    void set_schedule(Schedule schedule, size_t dynamic_chunk) {
        Busy busy(*this);
        const PoolOptions options = pool_options(schedule, dynamic_chunk, num_buffers());
        if (pipeline_) pipeline_->drain();
        pool_->set_options(options);
    }

    /// Threads stepping envs, the caller included, as requested (0 and 1 both mean the caller alone).
    [[nodiscard]] unsigned num_threads() const noexcept { return num_threads_; }
    [[nodiscard]] size_t num_buffers() const noexcept { return pipeline_ ? pipeline_->num_buffers() : 1; }
    [[nodiscard]] size_t num_envs() const { return open().num_envs(); }
    [[nodiscard]] const shoal_env_spec& spec() const noexcept { return spec_; }
    [[nodiscard]] bool stop_requested() const noexcept { return stop_.requested(); }

    /// The worker pool's counters.
    [[nodiscard]] PoolStats pool_stats() const {
        (void)open();
        return pool_->stats();
    }

    /// Env i's struct (spec().env_size bytes; tests read and write env state through it).
    [[nodiscard]] shoal_env* env(size_t i) const {
        if (i >= open().num_envs()) throw UsageError("env index out of range");
        return vec_->env(i);
    }

    /// Stops steps in flight, joins every thread and releases the envs. Idempotent.
    void close() {
        if (!vec_) return;
        Busy busy(*this);
        stop_.request();    // steps in flight are discarded: skip what they have left
        pipeline_.reset();  // drains steps in flight, then joins the driver
        pool_.reset();
        vec_.reset();
    }

    [[nodiscard]] bool closed() const noexcept { return !vec_; }

private:
    /// Rejects concurrent or post-close use from several threads instead of racing.
    struct Busy {
        Vector& self;
        explicit Busy(Vector& v) : self(v) {
            if (self.busy_.exchange(true)) throw UsageError("native vector used from two threads at once");
            if (!self.vec_) {
                self.busy_ = false;
                throw UsageError("native vector is closed");
            }
        }
        ~Busy() { self.busy_ = false; }
        Busy(const Busy&) = delete;
        Busy& operator=(const Busy&) = delete;
    };

    static bool never(void*) noexcept { return false; }

    static unsigned workers_for(unsigned num_threads) noexcept { return num_threads > 1 ? num_threads - 1 : 0; }

    /// CPUs the pool leaves to threads that are busy outside it: the pool's caller, and when
    /// pipelined also the vector's caller (running the policy, or stepping envs while it waits).
    PoolOptions pool_options(Schedule schedule, size_t dynamic_chunk, size_t num_buffers) const noexcept {
        PoolOptions options;
        options.schedule = schedule;
        options.dynamic_chunk = dynamic_chunk;
        options.pin_threads = pin_threads_;
        options.cpu_limit = cpu_limit_;
        options.reserved_cpus = num_buffers > 1 ? 2 : 1;
        options.park_on_contention = num_buffers == 1;
        return options;
    }

    const EnvArray& open() const {
        if (!vec_) throw UsageError("native vector is closed");
        return *vec_;
    }

    void check_buffer(size_t b) const {
        if (!pipeline_) throw UsageError("this vector has one buffer; use step()");
        if (b >= pipeline_->num_buffers()) throw UsageError("buffer index " + std::to_string(b) + " out of range");
    }

    void raise_failures() {
        if (vec_->any_failed()) raise_env_error(vec_->take_failures());
    }

    [[noreturn]] static void raise_env_error(const std::vector<std::string>& failures) {
        std::string message;
        for (const std::string& failure : failures) message += (message.empty() ? "" : "; ") + failure;
        throw EnvFailure(message);
    }

    size_t env_action_bytes() const noexcept { return size_t(spec_.num_agents) * size_t(spec_.action_dims) * 4; }

    const shoal_env_spec& spec_;
    unsigned char* const action_buffer_;  // the caller's, every env's action rows
    StopRequest stop_;                    // outlives close(): abandon() may come from another thread any time
    Pacer pacer_;                         // how a synchronous step is cut into pieces that can stop
    Pacer reset_pacer_;                   // and a reset (whose cost differs from a step's)
    EpisodeCounter episodes_;             // episodes ended in the synchronous step under way
    std::unique_ptr<EnvArray> vec_;
    std::unique_ptr<WorkerPool> pool_;
    std::vector<EpisodeTally> log_blocks_;  // collect_log's per-block parts, one per block of all envs
    std::vector<float> clipped_;            // Clip mode: the actions as clipped, when some value lay outside
    size_t rows_per_send_ = 0;              // agent rows of a step() or of one buffer's submit()
    std::unique_ptr<Pipeline> pipeline_;    // declared last: destroyed first
    bool pin_threads_ = false;
    unsigned cpu_limit_ = 0;
    BoxActions box_actions_ = BoxActions::Pass;
    unsigned num_threads_ = 0;
    std::atomic<bool> busy_{false};
};

}  // namespace shoal
