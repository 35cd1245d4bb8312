// shoal._native's functions for Python envs (python_steps.cpp).
#pragma once

#include <pybind11/pybind11.h>

void register_python_steps(pybind11::module_& m);
