// shoal._native's share of the Python backends' hot path: the checks and copies of a batch step
// that cost more as numpy calls than as one native call, with numpy's code cold after the envs ran.
//
// write_box_steps / StructuredRows.write: the output columns of a batch of Python env steps in one
// call, for Box observations and for Dict/Tuple ones (flattened as shoal.emulation.layout lays them out).
// Python's batched step (shoal.emulation.step_rows) collects each env's step() result; writing
// them column by column from Python takes a tuple transposition and four numpy conversions from
// sequences per batch, with numpy's code cold after the envs ran. Here one pass checks that every result has
// the plain form and a second copies them. Anything else is left to Python, which checks it (and
// raises the env's precise error) or converts it as numpy would.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "python_steps.hpp"
#include "shoal/actions.hpp"

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

/// How an ndarray `value` fits `shape` and the dtype `want` (C-contiguous, exactly an ndarray).
Transfer array_transfer(PyObject* value, const py::ssize_t* shape, py::ssize_t ndim, PyObject* want,
                        const ScalarTypes& types) {
    const auto& api = py::detail::npy_api::get();
    if (Py_TYPE(value) != api.PyArray_Type_) return Transfer::None;  // exactly an ndarray, no subclass
    const auto array = py::reinterpret_borrow<py::array>(value);
    if (!(array.flags() & py::array::c_style) || array.ndim() != ndim) return Transfer::None;
    for (py::ssize_t d = 0; d < ndim; ++d)
        if (array.shape(d) != shape[d]) return Transfer::None;
    PyObject* have = py::detail::array_proxy(value)->descr;
    if (api.PyArray_EquivTypes_(have, want)) return Transfer::Copy;
    if (api.PyArray_EquivTypes_(have, types.float64_dtype) && api.PyArray_EquivTypes_(want, types.float32_dtype))
        return Transfer::Narrow;
    return Transfer::None;
}

/// Writes `transfer`'s kind of copy of ndarray `value` (`items` elements) to `out`.
void copy_array(PyObject* value, Transfer transfer, size_t items, size_t item_bytes, unsigned char* out) {
    const void* source = py::detail::array_proxy(value)->data;
    if (transfer == Transfer::Copy) {
        std::memcpy(out, source, items * item_bytes);
        return;
    }
    const auto* wide = static_cast<const double*>(source);
    auto* narrow = reinterpret_cast<float*>(out);
    for (size_t k = 0; k < items; ++k) narrow[k] = float(wide[k]);
}

/// A Box observation: one ndarray of the rows' shape and dtype (or float64 for float32 rows).
class BoxObservations {
public:
    BoxObservations(const py::array& rows, const ScalarTypes& types)
        : rows_(rows), types_(types), items_(size_t(rows.size() / std::max<py::ssize_t>(rows.shape(0), 1))) {}

    bool fits(PyObject* observation) const { return transfer(observation) != Transfer::None; }

    void write(PyObject* observation, unsigned char* row) const {
        copy_array(observation, transfer(observation), items_, size_t(rows_.itemsize()), row);
    }

private:
    Transfer transfer(PyObject* observation) const {
        return array_transfer(observation, rows_.shape() + 1, rows_.ndim() - 1,
                              py::detail::array_proxy(rows_.ptr())->descr, types_);
    }

    const py::array& rows_;
    const ScalarTypes& types_;
    size_t items_;
};

/// Checks the layout of the output arrays for `count` results.
void check_outputs(py::ssize_t count, const py::array& observations, const py::array& rewards,
                   const py::array& terminals, const py::array& truncations) {
    if (observations.ndim() < 1 || observations.shape(0) != count || !(observations.flags() & py::array::c_style))
        throw py::value_error("observations must be C-contiguous with one row per result");
    const auto float_rows = py::array_t<float, py::array::c_style>::check_(rewards);
    const auto bool_rows = [&](const py::array& a) { return py::array_t<bool, py::array::c_style>::check_(a); };
    if (!float_rows || !bool_rows(terminals) || !bool_rows(truncations) || rewards.size() != count ||
        terminals.size() != count || truncations.size() != count)
        throw py::value_error("rewards (float32), terminals and truncations (bool) need one element per result");
    if (!observations.writeable() || !rewards.writeable() || !terminals.writeable() || !truncations.writeable())
        throw py::value_error("the output arrays must be writeable");
}

/// The two passes of a batch: every result plain (else the index of the first that is not, nothing
/// written), then each written. `Observations` has fits(observation) and write(observation, row).
template <class Observations>
py::ssize_t write_batch(const py::list& results, const Observations& observations_of, py::array observations,
                        py::array rewards, py::array terminals, py::array truncations, const ScalarTypes& types) {
    const py::ssize_t count = py::ssize_t(results.size());
    for (py::ssize_t i = 0; i < count; ++i) {
        PyObject* result = PyList_GET_ITEM(results.ptr(), i);
        if (!PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) != 5) return i;
        float reward;
        if (!observations_of.fits(PyTuple_GET_ITEM(result, 0)) ||
            !plain_reward(PyTuple_GET_ITEM(result, 1), types, reward) ||
            plain_flag(PyTuple_GET_ITEM(result, 2), types) < 0 || plain_flag(PyTuple_GET_ITEM(result, 3), types) < 0)
            return i;
    }
    auto* rows = static_cast<unsigned char*>(observations.mutable_data());
    const size_t row_bytes = size_t(observations.nbytes() / (count ? count : 1));
    auto* reward_out = static_cast<float*>(rewards.mutable_data());
    auto* terminal_out = static_cast<bool*>(terminals.mutable_data());
    auto* truncation_out = static_cast<bool*>(truncations.mutable_data());
    for (py::ssize_t i = 0; i < count; ++i) {
        PyObject* result = PyList_GET_ITEM(results.ptr(), i);
        observations_of.write(PyTuple_GET_ITEM(result, 0), rows + size_t(i) * row_bytes);
        (void)plain_reward(PyTuple_GET_ITEM(result, 1), types, reward_out[i]);
        terminal_out[i] = plain_flag(PyTuple_GET_ITEM(result, 2), types) == 1;
        truncation_out[i] = plain_flag(PyTuple_GET_ITEM(result, 3), types) == 1;
    }
    return -1;
}

/// Documented where it is registered (register_python_steps).
py::ssize_t write_box_steps(const py::list& results, py::array observations, py::array rewards, py::array terminals,
                            py::array truncations) {
    const py::ssize_t count = py::ssize_t(results.size());
    check_outputs(count, observations, rewards, terminals, truncations);
    const ScalarTypes& types = ScalarTypes::get();
    return write_batch(results, BoxObservations(observations, types), observations, rewards, terminals, truncations,
                       types);
}

/// A Dict/Tuple observation laid out in a row of bytes: each leaf found by its path (dict keys, tuple
/// indices) and copied to its offset. A leaf fits as an ndarray of its shape and dtype (or float64
/// for float32), or, for a scalar leaf, as a Python or numpy number of its kind.
class StructuredRows {
public:
    /// `leaves`: (path, dtype, shape, offset) of each leaf, as shoal.emulation.layout's Leaf.
    explicit StructuredRows(const py::list& leaves) : types_(ScalarTypes::get()) {
        for (const py::handle entry : leaves) {
            const auto fields = entry.cast<py::tuple>();
            Leaf leaf;
            for (const py::handle key : fields[0].cast<py::tuple>())
                leaf.path.push_back(py::reinterpret_borrow<py::object>(key));
            const py::dtype dtype = py::dtype::from_args(fields[1]);
            leaf.dtype = dtype;
            for (const py::handle extent : fields[2].cast<py::tuple>())
                leaf.shape.push_back(extent.cast<py::ssize_t>());
            leaf.offset = fields[3].cast<size_t>();
            leaf.items = 1;
            for (const py::ssize_t extent : leaf.shape) leaf.items *= size_t(extent);
            leaf.item_bytes = size_t(dtype.itemsize());
            leaf.kind = dtype.kind();
            leaves_.push_back(std::move(leaf));
        }
    }

    bool fits(PyObject* observation) const {
        for (const Leaf& leaf : leaves_) {
            PyObject* value = find(observation, leaf);
            if (value == nullptr || !leaf_fits(value, leaf)) return false;
        }
        return true;
    }

    void write(PyObject* observation, unsigned char* row) const {
        for (const Leaf& leaf : leaves_) {
            PyObject* value = find(observation, leaf);
            unsigned char* out = row + leaf.offset;
            const Transfer transfer =
                array_transfer(value, leaf.shape.data(), py::ssize_t(leaf.shape.size()), leaf.dtype.ptr(), types_);
            if (transfer != Transfer::None)
                copy_array(value, transfer, leaf.items, leaf.item_bytes, out);
            else
                write_number(value, leaf, out);
        }
    }

    py::ssize_t write_steps(const py::list& results, py::array observations, py::array rewards, py::array terminals,
                            py::array truncations) const {
        check_outputs(py::ssize_t(results.size()), observations, rewards, terminals, truncations);
        return write_batch(results, *this, observations, rewards, terminals, truncations, types_);
    }

private:
    struct Leaf {
        std::vector<py::object> path;
        py::object dtype;
        std::vector<py::ssize_t> shape;
        size_t offset = 0, items = 1, item_bytes = 0;
        char kind = 0;
    };

    /// The leaf's value in `observation` (borrowed), or null if the path does not lead through exact
    /// dicts and tuples (Python's check handles any other container).
    static PyObject* find(PyObject* observation, const Leaf& leaf) {
        PyObject* value = observation;
        for (const py::object& key : leaf.path) {
            if (PyUnicode_CheckExact(key.ptr())) {
                if (!PyDict_CheckExact(value)) return nullptr;
                value = PyDict_GetItemWithError(value, key.ptr());
                if (value == nullptr) {
                    PyErr_Clear();
                    return nullptr;
                }
            } else {
                const Py_ssize_t index = PyLong_AsSsize_t(key.ptr());
                if (!PyTuple_CheckExact(value) || index < 0 || index >= PyTuple_GET_SIZE(value)) return nullptr;
                value = PyTuple_GET_ITEM(value, index);
            }
        }
        return value;
    }

    bool leaf_fits(PyObject* value, const Leaf& leaf) const {
        if (array_transfer(value, leaf.shape.data(), py::ssize_t(leaf.shape.size()), leaf.dtype.ptr(), types_) !=
            Transfer::None)
            return true;
        if (!leaf.shape.empty()) return false;
        PyTypeObject* type = Py_TYPE(value);
        if (leaf.kind == 'i' && (leaf.item_bytes == 8 || leaf.item_bytes == 4)) {
            if (type != &PyLong_Type && type != types_.int64 && type != types_.int32) return false;
            int overflow = 0;
            const long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (PyErr_Occurred()) {
                PyErr_Clear();
                return false;
            }
            return !overflow && (leaf.item_bytes == 8 || (number >= INT32_MIN && number <= INT32_MAX));
        }
        if (leaf.kind == 'f' && (leaf.item_bytes == 8 || leaf.item_bytes == 4))
            return type == &PyFloat_Type || type == types_.float64 || type == types_.float32;
        return false;
    }

    /// A scalar leaf's number (leaf_fits said it fits), stored as numpy would.
    static void write_number(PyObject* value, const Leaf& leaf, unsigned char* out) {
        if (leaf.kind == 'i') {
            int overflow = 0;
            const long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (leaf.item_bytes == 8) {
                const int64_t wide = number;
                std::memcpy(out, &wide, sizeof wide);
            } else {
                const int32_t narrow = int32_t(number);
                std::memcpy(out, &narrow, sizeof narrow);
            }
            return;
        }
        const double number = PyFloat_AsDouble(value);
        if (leaf.item_bytes == 8) {
            std::memcpy(out, &number, sizeof number);
        } else {
            const float narrow = float(number);
            std::memcpy(out, &narrow, sizeof narrow);
        }
    }

    const ScalarTypes& types_;
    std::vector<Leaf> leaves_;
};

template <class Int>
bool all_below(const void* data, size_t count, uint64_t upper) {
    return shoal::ints_below(static_cast<const Int*>(data), count, upper);
}

/// True if every value of an integer array is in [0, upper); false if one is not, or if the array
/// is not a C-contiguous, aligned integer array in native byte order (then the caller's full check
/// decides).
bool int_actions_below(const py::array& actions, uint64_t upper) {
    const py::dtype dtype = actions.dtype();
    const char kind = dtype.kind();
    if ((kind != 'i' && kind != 'u') || !native_layout(actions, dtype)) return false;
    const void* data = actions.data();
    const size_t count = size_t(actions.size());
    const bool is_signed = kind == 'i';
    switch (actions.itemsize()) {
        case 1: return is_signed ? all_below<int8_t>(data, count, upper) : all_below<uint8_t>(data, count, upper);
        case 2: return is_signed ? all_below<int16_t>(data, count, upper) : all_below<uint16_t>(data, count, upper);
        case 4: return is_signed ? all_below<int32_t>(data, count, upper) : all_below<uint32_t>(data, count, upper);
        case 8: return is_signed ? all_below<int64_t>(data, count, upper) : all_below<uint64_t>(data, count, upper);
        default: return false;
    }
}

}  // namespace

bool native_layout(const py::array& array, const py::dtype& dtype) {
    constexpr int kContiguousAligned = py::array::c_style | py::detail::npy_api::NPY_ARRAY_ALIGNED_;
    if ((array.flags() & kContiguousAligned) != kContiguousAligned) return false;
    constexpr char kNative = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? '<' : '>';
    const char order = dtype.byteorder();  // numpy writes native order as '=', and '|' where it has none
    return order == '=' || order == '|' || order == kNative;
}

void register_python_steps(py::module_& m) {
    m.def("write_box_steps", &write_box_steps, py::arg("results"), py::arg("observations"), py::arg("rewards"),
          py::arg("terminals"), py::arg("truncations"),
          R"doc(Writes row i of each output from results[i], a step()'s (observation, reward, terminated,
truncated, info) tuple, if every result is plain: an observation ndarray of the rows' shape and dtype
(or float64 for float32 rows), C-contiguous; a reward of Python's float or int or numpy's
float32/float64/int32/int64; flags of bool or numpy.bool_. Returns -1 then; else the index of the
first result that is not plain, and writes nothing.)doc");
    py::class_<StructuredRows>(m, "StructuredRows",
                               "Writes batches of Dict/Tuple observations into rows laid out by leaf.")
        .def(py::init<const py::list&>(), py::arg("leaves"),
             "leaves: (path, dtype, shape, offset) of each leaf, in the row's order.")
        .def("write_steps", &StructuredRows::write_steps, py::arg("results"), py::arg("observations"),
             py::arg("rewards"), py::arg("terminals"), py::arg("truncations"),
             R"doc(As write_box_steps, for observations of the leaves' structure: an observation is plain if
every leaf, found through exact dicts and tuples, is a C-contiguous ndarray of its shape and dtype (or
float64 for float32), or, for a scalar leaf, a Python or numpy (int32/int64, float32/float64) number of
its kind that fits.)doc");
    m.def("int_actions_below", &int_actions_below, py::arg("actions"), py::arg("upper"),
          R"doc(True if every value of a C-contiguous integer array is in [0, upper); False if one is not,
or for any other array (the caller's full check decides).)doc");
}
