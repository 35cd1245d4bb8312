// shoal._native's EnvSpec (with specs.cpp behind it): a spec's description as a dict, configure(),
// pickling as (library path, name), and the functions that find specs.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>
#include <vector>

#include "spec_bindings.hpp"
#include "specs.hpp"

namespace py = pybind11;

namespace {

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

py::dict describe_param(const shoal_param& p) {
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
    return param;
}

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
    for (int32_t i = 0; i < s.num_params; ++i) params.append(describe_param(s.params[i]));
    d["params"] = params;
    d["stats"] = std::vector<std::string>(s.stat_names, s.stat_names + s.num_stats);
    d["env_size"] = s.env_size;
    return d;
}

Spec configure(const Spec& base, py::array_t<double, py::array::c_style | py::array::forcecast> row,
               const std::vector<std::string>& texts) {
    const size_t columns = row.ndim() == 1 ? size_t(row.shape(0)) : ~size_t{0};  // not one row: never a match
    return configure_spec(base, row.data(), columns, texts);
}

}  // namespace

void register_specs(py::module_& m) {
    py::class_<Spec>(m, "EnvSpec", "A native env type: sizes, spaces, parameters and callbacks.")
        .def_property_readonly(
            "name", [](const Spec& s) { return std::string(s.spec->name); }, "The env's NAME (SHOAL_EXPORT_ENV).")
        .def("describe", &describe, "The spec as a dict (spaces, params, stats, time limit).")
        .def("configure", &configure, py::arg("params"), py::arg("texts"),
             "The spec of one vector with these parameters (env 0's row, the TEXT parameters' values): "
             "configure() run on a copy; the spec itself if it has neither configure() nor TEXT parameters.")
        .def_property_readonly("configurable", &configurable,
                               "Whether configure() makes a copy: the spec has configure() or a TEXT parameter.")
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
}
