// shoal._native's share of the Python backends' hot path: the checks and copies of a batch step
// that cost more as numpy calls than as one native call, with numpy's code cold after the envs ran.
//
// write_box_steps: the output columns of a batch of Python env steps in one call.
// Python's batched step (shoal.emulation.step_box_rows) collects each env's step() result; writing
// them column by column from Python cost more than a third of shoal's own share of a step (64
// gymnasium CartPoles: a tuple transposition and four numpy conversions from sequences, about 25 us
// a batch with numpy's code cold after the envs ran). Here one pass checks that every result has
// the plain form and a second copies them. Anything else is left to Python, which checks it (and
// raises the env's precise error) or converts it as numpy would.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <cstring>

#include "python_steps.hpp"

namespace py = pybind11;

namespace {

/// numpy's scalar types a plain step returns besides Python's float, int and bool. Kept for the life
/// of the process (never decref'ed at interpreter teardown).
struct ScalarTypes {
    PyTypeObject *float32, *float64, *int32, *int64, *bool_;
    PyObject *float32_dtype, *float64_dtype;

    static const ScalarTypes& get() {
        static const ScalarTypes types = [] {
            const py::module_ numpy = py::module_::import("numpy");
            const auto type = [&](const char* name) {
                return reinterpret_cast<PyTypeObject*>(py::object(numpy.attr(name)).release().ptr());
            };
            return ScalarTypes{type("float32"),
                               type("float64"),
                               type("int32"),
                               type("int64"),
                               type("bool_"),
                               py::dtype::of<float>().release().ptr(),
                               py::dtype::of<double>().release().ptr()};
        }();
        return types;
    }
};

/// Integers up to 2^53 are exact in a double, so double -> float32 rounds them once, as numpy does.
constexpr long long kExactInDouble = 1LL << 53;

/// A reward of a plain type, as the float32 numpy would store; false for anything else.
bool plain_reward(PyObject* reward, const ScalarTypes& types, float& out) {
    PyTypeObject* type = Py_TYPE(reward);
    if (type == &PyFloat_Type || type == types.float64) {  // numpy's float64 is a float subclass
        out = float(PyFloat_AS_DOUBLE(reward));
        return true;
    }
    if (type == types.float32) {
        out = float(PyFloat_AsDouble(reward));  // exact: a float32 widened to double
        return !PyErr_Occurred();
    }
    if (type == &PyLong_Type || type == types.int32 || type == types.int64) {
        int overflow = 0;
        const long long value = PyLong_AsLongLongAndOverflow(reward, &overflow);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return false;
        }
        if (overflow || value > kExactInDouble || value < -kExactInDouble) return false;
        out = float(double(value));
        return true;
    }
    return false;
}

/// 1 or 0 for a flag of a plain type (bool, numpy's bool_); -1 for anything else.
int plain_flag(PyObject* flag, const ScalarTypes& types) {
    if (flag == Py_True) return 1;
    if (flag == Py_False) return 0;
    if (Py_TYPE(flag) == types.bool_) return PyObject_IsTrue(flag);
    return -1;
}

/// How an observation reaches its row: copied as is, converted from float64 to float32, or not at all.
enum class Transfer { Copy, Narrow, None };

Transfer observation_transfer(PyObject* observation, const py::array& rows, const ScalarTypes& types) {
    const auto& api = py::detail::npy_api::get();
    if (Py_TYPE(observation) != api.PyArray_Type_) return Transfer::None;  // exactly an ndarray, no subclass
    const auto array = py::reinterpret_borrow<py::array>(observation);
    if (!(array.flags() & py::array::c_style) || array.ndim() != rows.ndim() - 1) return Transfer::None;
    for (py::ssize_t d = 0; d < array.ndim(); ++d)
        if (array.shape(d) != rows.shape(d + 1)) return Transfer::None;
    PyObject* have = py::detail::array_proxy(observation)->descr;
    PyObject* want = py::detail::array_proxy(rows.ptr())->descr;
    if (api.PyArray_EquivTypes_(have, want)) return Transfer::Copy;
    if (api.PyArray_EquivTypes_(have, types.float64_dtype) && api.PyArray_EquivTypes_(want, types.float32_dtype))
        return Transfer::Narrow;
    return Transfer::None;
}

/// Documented where it is registered (register_python_steps).
py::ssize_t write_box_steps(const py::list& results, py::array observations, py::array rewards, py::array terminals,
                            py::array truncations) {
    const py::ssize_t count = py::ssize_t(results.size());
    if (observations.ndim() < 1 || observations.shape(0) != count || !(observations.flags() & py::array::c_style))
        throw py::value_error("observations must be C-contiguous with one row per result");
    const auto float_rows = py::array_t<float, py::array::c_style>::check_(rewards);
    const auto bool_rows = [&](const py::array& a) { return py::array_t<bool, py::array::c_style>::check_(a); };
    if (!float_rows || !bool_rows(terminals) || !bool_rows(truncations) || rewards.size() != count ||
        terminals.size() != count || truncations.size() != count)
        throw py::value_error("rewards (float32), terminals and truncations (bool) need one element per result");
    if (!observations.writeable() || !rewards.writeable() || !terminals.writeable() || !truncations.writeable())
        throw py::value_error("the output arrays must be writeable");

    const ScalarTypes& types = ScalarTypes::get();
    // First pass: every result plain, or nothing is written.
    for (py::ssize_t i = 0; i < count; ++i) {
        PyObject* result = PyList_GET_ITEM(results.ptr(), i);
        if (!PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) != 5) return i;
        float reward;
        if (observation_transfer(PyTuple_GET_ITEM(result, 0), observations, types) == Transfer::None ||
            !plain_reward(PyTuple_GET_ITEM(result, 1), types, reward) ||
            plain_flag(PyTuple_GET_ITEM(result, 2), types) < 0 || plain_flag(PyTuple_GET_ITEM(result, 3), types) < 0)
            return i;
    }
    auto* observation_bytes = static_cast<unsigned char*>(observations.mutable_data());
    const size_t row_items = size_t(observations.size() / (count ? count : 1));
    const size_t row_bytes = row_items * size_t(observations.itemsize());
    auto* reward_out = static_cast<float*>(rewards.mutable_data());
    auto* terminal_out = static_cast<bool*>(terminals.mutable_data());
    auto* truncation_out = static_cast<bool*>(truncations.mutable_data());
    for (py::ssize_t i = 0; i < count; ++i) {
        PyObject* result = PyList_GET_ITEM(results.ptr(), i);
        PyObject* observation = PyTuple_GET_ITEM(result, 0);
        const void* source = py::detail::array_proxy(observation)->data;
        unsigned char* row = observation_bytes + size_t(i) * row_bytes;
        if (observation_transfer(observation, observations, types) == Transfer::Copy) {
            std::memcpy(row, source, row_bytes);
        } else {
            const auto* wide = static_cast<const double*>(source);
            auto* narrow = reinterpret_cast<float*>(row);
            for (size_t k = 0; k < row_items; ++k) narrow[k] = float(wide[k]);
        }
        (void)plain_reward(PyTuple_GET_ITEM(result, 1), types, reward_out[i]);
        terminal_out[i] = plain_flag(PyTuple_GET_ITEM(result, 2), types) == 1;
        truncation_out[i] = plain_flag(PyTuple_GET_ITEM(result, 3), types) == 1;
    }
    return -1;
}

template <class Unsigned>
bool all_below(const void* data, size_t count, uint64_t upper) {
    const auto* values = static_cast<const Unsigned*>(data);
    bool outside = false;
    for (size_t i = 0; i < count; ++i) outside |= uint64_t(values[i]) >= upper;
    return !outside;
}

/// True if every value of an integer array is in [0, upper); false if one is not, or if the array
/// is not a C-contiguous integer array (then the caller's full check decides).
bool int_actions_below(const py::array& actions, uint64_t upper) {
    if (!(actions.flags() & py::array::c_style)) return false;
    const char kind = actions.dtype().kind();
    if (kind != 'i' && kind != 'u') return false;
    // Signed values read as unsigned: a negative one lands above every bound.
    const void* data = actions.data();
    const size_t count = size_t(actions.size());
    switch (actions.itemsize()) {
        case 1: return all_below<uint8_t>(data, count, upper);
        case 2: return all_below<uint16_t>(data, count, upper);
        case 4: return all_below<uint32_t>(data, count, upper);
        case 8: return all_below<uint64_t>(data, count, upper);
        default: return false;
    }
}

}  // namespace

void register_python_steps(py::module_& m) {
    m.def("write_box_steps", &write_box_steps, py::arg("results"), py::arg("observations"), py::arg("rewards"),
          py::arg("terminals"), py::arg("truncations"),
          R"doc(Writes row i of each output from results[i], a step()'s (observation, reward, terminated,
truncated, info) tuple, if every result is plain: an observation ndarray of the rows' shape and dtype
(or float64 for float32 rows), C-contiguous; a reward of Python's float or int or numpy's
float32/float64/int32/int64; flags of bool or numpy.bool_. Returns -1 then; else the index of the
first result that is not plain, and writes nothing.)doc");
    m.def("int_actions_below", &int_actions_below, py::arg("actions"), py::arg("upper"),
          R"doc(True if every value of a C-contiguous integer array is in [0, upper); False if one is not,
or for any other array (the caller's full check decides).)doc");
}
