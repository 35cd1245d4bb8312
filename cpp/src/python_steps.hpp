// shoal._native's functions for Python envs (python_steps.cpp).
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

void register_python_steps(pybind11::module_& m);

/// True if `array` (whose dtype is `dtype`) can be read in place as its C type: C-contiguous, aligned
/// and in native byte order. The native action checks read raw values only from such arrays.
bool native_layout(const pybind11::array& array, const pybind11::dtype& dtype);
