// The numpy arrays shoal._native hands to the core: checked as buffers the envs write, or seen as
// action arrays by the fast check (shoal::ActionArray).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "python_steps.hpp"
#include "shoal/errors.hpp"
#include "shoal/vector.hpp"

/// `array`'s data as a C-contiguous, writeable T buffer of `shape`; UsageError naming `name` otherwise.
template <class T>
inline T* checked_buffer(pybind11::array& array, const char* name, std::vector<pybind11::ssize_t> shape) {
    if (!pybind11::isinstance<pybind11::array_t<T>>(array) || array.dtype().kind() != pybind11::dtype::of<T>().kind() ||
        array.itemsize() != pybind11::ssize_t(sizeof(T)))
        throw shoal::UsageError(std::string(name) + " has dtype " + std::string(pybind11::str(array.dtype())) +
                                ", expected " + std::string(pybind11::str(pybind11::dtype::of<T>())));
    if (!(array.flags() & pybind11::array::c_style) || !array.writeable())
        throw shoal::UsageError(std::string(name) + " must be C-contiguous and writeable");
    if (std::vector<pybind11::ssize_t>(array.shape(), array.shape() + array.ndim()) != shape)
        throw shoal::UsageError(std::string(name) + " has the wrong shape");
    return static_cast<T*>(array.mutable_data());
}

/// `array`'s data as a C-contiguous, writeable buffer of `expected_bytes`; UsageError naming `name` otherwise.
inline void* checked_raw_buffer(pybind11::array& array, const char* name, size_t expected_bytes) {
    if (!(array.flags() & pybind11::array::c_style) || !array.writeable())
        throw shoal::UsageError(std::string(name) + " must be C-contiguous and writeable");
    if (size_t(array.nbytes()) != expected_bytes)
        throw shoal::UsageError(std::string(name) + " has " + std::to_string(array.nbytes()) + " bytes, expected " +
                                std::to_string(expected_bytes));
    return array.mutable_data();
}

/// How the fast action check sees a numpy array.
inline shoal::ActionArray action_array(const pybind11::array& actions) {
    shoal::ActionArray view;
    view.ndim = int(actions.ndim());
    view.shape[0] = view.ndim >= 1 ? size_t(actions.shape(0)) : 0;
    view.shape[1] = view.ndim >= 2 ? size_t(actions.shape(1)) : 0;
    view.itemsize = size_t(actions.itemsize());
    const pybind11::dtype dtype = actions.dtype();
    view.kind = dtype.kind();
    view.native_layout = native_layout(actions, dtype);
    view.data = actions.data();
    return view;
}
