// Where shoal._native's env specs come from (specs.hpp).
#include "specs.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "bundled_envs.h"
#include "shoal/errors.hpp"
#include "shoal/platform/library.hpp"
#include "shoal/vec.hpp"

using shoal::UsageError;

namespace {

/// The bundled envs, one entry per folder cpp/envs/<name>/ (bundled_envs.h is generated from them).
constexpr std::pair<const char*, const shoal_env_spec* (*)()> kBundled[] = {
#define SHOAL_BUNDLED_ENTRY(NAME) {#NAME, shoal_env_spec_##NAME},
    SHOAL_BUNDLED_ENVS(SHOAL_BUNDLED_ENTRY)
#undef SHOAL_BUNDLED_ENTRY
};

size_t text_params(const shoal_env_spec& s) {
    size_t count = 0;
    for (int32_t p = 0; p < s.num_params; ++p) count += s.params[p].type == SHOAL_PARAM_TEXT;
    return count;
}

}  // namespace

Spec bundled_spec(const std::string& name) {
    for (const auto& [bundled_name, get] : kBundled)
        if (name == bundled_name) return Spec{get(), nullptr, "", name};
    throw UsageError("no bundled native env named '" + name + "'");
}

std::vector<std::string> bundled_names() {
    std::vector<std::string> names;
    for (const auto& entry : kBundled) names.emplace_back(entry.first);
    return names;
}

Spec load_spec(const std::string& path, const std::string& name) {
    std::string why;
    void* handle = shoal::platform::open_library(path, &why);
    if (!handle) throw UsageError("cannot load native env library '" + path + "': " + why);
    const std::string symbol = "shoal_env_spec_" + name;
    auto get = reinterpret_cast<const shoal_env_spec* (*)()>(shoal::platform::find_symbol(handle, symbol.c_str()));
    if (!get)
        throw UsageError("'" + path + "' does not export " + symbol + "(); did the env use SHOAL_EXPORT_ENV(" + name +
                         ", ...)?");
    const shoal_env_spec* spec = get();
    if (!spec) throw UsageError(symbol + "() returned NULL");
    shoal::validate_spec(*spec);
    return Spec{spec, std::make_shared<Library>(handle), path, name};
}

bool configurable(const Spec& spec) {
    return spec.spec->configure != nullptr || text_params(*spec.spec) != 0;
}

Spec configure_spec(const Spec& base, const double* row, size_t columns, const std::vector<std::string>& texts) {
    const shoal_env_spec& s = *base.spec;
    if (!configurable(base)) return base;
    if (columns != shoal::param_columns(s))
        throw UsageError("params must be one row of " + std::to_string(shoal::param_columns(s)) + " values");
    if (texts.size() != text_params(s))
        throw UsageError(std::to_string(texts.size()) + " texts for " + std::to_string(text_params(s)) +
                         " TEXT parameters");
    auto configured = std::make_shared<Configured>();
    configured->spec = s;
    configured->params.assign(s.params, s.params + s.num_params);
    configured->texts = texts;
    for (size_t p = 0, t = 0; p < configured->params.size(); ++p)
        if (configured->params[p].type == SHOAL_PARAM_TEXT)
            configured->params[p].default_text = configured->texts[t++].c_str();
    configured->spec.params = configured->params.data();
    configured->spec.shared = nullptr;
    if (s.configure) {
        // An env struct holding the parameters, as init() sees them; freed before configure's result is used.
        const size_t align = std::max<size_t>(s.env_align, alignof(std::max_align_t));
        std::unique_ptr<void, void (*)(void*)> scratch(
            std::aligned_alloc(align, (s.env_size + align - 1) / align * align), &std::free);
        if (!scratch) throw std::bad_alloc();
        std::memset(scratch.get(), 0, s.env_size);
        shoal::write_params(configured->spec, scratch.get(), row);
        std::string error(SHOAL_ERROR_CAPACITY, '\0');
        if (s.configure(&configured->spec, scratch.get(), error.data()) != 0) {
            error.resize(std::strlen(error.c_str()));
            // configure() judges the caller's parameters: a refusal is a usage error.
            throw UsageError(std::string(s.name) + ": " + (error.empty() ? "configure() failed" : error));
        }
        shoal::validate_spec(configured->spec);
    }
    Spec spec = base;
    spec.spec = &configured->spec;
    spec.configured = std::move(configured);
    return spec;
}
