// shoal._native: the only file that includes pybind11. Converts, validates, releases the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "shoal/rng.h"

namespace py = pybind11;

PYBIND11_MODULE(_native, m) {
    m.doc() = "shoal's native core (private; use the shoal package)";
    m.attr("__version__") = SHOAL_VERSION;
    m.def("env_seed", &shoal_env_seed, py::arg("seed"), py::arg("index"),
          R"doc(Seed of env `index` under vector seed `seed` (same rule as shoal.seeding.env_seed).)doc");
}
