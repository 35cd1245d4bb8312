// shoal._native (with python_steps.cpp, the only files that include pybind11): converts, validates once,
// releases the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bundled_envs.h"
#include "python_steps.hpp"
#include "shoal/detail/sync.hpp"
#include "shoal/env.h"
#include "shoal/errors.hpp"
#include "shoal/interrupt.hpp"
#include "shoal/pipeline.hpp"
#include "shoal/platform/library.hpp"
#include "shoal/pool.hpp"
#include "shoal/pool_probe.hpp"
#include "shoal/rng.h"
#include "shoal/topology.hpp"
#include "shoal/vec.hpp"

namespace py = pybind11;
using shoal::UsageError;

namespace {

/// A dlopen'ed env library; kept loaded as long as any spec or vector from it lives.
struct Library {
    void* handle = nullptr;
    explicit Library(void* h) : handle(h) {}
    Library(const Library&) = delete;
    Library& operator=(const Library&) = delete;
    // Never dlclose: env code may still be referenced by thread-local state of pool threads.
};

/// One vector's copy of a spec, as its configure() and its TEXT parameters made it, and the shared
/// state configure() set up (released after the last vector using it is gone).
struct Configured {
    shoal_env_spec spec{};
    std::vector<shoal_param> params;
    std::vector<std::string> texts;  // the TEXT parameters' values; params[].default_text points here
    Configured() = default;
    Configured(const Configured&) = delete;
    Configured& operator=(const Configured&) = delete;
    ~Configured() {
        if (spec.release_shared && spec.shared) spec.release_shared(spec.shared);
    }
};

/// A spec plus what keeps its code loaded.
struct Spec {
    const shoal_env_spec* spec;
    std::shared_ptr<Library> library;                  // null for bundled envs
    std::string path;                                  // library path, empty for bundled envs
    std::string name;                                  // NAME of SHOAL_EXPORT_ENV
    std::shared_ptr<Configured> configured = nullptr;  // set for one vector's configured copy
};

/// The bundled envs, one entry per folder cpp/envs/<name>/ (bundled_envs.h is generated from them).
constexpr std::pair<const char*, const shoal_env_spec* (*)()> kBundled[] = {
#define SHOAL_BUNDLED_ENTRY(NAME) {#NAME, shoal_env_spec_##NAME},
    SHOAL_BUNDLED_ENVS(SHOAL_BUNDLED_ENTRY)
#undef SHOAL_BUNDLED_ENTRY
};

Spec bundled_spec(const std::string& name) {
    for (const auto& [bundled_name, get] : kBundled)
        if (name == bundled_name) return Spec{get(), nullptr, "", name};
    throw UsageError("no bundled native env named '" + name + "'");
}

std::vector<std::string> bundled_names() {
    std::vector<std::string> names;
    for (const auto& entry : kBundled) names.emplace_back(entry.first);
    return names;
}

Spec load_spec(const std::string& path, const std::string& name) {
    std::string why;
    void* handle = shoal::platform::open_library(path, &why);
    if (!handle) throw UsageError("cannot load native env library '" + path + "': " + why);
    const std::string symbol = "shoal_env_spec_" + name;
    auto get = reinterpret_cast<const shoal_env_spec* (*)()>(shoal::platform::find_symbol(handle, symbol.c_str()));
    if (!get)
        throw UsageError("'" + path + "' does not export " + symbol + "(); did the env use SHOAL_EXPORT_ENV(" + name +
                         ", ...)?");
    const shoal_env_spec* spec = get();
    if (!spec) throw UsageError(symbol + "() returned NULL");
    shoal::validate_spec(*spec);
    return Spec{spec, std::make_shared<Library>(handle), path, name};
}

/// The spec of one vector with these parameters (`row`: env 0's row of the parameter matrix, `texts`: the
/// TEXT parameters' values in order): the spec itself when it has neither configure() nor TEXT parameters,
/// else a copy with the texts in place, configured. Throws UsageError with configure()'s message.
Spec configure_spec(const Spec& base, py::array_t<double, py::array::c_style | py::array::forcecast> row,
                    const std::vector<std::string>& texts) {
    const shoal_env_spec& s = *base.spec;
    size_t text_params = 0;
    for (int32_t p = 0; p < s.num_params; ++p) text_params += s.params[p].type == SHOAL_PARAM_TEXT;
    if (!s.configure && text_params == 0) return base;
    if (row.ndim() != 1 || size_t(row.shape(0)) != shoal::param_columns(s))
        throw UsageError("params must be one row of " + std::to_string(shoal::param_columns(s)) + " values");
    if (texts.size() != text_params)
        throw UsageError(std::to_string(texts.size()) + " texts for " + std::to_string(text_params) +
                         " TEXT parameters");
    auto configured = std::make_shared<Configured>();
    configured->spec = s;
    configured->params.assign(s.params, s.params + s.num_params);
    configured->texts = texts;
    for (size_t p = 0, t = 0; p < configured->params.size(); ++p)
        if (configured->params[p].type == SHOAL_PARAM_TEXT)
            configured->params[p].default_text = configured->texts[t++].c_str();
    configured->spec.params = configured->params.data();
    configured->spec.shared = nullptr;
    if (s.configure) {
        // An env struct holding the parameters, as init() sees them; freed before configure's result is used.
        const size_t align = std::max<size_t>(s.env_align, alignof(std::max_align_t));
        std::unique_ptr<void, void (*)(void*)> scratch(
            std::aligned_alloc(align, (s.env_size + align - 1) / align * align), &std::free);
        if (!scratch) throw std::bad_alloc();
        std::memset(scratch.get(), 0, s.env_size);
        shoal::write_params(configured->spec, scratch.get(), row.data());
        std::string error(SHOAL_ERROR_CAPACITY, '\0');
        if (s.configure(&configured->spec, scratch.get(), error.data()) != 0) {
            error.resize(std::strlen(error.c_str()));
            // configure() judges the caller's parameters: a refusal is a usage error.
            throw UsageError(std::string(s.name) + ": " + (error.empty() ? "configure() failed" : error));
        }
        shoal::validate_spec(configured->spec);
    }
    Spec spec = base;
    spec.spec = &configured->spec;
    spec.configured = std::move(configured);
    return spec;
}

const char* dtype_name(shoal_dtype dtype) {
    switch (dtype) {
        case SHOAL_FLOAT64: return "float64";
        case SHOAL_FLOAT32: return "float32";
        case SHOAL_UINT8: return "uint8";
        case SHOAL_INT8: return "int8";
        case SHOAL_INT32: return "int32";
    }
    return "unknown";
}

shoal::Schedule parse_schedule(const std::string& schedule) {
    if (schedule == "static") return shoal::Schedule::Static;
    if (schedule == "dynamic") return shoal::Schedule::Dynamic;
    throw UsageError("schedule must be 'static' or 'dynamic', got '" + schedule + "'");
}

template <class T>
T* checked_buffer(py::array& array, const char* name, std::vector<py::ssize_t> shape) {
    if (!py::isinstance<py::array_t<T>>(array) || array.dtype().kind() != py::dtype::of<T>().kind() ||
        array.itemsize() != py::ssize_t(sizeof(T)))
        throw UsageError(std::string(name) + " has dtype " + std::string(py::str(array.dtype())) + ", expected " +
                         std::string(py::str(py::dtype::of<T>())));
    if (!(array.flags() & py::array::c_style) || !array.writeable())
        throw UsageError(std::string(name) + " must be C-contiguous and writeable");
    if (std::vector<py::ssize_t>(array.shape(), array.shape() + array.ndim()) != shape)
        throw UsageError(std::string(name) + " has the wrong shape");
    return static_cast<T*>(array.mutable_data());
}

void* checked_raw_buffer(py::array& array, const char* name, size_t expected_bytes) {
    if (!(array.flags() & py::array::c_style) || !array.writeable())
        throw UsageError(std::string(name) + " must be C-contiguous and writeable");
    if (size_t(array.nbytes()) != expected_bytes)
        throw UsageError(std::string(name) + " has " + std::to_string(array.nbytes()) + " bytes, expected " +
                         std::to_string(expected_bytes));
    return array.mutable_data();
}

/// The StopPoll question of the bindings: is a Python signal pending? Asked with the GIL re-acquired
/// on the thread that released it; a handler that raises (KeyboardInterrupt) leaves its exception
/// set on this thread, to be thrown once the step has stopped (see interrupt.hpp).
struct PendingSignals {
    bool raised = false;

    static bool ask(void* self) noexcept {
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() == 0) return false;
        static_cast<PendingSignals*>(self)->raised = true;
        return true;
    }
};

/// The envs of one vector and the pool that steps them. Steps run with the GIL released; a Ctrl-C
/// or close() from another thread stops them at a piece or chunk boundary (interrupt.hpp).
class Vector {
public:
    Vector(Spec spec, size_t num_envs, py::array_t<double, py::array::c_style | py::array::forcecast> params,
           int32_t max_episode_steps, py::array observations, py::array final_observations, py::array actions,
           py::array rewards, py::array terminals, py::array truncations, py::array masks, unsigned num_threads,
           const std::string& schedule, size_t dynamic_chunk, bool pin_threads, size_t num_buffers)
        : spec_(std::move(spec)),
          arrays_{observations, final_observations, actions, rewards, terminals, truncations, masks},
          pacer_(stop_, num_envs),
          episodes_(num_envs) {
        const shoal_env_spec& s = *spec_.spec;
        shoal::validate_spec(s);
        if (num_envs == 0) throw UsageError("num_envs must be >= 1");
        const size_t rows = num_envs * size_t(s.num_agents);
        const size_t obs_bytes = shoal::observation_size(s) * shoal::dtype_size(s.obs_dtype);
        if (params.ndim() != 2 || size_t(params.shape(0)) != num_envs ||
            size_t(params.shape(1)) != shoal::param_columns(s))
            throw UsageError("params must have shape (num_envs, parameter columns)");
        shoal::VecBuffers buffers;
        buffers.observations = checked_raw_buffer(observations, "observations", rows * obs_bytes);
        buffers.final_observations = checked_raw_buffer(final_observations, "final_observations", rows * obs_bytes);
        buffers.actions = checked_raw_buffer(actions, "actions", rows * size_t(s.action_dims) * 4);
        const py::ssize_t r = py::ssize_t(rows);
        buffers.rewards = checked_buffer<float>(rewards, "rewards", {r});
        // numpy bool is one byte holding 0 or 1: the uint8_t flags of env.h.
        buffers.terminals = reinterpret_cast<uint8_t*>(checked_buffer<bool>(terminals, "terminals", {r}));
        buffers.truncations = reinterpret_cast<uint8_t*>(checked_buffer<bool>(truncations, "truncations", {r}));
        buffers.masks = reinterpret_cast<uint8_t*>(checked_buffer<bool>(masks, "masks", {r}));
        shoal::PoolOptions options;
        options.schedule = parse_schedule(schedule);
        options.dynamic_chunk = dynamic_chunk;
        options.pin_threads = pin_threads;
        options.reserved_cpus = reserved_cpus(num_buffers);
        pin_threads_ = pin_threads;
        vec_ = std::make_unique<shoal::NativeVec>(s, num_envs, params.data(), max_episode_steps, buffers);
        pool_ = std::make_unique<shoal::WorkerPool>(workers_for(num_threads), options);
        log_blocks_.resize(shoal::NativeVec::log_blocks(0, num_envs));
        num_threads_ = num_threads;
        if (num_buffers == 0 || num_envs % num_buffers != 0)
            throw UsageError("num_envs must be divisible by num_buffers");
        if (num_buffers > 1)
            pipeline_ = std::make_unique<shoal::Pipeline>(*vec_, *pool_, stop_, num_buffers,
                                                          static_cast<unsigned char*>(arrays_[2].mutable_data()),
                                                          env_action_bytes());
    }

    Vector(const Vector&) = delete;
    Vector& operator=(const Vector&) = delete;

    void reset(uint64_t seed) {
        Busy busy(*this);
        {
            py::gil_scoped_release release;
            if (pipeline_) pipeline_->clear();  // no buffer may be stepping while every env resets
            stop_.clear();                      // every env starts afresh: an interrupted step is forgotten
            (void)episodes_.take();             // and so are the episodes it counted
            auto body = [&](size_t begin, size_t end) { vec_->reset_range(begin, end, seed); };
            pool_->parallel_for(vec_->num_envs(), body);
        }
        raise_failures();
    }

    /// Steps every env once; returns the number of episodes that ended. With `new_actions`, each
    /// range first copies its envs' rows from there into the action buffer. A pending signal whose
    /// handler raises stops the step (the exception is thrown), and so does abandon(); either way
    /// the vector refuses steps until reset().
    uint64_t step(const unsigned char* new_actions = nullptr) {
        Busy busy(*this);
        if (pipeline_) throw UsageError("this vector is pipelined; use submit() and wait()");
        if (stop_.requested()) throw UsageError(shoal::kStoppedMessage);
        const size_t env_action_bytes = this->env_action_bytes();
        unsigned char* action_buffer = static_cast<unsigned char*>(arrays_[2].mutable_data());
        PendingSignals signals;
        {
            py::gil_scoped_release release;
            shoal::StopPoll poll(stop_, &PendingSignals::ask, &signals);
            auto piece = [&](size_t begin, size_t end) {
                if (new_actions)
                    std::memcpy(action_buffer + begin * env_action_bytes, new_actions + begin * env_action_bytes,
                                (end - begin) * env_action_bytes);
                const uint64_t ended = vec_->step_range(begin, end);
                if (ended) episodes_.add(begin, ended);
            };
            auto body = [&](size_t begin, size_t end) { pacer_.run(begin, end, piece); };
            pacer_.start(poll);
            pool_->parallel_for(vec_->num_envs(), body);
            pacer_.finish();
        }
        const uint64_t episodes = episodes_.take();
        if (stop_.requested()) {
            if (vec_->any_failed()) (void)vec_->take_failures();  // the step is discarded, its failures too
            if (signals.raised) throw py::error_already_set();
            throw UsageError(shoal::kStoppedMessage);
        }
        raise_failures();
        return episodes;
    }

    /// Checks actions for `rows` agent rows without converting anything: 0 = int32/float32 in native
    /// byte order, C-contiguous and aligned, of the exact shape, with every value in range (its bytes
    /// are then the action buffer's as they are); -1 = another dtype, byte order or layout; -2 = a
    /// value out of range (or NaN). For -1/-2 the caller runs the full Python check (spaces.py's
    /// ActionChecker, the one rule of every backend), which converts or raises a precise error.
    int64_t check_actions(const py::array& actions, size_t rows) const {
        const shoal_env_spec& s = *spec_.spec;
        const bool box = s.action_kind == SHOAL_ACTION_BOX;
        const py::ssize_t ndim = s.action_kind == SHOAL_ACTION_DISCRETE ? 1 : 2;
        if (actions.ndim() != ndim || size_t(actions.shape(0)) != rows ||
            (ndim == 2 && actions.shape(1) != s.action_dims) || actions.itemsize() != 4)
            return -1;
        const py::dtype dtype = actions.dtype();
        if (dtype.kind() != (box ? 'f' : 'i') || !native_layout(actions, dtype)) return -1;
        const size_t count = rows * size_t(s.action_dims);
        bool ok = true;
        if (box) {
            const float* values = static_cast<const float*>(actions.data());
            // Counting values out of [low, high] (NaN included) as a sum the compiler vectorises: bounds in
            // locals (the spec could alias the values) and `&` on both comparisons, not a branch per value.
            const float low = s.action_low, high = s.action_high;
            uint32_t outside = 0;
            for (size_t i = 0; i < count; ++i) outside += !((values[i] >= low) & (values[i] <= high));
            ok = outside == 0;
        } else {
            // Unsigned comparison sends negative values above every bound.
            const uint32_t* values = static_cast<const uint32_t*>(actions.data());
            const size_t dims = size_t(s.action_dims);
            if (dims == 1) {
                // An `or` of comparisons vectorises with nothing but the `or` carried between iterations
                // (0.1 ns per action; a max reduction, whose select chain is longer, took 3x as long).
                const uint32_t bound = uint32_t(s.action_nvec[0]);
                uint32_t outside = 0;
                for (size_t i = 0; i < count; ++i) outside |= uint32_t(values[i] >= bound);
                ok = outside == 0;
            } else {
                for (size_t row = 0; row < rows; ++row)
                    for (size_t d = 0; d < dims; ++d) ok &= values[row * dims + d] < uint32_t(s.action_nvec[d]);
            }
        }
        return ok ? 0 : -2;
    }

    /// The hot path of a synchronous send(): checks `actions` (see check_actions) and steps, each
    /// participant copying its own envs' actions. Returns episodes ended, or -1/-2 untouched.
    int64_t step_actions(const py::array& actions) {
        if (!vec_ || pipeline_) return -1;
        const int64_t verdict = check_actions(actions, vec_->num_envs() * size_t(spec_.spec->num_agents));
        if (verdict < 0) return verdict;
        return int64_t(step(static_cast<const unsigned char*>(actions.data())));
    }

    /// Pipelined send: queues buffer b's step with these actions and returns at once (-1/-2 as
    /// check_actions, nothing queued).
    int64_t submit(size_t b, const py::array& actions) {
        Busy busy(*this);
        if (!pipeline_) throw UsageError("this vector has one buffer; use step()");
        if (b >= pipeline_->num_buffers()) throw UsageError("buffer index " + std::to_string(b) + " out of range");
        const int64_t verdict = check_actions(actions, pipeline_->envs_per_buffer() * size_t(spec_.spec->num_agents));
        if (verdict < 0) return verdict;
        pipeline_->submit(b, static_cast<const unsigned char*>(actions.data()));
        return 0;
    }

    /// Waits (GIL released) until buffer b's last step is done; returns the episodes it ended and
    /// raises shoal.EnvError for env failures in it.
    uint64_t wait(size_t b) {
        Busy busy(*this);
        if (!pipeline_) throw UsageError("this vector has one buffer; use step()");
        if (b >= pipeline_->num_buffers()) throw UsageError("buffer index " + std::to_string(b) + " out of range");
        std::vector<std::string> failures;
        uint64_t episodes = 0;
        PendingSignals signals;
        {
            py::gil_scoped_release release;
            shoal::StopPoll poll(stop_, &PendingSignals::ask, &signals);
            try {
                episodes = pipeline_->wait(b, failures, &poll);
            } catch (...) {
                if (!signals.raised) throw;  // else: the step stopped because of the exception set by the handler
            }
        }
        if (signals.raised) throw py::error_already_set();
        if (!failures.empty()) raise_env_error(failures);
        return episodes;
    }

    /// Stops the step in flight at the next piece or chunk boundary, from any thread (close() from
    /// another thread while one waits in a step); the stepping call then raises, and the vector
    /// refuses steps until reset().
    void abandon() noexcept { stop_.request(); }

    size_t num_buffers() const { return pipeline_ ? pipeline_->num_buffers() : 1; }

    py::dict collect_log(size_t begin, size_t end) {
        Busy busy(*this);
        if (begin > end || end > vec_->num_envs()) throw UsageError("env range out of bounds");
        const shoal::EpisodeTally tally = take_log(begin, end);
        py::dict log;
        log["episodes"] = tally.episodes;
        if (tally.episodes == 0) return log;
        const double n = double(tally.episodes);
        log["episode_return"] = tally.return_sum / n;
        log["episode_length"] = tally.length_sum / n;
        const shoal_env_spec& s = *spec_.spec;
        for (int32_t i = 0; i < s.num_stats; ++i) log[s.stat_names[i]] = tally.stat_sums[i] / n;
        return log;
    }

    void set_num_threads(unsigned num_threads) {
        Busy busy(*this);
        py::gil_scoped_release release;
        if (pipeline_) pipeline_->drain();
        pool_->resize(workers_for(num_threads));
        num_threads_ = num_threads;
    }

    void set_schedule(const std::string& schedule, size_t dynamic_chunk) {
        Busy busy(*this);
        shoal::PoolOptions options;
        options.schedule = parse_schedule(schedule);
        options.dynamic_chunk = dynamic_chunk;
        options.pin_threads = pin_threads_;
        options.reserved_cpus = reserved_cpus(pipeline_ ? pipeline_->num_buffers() : 1);
        if (pipeline_) {
            py::gil_scoped_release release;
            pipeline_->drain();
        }
        pool_->set_options(options);
    }

    /// Threads stepping envs, the caller included, as requested (0 and 1 both mean the caller alone).
    unsigned num_threads() const { return num_threads_; }

    py::dict pool_stats() const {
        const shoal::PoolStats stats = pool_->stats();
        py::dict d;
#define SHOAL_POOL_STAT_ITEM(type, name, description) d[#name] = stats.name;
        SHOAL_POOL_STATS(SHOAL_POOL_STAT_ITEM)
#undef SHOAL_POOL_STAT_ITEM
        return d;
    }

    /// Raw bytes of env i's struct (tests read and write env state through it).
    py::memoryview env_memory(size_t i) {
        if (i >= vec_->num_envs()) throw UsageError("env index out of range");
        return py::memoryview::from_memory(reinterpret_cast<void*>(vec_->env(i)), py::ssize_t(vec_->spec().env_size));
    }

    /// Idempotent: closing a closed vector does nothing.
    void close() {
        if (!vec_) return;
        Busy busy(*this);
        py::gil_scoped_release release;
        stop_.request();    // steps in flight are discarded: skip what they have left
        pipeline_.reset();  // drains steps in flight, then joins the driver
        pool_.reset();
        vec_.reset();
    }

    bool closed() const { return !vec_; }

private:
    /// Rejects concurrent or post-close use from several Python threads instead of racing.
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
    };

    static unsigned workers_for(unsigned num_threads) { return num_threads > 1 ? num_threads - 1 : 0; }

    /// CPUs the pool leaves to threads that are busy outside it: the pool's caller, and when
    /// pipelined also the Python caller (running the policy, or stepping envs while it waits).
    static unsigned reserved_cpus(size_t num_buffers) { return num_buffers > 1 ? 2 : 1; }

    void raise_failures() {
        if (vec_->any_failed()) raise_env_error(vec_->take_failures());
    }

    /// The log of envs [begin, end), read on the pool when there is one and no pipeline steps
    /// meanwhile: each thread takes the blocks of the envs it steps (the static schedule splits blocks
    /// as it splits envs), whose lines are in its own cache. Ocean's squared, 4096 envs at T=2:
    /// collecting on the caller alone cost 1.8 us a step, its walk reading the worker's half from the
    /// other core. The result is the same as on one thread (NativeVec::collect_log).
    shoal::EpisodeTally take_log(size_t begin, size_t end) {
        const size_t blocks = shoal::NativeVec::log_blocks(begin, end);
        if (pipeline_ || pool_->num_threads() == 0 || blocks < 2) return vec_->collect_log(begin, end);
        {
            py::gil_scoped_release release;
            auto body = [&](size_t first, size_t last) {
                for (size_t b = first; b < last; ++b) log_blocks_[b] = vec_->take_log_block(begin, end, b);
            };
            pool_->parallel_for(blocks, body);
        }
        shoal::EpisodeTally total;
        for (size_t b = 0; b < blocks; ++b) total.add(log_blocks_[b]);
        return total;
    }

    [[noreturn]] static void raise_env_error(const std::vector<std::string>& failures) {
        std::string message;
        for (const std::string& failure : failures) message += (message.empty() ? "" : "; ") + failure;
        throw shoal::EnvFailure(message);
    }

    size_t env_action_bytes() const { return size_t(spec_.spec->num_agents) * size_t(spec_.spec->action_dims) * 4; }

    Spec spec_;
    std::vector<py::array> arrays_;   // keeps the caller's buffers alive as long as the envs write them
    shoal::StopRequest stop_;         // outlives close(): abandon() may come from another thread any time
    shoal::Pacer pacer_;              // how a synchronous step is cut into pieces that can stop
    shoal::EpisodeCounter episodes_;  // episodes ended in the synchronous step under way
    std::unique_ptr<shoal::NativeVec> vec_;
    std::unique_ptr<shoal::WorkerPool> pool_;
    std::vector<shoal::EpisodeTally> log_blocks_;  // take_log's per-block parts, one per block of all envs
    std::unique_ptr<shoal::Pipeline> pipeline_;    // declared last: destroyed first
    bool pin_threads_ = false;
    unsigned num_threads_ = 0;
    std::atomic<bool> busy_{false};
};

py::dict describe(const Spec& spec) {
    const shoal_env_spec& s = *spec.spec;
    py::dict d;
    d["name"] = s.name;
    d["class_name"] = s.class_name ? s.class_name : s.name;
    d["doc"] = s.doc ? s.doc : "";
    d["num_agents"] = s.num_agents;
    d["obs_dtype"] = dtype_name(s.obs_dtype);
    d["obs_shape"] = py::tuple(py::cast(std::vector<int32_t>(s.obs_shape, s.obs_shape + s.obs_ndim)));
    d["obs_low"] = s.obs_low;
    d["obs_high"] = s.obs_high;
    const char* kinds[] = {"discrete", "multidiscrete", "box"};
    d["action_kind"] = kinds[s.action_kind];
    d["action_dims"] = s.action_dims;
    d["action_nvec"] = std::vector<int32_t>(s.action_nvec, s.action_nvec + s.action_dims);
    d["action_low"] = s.action_low;
    d["action_high"] = s.action_high;
    if (s.action_lows) {
        d["action_lows"] = std::vector<float>(s.action_lows, s.action_lows + s.action_dims);
        d["action_highs"] = std::vector<float>(s.action_highs, s.action_highs + s.action_dims);
    } else {
        d["action_lows"] = py::none();
        d["action_highs"] = py::none();
    }
    d["max_episode_steps"] = s.max_episode_steps;
    py::list params;
    for (int32_t i = 0; i < s.num_params; ++i) {
        const shoal_param& p = s.params[i];
        py::dict param;
        param["name"] = p.name;
        const char* types[] = {"int", "float", "double", "bool", "pair", "text"};
        param["type"] = types[p.type];
        param["per_vector"] = p.type == SHOAL_PARAM_TEXT || (p.flags & SHOAL_PARAM_PER_VECTOR) != 0;
        if (p.type == SHOAL_PARAM_PAIR)
            param["default"] = py::make_tuple(p.default_value, p.default_high);
        else if (p.type == SHOAL_PARAM_TEXT)
            param["default"] = std::string(p.default_text ? p.default_text : "");
        else if (p.type == SHOAL_PARAM_BOOL)
            param["default"] = p.default_value != 0;
        else
            param["default"] = p.default_value;
        param["min"] = p.min_value;
        param["max"] = p.max_value;
        param["doc"] = p.doc ? p.doc : "";
        params.append(param);
    }
    d["params"] = params;
    d["stats"] = std::vector<std::string>(s.stat_names, s.stat_names + s.num_stats);
    d["env_size"] = s.env_size;
    return d;
}

}  // namespace

PYBIND11_MODULE(_native, m) {
    m.doc() = "shoal's native core (private; use the shoal package)";
    m.attr("__version__") = SHOAL_VERSION;
    m.attr("ABI_VERSION") = SHOAL_ABI_VERSION;
    m.attr("ENV_BASE_SIZE") = sizeof(shoal_env);
    m.attr("CACHE_LINE_BYTES") = shoal::detail::kCacheLine;

    // The error vocabulary of shoal.errors at the native boundary.
    // Kept for the life of the process (never decref'ed at interpreter teardown).
    static const py::handle usage_error =
        py::object(py::module_::import("shoal.errors").attr("APIUsageError")).release();
    static const py::handle env_error = py::object(py::module_::import("shoal.errors").attr("EnvError")).release();
    py::register_exception_translator([](std::exception_ptr error) {
        try {
            if (error) std::rethrow_exception(error);
        } catch (const shoal::UsageError& e) {
            PyErr_SetString(usage_error.ptr(), e.what());
        } catch (const shoal::EnvFailure& e) {
            PyErr_SetString(env_error.ptr(), e.what());
        }
    });

    register_python_steps(m);
    m.def("env_seed", &shoal_env_seed, py::arg("seed"), py::arg("index"),
          R"doc(Seed of env `index` under vector seed `seed` (same rule as shoal.seeding.env_seed).)doc");
    m.def("physical_cores", &shoal::physical_core_count,
          "Physical cores among the CPUs this process may use (affinity-aware; the one core count of shoal).");

    py::class_<Spec>(m, "EnvSpec", "A native env type: sizes, spaces, parameters and callbacks.")
        .def_property_readonly("name", [](const Spec& s) { return std::string(s.spec->name); })
        .def("describe", &describe, "The spec as a dict (spaces, params, stats, time limit).")
        .def("configure", &configure_spec, py::arg("params"), py::arg("texts"),
             "The spec of one vector with these parameters (env 0's row, the TEXT parameters' values): "
             "configure() run on a copy; the spec itself if it has neither configure() nor TEXT parameters.")
        .def_property_readonly("configurable",
                               [](const Spec& s) {
                                   for (int32_t p = 0; p < s.spec->num_params; ++p)
                                       if (s.spec->params[p].type == SHOAL_PARAM_TEXT) return true;
                                   return s.spec->configure != nullptr;
                               })
        .def(py::pickle(  // a spec crosses process boundaries as (library path, name)
            [](const Spec& s) { return py::make_tuple(s.path, s.name); },
            [](const py::tuple& state) {
                const auto path = state[0].cast<std::string>();
                const auto name = state[1].cast<std::string>();
                return path.empty() ? bundled_spec(name) : load_spec(path, name);
            }));
    m.def("bundled_spec", &bundled_spec, py::arg("name"), "Spec of a bundled env.");
    m.def("bundled_names", &bundled_names, "Names of the bundled envs.");
    m.def("load_spec", &load_spec, py::arg("path"), py::arg("name"),
          "Loads `shoal_env_spec_<name>` from a shared library built against shoal/env.h.");

    py::class_<Vector>(m, "Vector", "Native envs over caller-owned buffers, stepped by a worker pool.")
        .def(py::init<Spec, size_t, py::array_t<double, py::array::c_style | py::array::forcecast>, int32_t, py::array,
                      py::array, py::array, py::array, py::array, py::array, py::array, unsigned, const std::string&,
                      size_t, bool, size_t>(),
             py::arg("spec"), py::arg("num_envs"), py::arg("params"), py::arg("max_episode_steps"),
             py::arg("observations"), py::arg("final_observations"), py::arg("actions"), py::arg("rewards"),
             py::arg("terminals"), py::arg("truncations"), py::arg("masks"), py::arg("num_threads"),
             py::arg("schedule") = "static", py::arg("dynamic_chunk") = 0, py::arg("pin_threads") = false,
             py::arg("num_buffers") = 1)
        .def("reset", &Vector::reset, py::arg("seed"))
        .def(
            "step", [](Vector& v) { return v.step(); }, "Steps every env once (GIL released); returns episodes ended.")
        .def("step_actions", &Vector::step_actions, py::arg("actions"),
             "Checks and copies int32/float32 actions of the exact layout, then steps; -1/-2 = use the "
             "Python path (other dtype or layout / a value out of range).")
        .def("submit", &Vector::submit, py::arg("buffer"), py::arg("actions"),
             "Pipelined: queues a buffer's step and returns at once; -1/-2 = use the Python check.")
        .def("wait", &Vector::wait, py::arg("buffer"),
             "Pipelined: waits (GIL released) for a buffer's step; returns episodes ended.")
        .def_property_readonly("num_buffers", &Vector::num_buffers)
        .def("collect_log", &Vector::collect_log, py::arg("begin"), py::arg("end"))
        .def("set_num_threads", &Vector::set_num_threads, py::arg("num_threads"))
        .def("set_schedule", &Vector::set_schedule, py::arg("schedule"), py::arg("dynamic_chunk") = 0)
        .def_property_readonly("num_threads", &Vector::num_threads)
        .def("pool_stats", &Vector::pool_stats)
        .def("env_memory", &Vector::env_memory, py::arg("index"))
        .def("abandon", &Vector::abandon,
             "Stops the step in flight at the next env boundary (from any thread); refusals follow until reset().")
        .def("close", &Vector::close)
        .def_property_readonly("closed", &Vector::closed);

    m.def(
        "release_gil", [] { py::gil_scoped_release release; },
        "Does nothing with the GIL released: the bare cost of a native call, the baseline of Python's share.");
    m.def(
        "measure_fork_join_ns",
        [](unsigned num_threads, size_t rounds, const std::string& schedule) {
            shoal::PoolOptions options;
            options.schedule = parse_schedule(schedule);
            py::gil_scoped_release release;
            shoal::WorkerPool pool(num_threads > 1 ? num_threads - 1 : 0, options);
            return shoal::measure_fork_join_ns(pool, rounds);
        },
        py::arg("num_threads"), py::arg("rounds"), py::arg("schedule") = "static",
        "Median-free mean cost of one fork-join round with a trivial body, in ns.");
}
