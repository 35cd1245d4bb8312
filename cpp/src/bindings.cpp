// shoal._native (with python_steps.cpp, spec_bindings.cpp and cuda_copies.cpp, the only files that include pybind11):
// checks and converts arguments, releases the GIL and delegates to shoal::Vector (vector.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "arrays.hpp"
#include "cuda_copies.hpp"
#include "python_steps.hpp"
#include "shoal/detail/sync.hpp"
#include "shoal/env.h"
#include "shoal/errors.hpp"
#include "shoal/pool_probe.hpp"
#include "shoal/rng.h"
#include "shoal/topology.hpp"
#include "shoal/vector.hpp"
#include "spec_bindings.hpp"
#include "specs.hpp"

namespace py = pybind11;
using shoal::UsageError;

namespace {

using ParamMatrix = py::array_t<double, py::array::c_style | py::array::forcecast>;

shoal::Schedule parse_schedule(const std::string& schedule) {
    if (schedule == "static") return shoal::Schedule::Static;
    if (schedule == "dynamic") return shoal::Schedule::Dynamic;
    throw UsageError(
        "internal invariant broken (shoal.validation checks it first): schedule must be 'static' or "
        "'dynamic', got '" +
        schedule + "'");
}

/// The question a Vector asks while it steps with the GIL released: is a Python signal pending?
/// Asked with the GIL re-acquired on the thread that released it; a handler that raises
/// (KeyboardInterrupt) leaves its exception set on this thread, thrown once the step has stopped.
struct PendingSignals {
    bool raised = false;

    static bool ask(void* self) noexcept {
        py::gil_scoped_acquire gil;
        if (PyErr_CheckSignals() == 0) return false;
        static_cast<PendingSignals*>(self)->raised = true;
        return true;
    }
};

/// Runs call(ask, context) with the GIL released, asking for pending signals; a signal handler's
/// exception replaces whatever the stopped call threw.
template <class Call>
auto with_signals(Call&& call) {
    PendingSignals signals;
    decltype(call(&PendingSignals::ask, &signals)) result{};
    try {
        py::gil_scoped_release release;
        result = call(&PendingSignals::ask, &signals);
    } catch (...) {
        if (!signals.raised) throw;
    }
    if (signals.raised) throw py::error_already_set();
    return result;
}

/// A shoal::Vector over numpy buffers, with what must outlive it: the spec and the arrays.
struct BoundVector {
    Spec spec;
    std::vector<py::array> arrays;  // the caller's buffers, alive as long as the envs write them
    shoal::Vector core;
    // The caller's side of the action rule (spaces.py's ActionChecker of a send's rows): converted()
    // turns actions of another form into the native one (or raises the precise APIUsageError), and
    // refusal() words the error of actions the core refused. None: actions must be in the native form.
    py::object checker = py::none();

    BoundVector(Spec s, size_t num_envs, ParamMatrix params, int32_t max_episode_steps, py::array observations,
                py::array final_observations, py::array actions, py::array rewards, py::array terminals,
                py::array truncations, py::array masks, const shoal::VectorOptions& options)
        : spec(std::move(s)),
          arrays{observations, final_observations, actions, rewards, terminals, truncations, masks},
          core(*spec.spec, num_envs, params.data(), max_episode_steps, checked_buffers(num_envs, params), options) {}

    /// The buffers as the envs write them, once the spec, the sizes and every array are checked.
    shoal::VecBuffers checked_buffers(size_t num_envs, const ParamMatrix& params) {
        const shoal_env_spec& s = *spec.spec;  // validated where it was loaded or configured (specs.cpp)
        if (params.ndim() != 2 || size_t(params.shape(0)) != num_envs ||
            size_t(params.shape(1)) != shoal::param_columns(s))
            throw UsageError("params must have shape (num_envs, parameter columns)");
        const size_t rows = num_envs * size_t(s.num_agents);
        const size_t obs_bytes = shoal::observation_size(s) * shoal::dtype_size(s.obs_dtype);
        shoal::VecBuffers b;
        b.observations = checked_raw_buffer(arrays[0], "observations", rows * obs_bytes);
        b.final_observations = checked_raw_buffer(arrays[1], "final_observations", rows * obs_bytes);
        b.actions = checked_raw_buffer(arrays[2], "actions", rows * size_t(s.action_dims) * 4);
        const py::ssize_t r = py::ssize_t(rows);
        b.rewards = checked_buffer<float>(arrays[3], "rewards", {r});
        // numpy bool is one byte holding 0 or 1: the uint8_t flags of env.h.
        b.terminals = reinterpret_cast<uint8_t*>(checked_buffer<bool>(arrays[4], "terminals", {r}));
        b.truncations = reinterpret_cast<uint8_t*>(checked_buffer<bool>(arrays[5], "truncations", {r}));
        b.masks = reinterpret_cast<uint8_t*>(checked_buffer<bool>(arrays[6], "masks", {r}));
        return b;
    }
};

/// numpy.ndarray: only arrays of exactly this type are read in place (a subclass, a list or a tensor
/// is converted by the checker, as Python's `type(actions) is np.ndarray` would decide).
PyTypeObject* ndarray_type() {
    static PyTypeObject* const type =
        reinterpret_cast<PyTypeObject*>(py::object(py::module_::import("numpy").attr("ndarray")).release().ptr());
    return type;
}

/// A send's actions as the core checks them: the caller's array when it is in the native form, else
/// the checker's conversion (checked and converted in Python: `checked` is set), held in `held`.
shoal::ActionArray send_actions(BoundVector& v, const py::object& actions, py::object& held, bool& checked) {
    if (Py_TYPE(actions.ptr()) == ndarray_type()) {
        const shoal::ActionArray view = action_array(py::reinterpret_borrow<py::array>(actions));
        if (v.core.native_form(view, v.core.rows_per_send()) || v.checker.is_none()) return view;
    } else if (v.checker.is_none()) {
        throw UsageError("actions must be a numpy array");
    }
    held = v.checker.attr("converted")(actions);
    if (Py_TYPE(held.ptr()) != ndarray_type()) throw UsageError("the action checker's conversion is not an ndarray");
    checked = true;
    return action_array(py::reinterpret_borrow<py::array>(held));
}

/// Raises the APIUsageError of actions the core refused, in the checker's words (the one text of
/// each action error, shared with the Python backends); the core's own message without a checker.
[[noreturn]] void raise_refusal(const BoundVector& v, const py::object& actions, const shoal::ActionsRefused& e) {
    if (v.checker.is_none()) throw UsageError(e.what());
    const py::object index =
        e.where.index == shoal::ActionRefusal::kLayout ? py::object(py::none()) : py::object(py::int_(e.where.index));
    const py::object error = v.checker.attr("refusal")(actions, index, e.where.count);
    PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
    throw py::error_already_set();
}

BoundVector* make_vector(Spec spec, size_t num_envs, ParamMatrix params, int32_t max_episode_steps,
                         py::array observations, py::array final_observations, py::array actions, py::array rewards,
                         py::array terminals, py::array truncations, py::array masks, unsigned num_threads,
                         const std::string& schedule, size_t dynamic_chunk, bool pin_threads, size_t num_buffers,
                         const std::string& box_actions, unsigned cpu_limit) {
    shoal::VectorOptions options;
    options.num_threads = num_threads;
    options.schedule = parse_schedule(schedule);
    options.dynamic_chunk = dynamic_chunk;
    options.pin_threads = pin_threads;
    options.num_buffers = num_buffers;
    options.box_actions = shoal::parse_box_actions(box_actions);
    options.cpu_limit = cpu_limit;
    return new BoundVector(std::move(spec), num_envs, std::move(params), max_episode_steps, observations,
                           final_observations, actions, rewards, terminals, truncations, masks, options);
}

py::dict collect_log(BoundVector& v, size_t begin, size_t end) {
    shoal::EpisodeTally tally;
    {
        py::gil_scoped_release release;
        tally = v.core.collect_log(begin, end);
    }
    py::dict log;
    log["episodes"] = tally.episodes;
    if (tally.episodes == 0) return log;
    const double n = double(tally.episodes);
    log["episode_return"] = tally.return_sum / n;
    log["episode_length"] = tally.length_sum / n;
    const shoal_env_spec& s = *v.spec.spec;
    for (int32_t i = 0; i < s.num_stats; ++i) log[s.stat_names[i]] = tally.stat_sums[i] / n;
    return log;
}

py::dict pool_stats(const BoundVector& v) {
    const shoal::PoolStats stats = v.core.pool_stats();
    py::dict d;
#define SHOAL_POOL_TOTAL_ITEM(name, description) d[#name] = stats.name;
#define SHOAL_POOL_GAUGE_ITEM(type, name, description) d[#name] = stats.name;
    SHOAL_POOL_TOTALS(SHOAL_POOL_TOTAL_ITEM)
    SHOAL_POOL_GAUGES(SHOAL_POOL_GAUGE_ITEM)
#undef SHOAL_POOL_TOTAL_ITEM
#undef SHOAL_POOL_GAUGE_ITEM
    return d;
}

void bind_vector(py::module_& m) {
    using V = BoundVector;
    const auto released = py::call_guard<py::gil_scoped_release>();
    py::class_<V>(m, "Vector", "Native envs over caller-owned buffers, stepped by a worker pool.")
        .def(py::init(&make_vector), py::arg("spec"), py::arg("num_envs"), py::arg("params"),
             py::arg("max_episode_steps"), py::arg("observations"), py::arg("final_observations"), py::arg("actions"),
             py::arg("rewards"), py::arg("terminals"), py::arg("truncations"), py::arg("masks"), py::arg("num_threads"),
             py::arg("schedule") = "static", py::arg("dynamic_chunk") = 0, py::arg("pin_threads") = false,
             py::arg("num_buffers") = 1, py::arg("box_actions") = "pass", py::arg("cpu_limit") = 0)
        .def(
            "reset",
            [](V& v, uint64_t seed) {
                with_signals([&](auto ask, void* context) {
                    v.core.reset(seed, ask, context);
                    return 0;
                });
            },
            py::arg("seed"),
            "Seeds env i from env_seed(seed, i) and resets every env (GIL released); forgets an interrupted "
            "step or reset. Ctrl-C or abandon() stops it at an env boundary (the envs then refuse steps until "
            "a reset runs to its end). Raises EnvError for env failures.")
        .def(
            "step",
            [](V& v) {
                return with_signals([&](auto ask, void* context) { return v.core.step(nullptr, ask, context); });
            },
            "Steps every env once with the actions in the buffer (GIL released); returns episodes ended.")
        .def(
            "step_actions",
            [](V& v, const py::object& actions) -> uint64_t {
                // Before any conversion: a whole batch's actions would otherwise be refused as the
                // wrong shape for one buffer, which is not what is wrong.
                if (v.core.pipelined()) throw UsageError("this vector is pipelined; use submit() and wait()");
                py::object held;
                bool checked = false;
                const shoal::ActionArray view = send_actions(v, actions, held, checked);
                try {
                    return with_signals(
                               [&](auto ask, void* context) { return v.core.step(view, ask, context, checked); })
                        .episodes;
                } catch (const shoal::ActionsRefused& e) {
                    raise_refusal(v, held ? held : actions, e);
                }
            },
            py::arg("actions"),
            "Checks and copies the actions, then steps every env (GIL released); returns episodes ended. "
            "int32 or int64 (float32 for a box) actions in native byte order, C-contiguous, of the exact shape "
            "are read in place; others are converted by action_checker first. Raises APIUsageError (nothing "
            "stepped) for actions the rule refuses.")
        .def(
            "submit",
            [](V& v, size_t b, const py::object& actions) {
                py::object held;
                bool checked = false;
                const shoal::ActionArray view = send_actions(v, actions, held, checked);
                try {
                    (void)v.core.submit(b, view, checked);
                } catch (const shoal::ActionsRefused& e) {
                    raise_refusal(v, held ? held : actions, e);
                }
            },
            py::arg("buffer"), py::arg("actions"),
            "Pipelined: checks and copies a buffer's actions as step_actions does, queues its step and returns "
            "at once.")
        .def_property(
            "action_checker", [](const V& v) { return v.checker; },
            [](V& v, py::object checker) { v.checker = std::move(checker); },
            "The caller's side of the action rule (spaces.ActionChecker of a send's rows): converted(actions) "
            "for actions of another form, refusal(actions, index, count) for the error of refused ones.")
        .def(
            "wait",
            [](V& v, size_t b) {
                return with_signals([&](auto ask, void* context) { return v.core.wait(b, ask, context); });
            },
            py::arg("buffer"), "Pipelined: waits (GIL released) for a buffer's step; returns episodes ended.")
        .def(
            "help_step", [](V& v, uint64_t budget_ns) { return v.core.help(budget_ns); }, py::arg("budget_ns"),
            released,
            "Pipelined: steps chunks of the buffer step in flight on this thread for about budget_ns (GIL released); "
            "False when there was none.")
        .def_property(
            "box_actions",
            [](const V& v) -> std::string {
                switch (v.core.box_actions()) {
                    case shoal::BoxActions::Strict: return "strict";
                    case shoal::BoxActions::Clip: return "clip";
                    default: return "pass";
                }
            },
            [](V& v, const std::string& name) { v.core.set_box_actions(shoal::parse_box_actions(name)); },
            "What Box actions outside the bounds do: 'pass' (to the envs as given), 'strict' (refused: "
            "step_actions and submit raise APIUsageError) or 'clip' (clipped to the bounds as they are copied).")
        .def_property_readonly(
            "num_buffers", [](const V& v) { return v.core.num_buffers(); }, "Buffers the envs form (1: not pipelined).")
        .def("collect_log", &collect_log, py::arg("begin"), py::arg("end"),
             "Episode stats of envs [begin, end) since the last collection, cleared: a dict of 'episodes' and, "
             "when some ended, the mean 'episode_return', 'episode_length' and each stat of the env.")
        .def(
            "set_num_threads", [](V& v, unsigned n) { v.core.set_num_threads(n); }, py::arg("num_threads"), released,
            "Changes the number of threads stepping envs, the caller included, between steps.")
        .def(
            "set_schedule",
            [](V& v, const std::string& schedule, size_t chunk) {
                v.core.set_schedule(parse_schedule(schedule), chunk);
            },
            py::arg("schedule"), py::arg("dynamic_chunk") = 0, released,
            "Changes how envs are shared out between steps: 'static' slices or 'dynamic' chunks of "
            "dynamic_chunk envs (0 = auto).")
        .def_property_readonly(
            "num_threads", [](const V& v) { return v.core.num_threads(); },
            "Threads stepping envs, the caller included, as requested (0 and 1: the caller alone).")
        .def("pool_stats", &pool_stats, "The worker pool's counters, by name (shoal/pool_stats.hpp).")
        .def(
            "env_memory",
            [](V& v, size_t i) {
                return py::memoryview::from_memory(static_cast<void*>(v.core.env(i)),
                                                   py::ssize_t(v.spec.spec->env_size));
            },
            py::arg("index"), "Raw bytes of env `index`'s struct (tests read and write env state through it).")
        .def(
            "abandon", [](V& v) { v.core.abandon(); },
            "Stops the step in flight at the next env boundary (from any thread); refusals follow until reset().")
        .def(
            "close", [](V& v) { v.core.close(); }, released,
            "Stops steps in flight, joins the threads and releases the envs (GIL released); closing twice does "
            "nothing.")
        .def_property_readonly("closed", [](const V& v) { return v.core.closed(); }, "Whether close() was called.");
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
    register_specs(m);
    bind_vector(m);
    register_cuda_copies(m);

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
