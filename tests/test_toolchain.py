"""The command lines shoal.native.toolchain gives per platform and compiler. Pure functions: macOS's
and MSVC's lines are checked here as text only; no macOS or MSVC compiler has run them."""

import pytest

from shoal.mujoco import build as mujoco_build
from shoal.native import toolchain
from shoal.native.toolchain import Toolchain, ToolchainError
from shoal.ocean import build as ocean_build


def test_linux_gcc_spells_the_ocean_flags_as_before():
    command = Toolchain("linux", "gcc", "gcc").shared_library(["a.c"], "a.so", ocean_build.OPTIONS)
    assert command == [
        "gcc", "-O2", "-std=gnu11", "-fwrapv", "-DNDEBUG", "-DPLATFORM_DESKTOP",
        "-Werror=implicit-function-declaration", "-Werror=uninitialized", "-Werror=maybe-uninitialized",
        "-Wno-alloc-size-larger-than", "-shared", "-fPIC", "-fvisibility=hidden",
        "a.c", "-o", "a.so", "-lm",
    ]  # fmt: skip


def test_thread_locals_go_through_descriptors_where_the_compiler_has_them():
    for kind in ("gcc", "clang"):
        with_descriptors = Toolchain("linux", kind, kind, tls_descriptors=True)
        command = with_descriptors.shared_library(["a.c"], "a.so", ocean_build.OPTIONS)
        assert command[command.index("a.c") - 1] == "-mtls-dialect=gnu2"
    assert Toolchain("darwin", "clang", "clang", tls_descriptors=True).library_flags(ocean_build.OPTIONS) == [
        "-dynamiclib",
        "-fvisibility=hidden",
    ]


def test_this_machines_compiler_is_probed_for_tls_descriptors(tmp_path):
    assert toolchain._accepts_flag(toolchain.default_compiler("linux"), "-fPIC")  # the probe itself compiles
    assert not toolchain._accepts_flag(toolchain.default_compiler("linux"), "-mno-such-flag-at-all")
    assert not toolchain.toolchain_for("win32", "cl").tls_descriptors


def test_clang_gets_no_gcc_only_warnings():
    command = Toolchain("linux", "clang", "clang").shared_library(["a.c"], "a.so", ocean_build.OPTIONS)
    assert "-Werror=uninitialized" in command
    assert not [flag for flag in command if "maybe-uninitialized" in flag or "alloc-size" in flag]


def test_macos_clang_builds_a_dylib_found_by_rpath(tmp_path):
    tools = Toolchain("darwin", "clang", "clang")
    library = tmp_path / "libmujoco.3.2.0.dylib"
    command = tools.shared_library(["t.c"], "t.dylib", mujoco_build.OPTIONS, tools.link_library(library))
    assert tools.library_suffix == ".dylib"
    assert command[command.index("t.c") - 2 : command.index("t.c")] == ["-dynamiclib", "-fvisibility=hidden"]
    assert "-fPIC" not in command and not [flag for flag in command if "tls" in flag]  # ELF only
    assert command[-3:] == [str(library), f"-Wl,-rpath,{tmp_path}", "-lm"]


def test_msvc_spells_everything_its_own_way(tmp_path):
    tools = Toolchain("win32", "cl", "msvc")
    (tmp_path / "mujoco.lib").write_bytes(b"")
    link = tools.link_library(tmp_path / "mujoco.dll")
    command = tools.shared_library(["t.c"], "t.dll", mujoco_build.OPTIONS, link)
    assert command == [
        "cl", "/nologo", "/O2", "/std:c11", "/fp:precise", "/DNDEBUG", "/we4013", "/LD", "t.c", "/Fe:t.dll",
        str(tmp_path / "mujoco.lib"),
    ]  # fmt: skip
    assert tools.library_suffix == ".dll" and tools.executable_suffix == ".exe"


def test_msvc_without_an_import_library_is_a_clear_error(tmp_path):
    with pytest.raises(ToolchainError, match=r"import library .*mujoco\.lib"):
        Toolchain("win32", "cl", "msvc").link_library(tmp_path / "mujoco.dll")


def test_mingw_links_the_dll_itself_and_needs_no_libgcc_dll(tmp_path):
    tools = Toolchain("win32", "x86_64-w64-mingw32-gcc", "gcc")
    command = tools.shared_library(["a.c"], "a.dll", ocean_build.OPTIONS, tools.link_library(tmp_path / "m.dll"))
    assert ["-shared", "-static-libgcc"] == command[command.index("a.c") - 2 : command.index("a.c")]
    assert "-fPIC" not in command and "-lm" not in command and "-D__USE_MINGW_ANSI_STDIO=1" in command
    assert command[-1] == str(tmp_path / "m.dll")


def test_msvc_for_another_os_is_refused():
    with pytest.raises(ToolchainError, match="Windows only"):
        Toolchain("linux", "cl", "msvc")


@pytest.mark.parametrize(
    "name, kind",
    [("cl", "msvc"), ("CL.EXE", "msvc"), ("clang-cl", "msvc"), ("/usr/bin/clang-17", "clang"),
     ("x86_64-w64-mingw32-gcc", "gcc"), ("gcc-12", "gcc"), ("cc", None)],
)  # fmt: skip
def test_the_kind_from_the_name(name, kind):
    assert toolchain.kind_from_name(name) == kind


@pytest.mark.parametrize(
    "text, kind",
    [("Apple clang version 15.0.0 (clang-1500.3.9.4)", "clang"), ("Debian clang version 14.0.6", "clang"),
     ("cc (Debian 12.2.0-14) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.", "gcc"),
     ("Microsoft (R) C/C++ Optimizing Compiler Version 19.38 for x64", "msvc")],
)  # fmt: skip
def test_the_kind_from_the_version_text(text, kind):
    assert toolchain.kind_from_version(text) == kind


def test_default_compilers_per_platform(monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    assert toolchain.default_compiler("linux") == "cc"
    assert toolchain.default_compiler("darwin") == "clang"
    monkeypatch.setattr(toolchain.shutil, "which", lambda name: "found" if name == "gcc" else None)
    assert toolchain.default_compiler("win32") == "gcc"  # MinGW when no cl is on PATH
    monkeypatch.setattr(toolchain.shutil, "which", lambda name: "found")
    assert toolchain.default_compiler("win32") == "cl"
    monkeypatch.setenv("CC", "my-cc")
    assert toolchain.default_compiler("darwin") == "my-cc"


def test_library_names_per_platform():
    assert [toolchain.library_glob("mujoco", t) for t in toolchain.TARGETS] == [
        "libmujoco.so*", "libmujoco*.dylib", "mujoco*.dll",
    ]  # fmt: skip
