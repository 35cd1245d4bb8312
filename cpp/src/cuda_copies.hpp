// shoal._native's CUDA copies for the torch hand-off (cuda_copies.cpp).
#pragma once

#include <pybind11/pybind11.h>

void register_cuda_copies(pybind11::module_& m);
