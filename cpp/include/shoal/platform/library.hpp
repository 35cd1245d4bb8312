// shoal/platform/library.hpp — loading a third-party env library and finding its symbols
// (dlopen/dlsym; Windows: LoadLibraryExW/GetProcAddress).
#pragma once

#include <string>

#include "shoal/platform/os.hpp"

#if defined(SHOAL_OS_WINDOWS)
#include "shoal/platform/windows.hpp"
#else
#include <dlfcn.h>
#endif

namespace shoal::platform {

/// Loads the shared library at `path` (UTF-8), resolving every symbol now and keeping them local
/// to it. Returns its handle, or null with `*error` saying why.
inline void* open_library(const std::string& path, std::string* error) {
#if defined(SHOAL_OS_WINDOWS)
    const int wide_length = MultiByteToWideChar(CP_UTF8, 0, path.c_str(), -1, nullptr, 0);
    std::wstring wide(wide_length > 0 ? static_cast<size_t>(wide_length) : 1, L'\0');
    if (wide_length > 0) MultiByteToWideChar(CP_UTF8, 0, path.c_str(), -1, wide.data(), wide_length);
    // Its own DLLs are found beside it and in os.add_dll_directory()'s folders (as ctypes finds
    // them), not in the current directory or PATH: Windows' counterpart of an rpath.
    // LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR needs a full path.
    std::wstring full(MAX_PATH, L'\0');
    DWORD full_length = GetFullPathNameW(wide.c_str(), DWORD(full.size()), full.data(), nullptr);
    if (full_length >= full.size()) {
        full.resize(full_length);
        full_length = GetFullPathNameW(wide.c_str(), DWORD(full.size()), full.data(), nullptr);
    }
    if (full_length > 0 && full_length < full.size()) wide.assign(full.c_str(), full_length);
    HMODULE handle =
        LoadLibraryExW(wide.c_str(), nullptr, LOAD_LIBRARY_SEARCH_DEFAULT_DIRS | LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR);
    if (handle == nullptr) {
        const DWORD code = GetLastError();
        char message[512] = {};
        const DWORD n = FormatMessageA(FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS, nullptr, code, 0,
                                       message, sizeof(message), nullptr);
        std::string text(message, n);
        while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == '.')) text.pop_back();
        *error = text.empty() ? "Windows error " + std::to_string(code) : text;
    }
    return reinterpret_cast<void*>(handle);
#else
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
        const char* why = dlerror();
        *error = why ? why : "unknown error";
    }
    return handle;
#endif
}

/// The address of `name` in a library from open_library(), or null.
inline void* find_symbol(void* library, const char* name) noexcept {
#if defined(SHOAL_OS_WINDOWS)
    return reinterpret_cast<void*>(GetProcAddress(static_cast<HMODULE>(library), name));
#else
    return dlsym(library, name);
#endif
}

}  // namespace shoal::platform
