"""The C compiler shoal drives to build env libraries at run time (Ocean envs, MuJoCo tasks, SDK envs).

A build says what it needs in no compiler's spelling (an ``Options``); a ``Toolchain`` (target OS,
compiler, and the compiler's kind) spells it: gcc and clang on Linux (``-shared -fPIC``), clang on
macOS (``-dynamiclib``), MSVC's ``cl /LD`` or MinGW's gcc on Windows. The command lines are pure
functions of (toolchain, options, files), so those of a platform this machine is not are testable
here. ``current()`` is the toolchain of this machine: the compiler is $CC if set.

Symbols: env libraries are compiled with hidden visibility on ELF and Mach-O, so only what env.h
marks SHOAL_VISIBLE is exported; PE exports only what is marked ``__declspec(dllexport)`` anyway.
Linking a library the env calls (libmujoco): on Linux and macOS its folder goes into the rpath; on
Windows the linker takes its import library (MinGW also the DLL itself) and, having no rpath, the
DLL's folder must be on the loader's search path (``allow_dependencies_from``).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import APIUsageError

TARGETS = ("linux", "darwin", "win32")
KINDS = ("gcc", "clang", "msvc")
LIBRARY_SUFFIX = {"linux": ".so", "darwin": ".dylib", "win32": ".dll"}
EXECUTABLE_SUFFIX = {"linux": "", "darwin": "", "win32": ".exe"}
# MSVC's numbers for the warnings builds make errors; a warning a compiler lacks is left out.
MSVC_WARNINGS = {"implicit-function-declaration": "4013", "uninitialized": "4700", "maybe-uninitialized": "4701"}
TLS_DESCRIPTORS_FLAG = "-mtls-dialect=gnu2"
GCC_ONLY_WARNINGS = {"maybe-uninitialized", "alloc-size-larger-than"}  # clang: -Wuninitialized covers the first


class ToolchainError(APIUsageError):
    """No usable C compiler (or library to link) for a build on this platform."""


@dataclass(frozen=True)
class Options:
    """What a build asks of the compiler, whichever compiler it is."""

    optimize: int = 2
    std: str = "gnu11"  # MSVC has no GNU dialects: /std:c11
    defines: tuple = ()  # "NAME" or "NAME=VALUE"
    includes: tuple = ()  # folders
    wrapv: bool = False  # signed overflow wraps (MSVC has no such switch and does not exploit it as gcc does)
    fp_contract: bool = True  # False: no fused multiply-adds
    errors: tuple = ()  # warnings that are errors, by gcc's names
    silenced: tuple = ()  # warnings turned off, by gcc's names
    libraries: tuple = ()  # system libraries by short name ("m"); Windows' C runtime has libm in it
    extra: tuple = field(default=(), compare=False)  # the caller's own flags, spelled for this compiler


@dataclass(frozen=True)
class Toolchain:
    target: str  # "linux", "darwin" or "win32"
    compiler: str  # the command
    kind: str  # "gcc", "clang" or "msvc" (the flag dialect; clang-cl is "msvc")
    # ELF on x86-64: thread-locals through TLS descriptors (-mtls-dialect=gnu2), if the compiler has them
    # (gcc; clang from 19). Else a dlopen'ed library's thread-local access is a __tls_get_addr call; see env.h.
    tls_descriptors: bool = False

    def __post_init__(self):
        if self.target not in TARGETS:
            raise ToolchainError(f"target must be one of {TARGETS}, got {self.target!r}")
        if self.kind not in KINDS:
            raise ToolchainError(f"compiler kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "msvc" and self.target != "win32":
            raise ToolchainError(f"MSVC ({self.compiler}) builds for Windows only, not {self.target}")

    @property
    def library_suffix(self) -> str:
        return LIBRARY_SUFFIX[self.target]

    @property
    def executable_suffix(self) -> str:
        return EXECUTABLE_SUFFIX[self.target]

    def describe(self) -> str:
        """What a cache key needs to tell builds of two toolchains apart."""
        return f"{self.target}:{self.kind}:{self.compiler}"

    def compile_flags(self, options: Options) -> list[str]:
        if self.kind == "msvc":
            return self._msvc_flags(options)
        flags = [f"-O{options.optimize}", f"-std={options.std}"]
        flags += ["-fwrapv"] if options.wrapv else []
        flags += [] if options.fp_contract else ["-ffp-contract=off"]
        flags += [f"-D{d}" for d in options.defines]
        flags += [f"-I{i}" for i in options.includes]
        flags += [f"-Werror={w}" for w in options.errors if self._knows(w)]
        flags += [f"-Wno-{w}" for w in options.silenced if self._knows(w)]
        if self.target == "win32":  # C99 printf formats (%zu) whatever C runtime the library meets
            flags.append("-D__USE_MINGW_ANSI_STDIO=1")
        return flags + list(options.extra)

    def _knows(self, warning: str) -> bool:
        return self.kind == "gcc" or warning not in GCC_ONLY_WARNINGS

    def _msvc_flags(self, options: Options) -> list[str]:
        flags = ["/nologo", "/Od" if options.optimize == 0 else "/O2", f"/std:{options.std.replace('gnu', 'c')}"]
        flags += [] if options.fp_contract else ["/fp:precise"]  # precise never contracts unless /fp:contract
        flags += [f"/D{d}" for d in options.defines]
        flags += [f"/I{i}" for i in options.includes]
        flags += [f"/we{MSVC_WARNINGS[w]}" for w in options.errors if w in MSVC_WARNINGS]
        return flags + list(options.extra)

    def library_flags(self, options: Options) -> list[str]:
        """What makes the output a loadable shared library exporting only env.h's marked symbols."""
        if self.kind == "msvc":
            return ["/LD"]
        if self.target == "win32":  # MinGW: no libgcc DLL to find at load time
            return ["-shared", "-static-libgcc"]
        if self.target == "darwin":
            # No -undefined dynamic_lookup (what Python extensions need for libpython's symbols): an env
            # library calls nothing it does not link, so an unresolved name stays a link error here.
            return ["-dynamiclib", "-fvisibility=hidden"]
        flags = ["-shared", "-fPIC", "-fvisibility=hidden"]
        return flags + ([TLS_DESCRIPTORS_FLAG] if self.tls_descriptors else [])

    def link_flags(self, options: Options, link: list[str]) -> list[str]:
        if self.kind == "msvc":
            return list(link)  # .lib files; cl hands them to the linker
        return list(link) + [f"-l{lib}" for lib in options.libraries if self.target != "win32" or lib != "m"]

    def shared_library(self, sources, output, options: Options, link=()) -> list[str]:
        """The command that compiles ``sources`` into the shared library ``output``; ``link``: what
        link_library() gave for the libraries it calls."""
        sources = [str(s) for s in sources]
        if self.kind == "msvc":
            return [self.compiler, *self.compile_flags(options), "/LD", *sources, f"/Fe:{output}", *link]
        return [
            self.compiler,
            *self.compile_flags(options),
            *self.library_flags(options),
            *sources,
            "-o",
            str(output),
            *self.link_flags(options, list(link)),
        ]

    def executable(self, sources, output, options: Options) -> list[str]:
        sources = [str(s) for s in sources]
        if self.kind == "msvc":
            return [self.compiler, *self.compile_flags(options), *sources, f"/Fe:{output}"]
        return [self.compiler, *self.compile_flags(options), *sources, "-o", str(output), *self.link_flags(options, [])]

    def link_library(self, library: Path) -> list[str]:
        """Flags that link the shared library ``library`` so that the output finds it when loaded."""
        library = Path(library)
        folder = library.parent
        if self.target == "linux":
            return [f"-L{folder}", f"-l:{library.name}", f"-Wl,-rpath,{folder}"]
        if self.target == "darwin":  # the dylib's install name (@rpath/...) resolves through the rpath
            return [str(library), f"-Wl,-rpath,{folder}"]
        import_library = library.with_suffix(".lib")
        if import_library.is_file():
            return [str(import_library)]
        if self.kind == "gcc":  # GNU ld links against a DLL directly
            return [str(library)]
        raise ToolchainError(f"MSVC needs the import library {import_library} to link {library.name}; it is missing")


def library_glob(stem: str, target: str | None = None) -> str:
    """The file names shared library ``stem`` ("mujoco") has on ``target``: libmujoco.so.3.2.0,
    libmujoco.3.2.0.dylib, mujoco.dll."""
    target = target or host_target()
    return {"linux": f"lib{stem}.so*", "darwin": f"lib{stem}*.dylib", "win32": f"{stem}*.dll"}[target]


def host_target() -> str:
    if sys.platform.startswith("linux"):
        return "linux"
    if sys.platform in ("darwin", "win32"):
        return sys.platform
    return "linux"  # the BSDs and others: ELF and a gcc-style cc


def default_compiler(target: str) -> str:
    """$CC, else the platform's compiler: cc on Linux, clang on macOS, on Windows MSVC's cl if it is
    on PATH (a Developer Command Prompt), else MinGW's gcc if that is, else cl (its absence is then
    named when the build runs)."""
    if os.environ.get("CC"):
        return os.environ["CC"]
    if target == "darwin":
        return "clang"
    if target == "win32":
        for candidate in ("cl", "gcc", "clang-cl"):
            if shutil.which(candidate):
                return candidate
        return "cl"
    return "cc"


def kind_from_name(compiler: str) -> str | None:
    """The flag dialect the compiler's name gives away, or None (``cc`` may be either)."""
    name = Path(compiler).name.lower().removesuffix(".exe")
    if name in ("cl", "clang-cl") or name.endswith("-clang-cl"):
        return "msvc"
    if "clang" in name:
        return "clang"
    if "gcc" in name or "g++" in name or "mingw" in name:
        return "gcc"
    return None


def kind_from_version(text: str) -> str:
    """The dialect of a compiler that printed ``text`` for --version (MSVC prints its banner instead)."""
    if "Microsoft" in text and "C/C++" in text:
        return "msvc"
    return "clang" if "clang" in text.lower() else "gcc"


@functools.lru_cache(maxsize=16)
def _probed_kind(compiler: str) -> str:
    try:
        result = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "gcc"  # unknown or absent: the build then names the compiler in its error
    return kind_from_version(result.stdout + result.stderr)


@functools.lru_cache(maxsize=16)
def _accepts_flag(compiler: str, flag: str) -> bool:
    """Whether ``compiler`` compiles an empty C file with ``flag`` (-fPIC, as a library's code)."""
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder, "probe.c")
        source.write_text("int shoal_probe;\n")
        try:
            result = subprocess.run(
                [compiler, flag, "-fPIC", "-c", str(source), "-o", str(Path(folder, "probe.o"))],
                capture_output=True,
                timeout=60,
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
    return result.returncode == 0


def toolchain_for(target: str, compiler: str | None = None) -> Toolchain:
    """The toolchain that builds for ``target`` with ``compiler`` (default: default_compiler(target))."""
    compiler = compiler or default_compiler(target)
    kind = kind_from_name(compiler) or _probed_kind(compiler)
    # -mtls-dialect=gnu2 is x86's spelling: aarch64's gcc refuses it and uses descriptors by default.
    descriptors = target == "linux" and kind != "msvc" and _accepts_flag(compiler, TLS_DESCRIPTORS_FLAG)
    return Toolchain(target, compiler, kind, descriptors)


def current() -> Toolchain:
    """This machine's toolchain ($CC honoured; read at each call, so a changed $CC counts)."""
    return toolchain_for(host_target())


_dll_directories: dict = {}


def allow_dependencies_from(folder: Path) -> None:
    """Lets a library loaded later find the DLLs in ``folder`` (Windows: no rpath; shoal's loader and
    ctypes both search os.add_dll_directory's folders). Elsewhere the rpath does it: nothing to do."""
    if sys.platform != "win32":
        return
    folder = str(Path(folder).resolve())
    if folder not in _dll_directories:
        _dll_directories[folder] = os.add_dll_directory(folder)
