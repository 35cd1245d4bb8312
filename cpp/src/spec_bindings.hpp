// shoal._native's EnvSpec class and spec functions (spec_bindings.cpp).
#pragma once

#include <pybind11/pybind11.h>

void register_specs(pybind11::module_& m);
