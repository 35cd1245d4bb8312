"""Builds ALE at first use from the source distribution of the installed ale-py, and shoal's Atari env on it.

ALE (the Arcade Learning Environment) is ale-py's own C++: the installed ``ale-py`` package names the
version, that version's source distribution is downloaded from the package index and verified against
its SHA-256 (sdist.py: nothing else is downloaded, nothing installed, nothing vendored into shoal), and
its ``src/ale`` is compiled once into a static archive, cached by version, compiler, flags and the
sdist's SHA-256 like the Ocean and MuJoCo builds (so a finished build needs no sdist). The env library
(csrc/'s .cpp files) links that archive and zlib. The ROMs are the installed package's own files.
"""

from __future__ import annotations

import concurrent.futures
import importlib.metadata
import importlib.util
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import shoal

from ..errors import APIUsageError
from ..native import builds, progress, toolchain
from . import sdist

CSRC = Path(__file__).resolve().parent / "csrc"
INSTALL_HINT = (
    'shoal.atari needs ale-py (its ROMs, and its sources for the emulator): pip install "ale-py==0.12.1" '
    '(or, in shoal\'s source folder, pip install ".[atari]")'
)
# ALE's sources (src/ale of the sdist) that make the emulator; the Python bindings, ale-py's own vector
# env (OpenCV), the WebAssembly glue and SDL's display are not part of it.
LEFT_OUT = ("python", "vector", "wasm", "external")
ALE_FLAGS = ("-O3", "-std=c++17", "-fPIC", "-fvisibility=hidden", "-DNDEBUG", "-w")
# The env: C++20 for designated initializers of the spec; no fused multiply-adds (INTER_AREA's float sums).
ENV_FLAGS = ("-O3", "-std=c++20", "-fPIC", "-fvisibility=hidden", "-DNDEBUG", "-ffp-contract=off")


class AtariError(APIUsageError):
    """shoal.atari cannot run here: ale-py missing, its sources unavailable, or a build failure."""


def ale_version() -> str:
    """The installed ale-py's version (its sources are fetched for exactly this one)."""
    try:
        return importlib.metadata.version("ale-py")
    except importlib.metadata.PackageNotFoundError:
        raise AtariError(f"{INSTALL_HINT} (ale-py is not installed)") from None


def roms_dir() -> Path:
    """ale-py's ROM folder (one <game>.bin per game), found without importing ale_py."""
    spec = importlib.util.find_spec("ale_py")
    if spec is None or not spec.submodule_search_locations:
        raise AtariError(f"{INSTALL_HINT} (ale-py is not installed)")
    folder = Path(next(iter(spec.submodule_search_locations))) / "roms"
    if not folder.is_dir() or not any(folder.glob("*.bin")):
        raise AtariError(f"{INSTALL_HINT} (the ale-py package in {folder.parent} has no ROMs)")
    return folder


def cache_root() -> Path:
    """Where ALE's sources and builds are kept: $SHOAL_ATARI_BUILD_CACHE, else <shoal's cache>/atari."""
    return builds.family_cache_dir("atari")


def sdist_folder() -> Path:
    """The cache's folder of verified sdists (private, as the cache is)."""
    root = builds.private_folder(cache_root(), AtariError)
    return builds.private_folder(root / "sdist", AtariError)


def cxx_compiler() -> str:
    """The C++ compiler: $CXX, else c++ (ALE is C++)."""
    return os.environ.get("CXX") or "c++"


def sdist_sha256(version: str) -> str:
    """The SHA-256 ale-py ``version``'s sdist must have (pinned or recorded; else the index's)."""
    try:
        known = sdist.known_sha256(version, sdist_folder())
    except ValueError as error:
        raise AtariError(str(error)) from None
    if known is not None:
        return known
    try:
        return sdist.published(version)[1]
    except (OSError, LookupError, ValueError) as failure:
        raise AtariError(
            f"shoal.atari cannot verify ale-py {version}'s source distribution: its sha256 is not pinned in "
            f"shoal, none was recorded, and {sdist.index_url()} did not give it ({failure}). Set "
            f"${sdist.HASH_ENV} to the sha256 of {sdist.filename(version)}"
        ) from None


def source_distribution(version: str, sha256: str) -> Path:
    """ale-py's sdist for ``version``, verified against ``sha256``: the cached one, else downloaded."""
    folder = sdist_folder()
    return sdist.verified(version, folder, sha256, AtariError) or sdist.fetch(version, folder, sha256, AtariError)


def _version_header(version: str) -> str:
    major, minor, patch = (version.split(".") + ["0", "0"])[:3]
    return (
        "#ifndef __VERSION_HPP__\n#define __VERSION_HPP__\n"
        f'#define ALE_VERSION "{version}"\n#define ALE_VERSION_MAJOR "{major}"\n'
        f'#define ALE_VERSION_MINOR "{minor}"\n#define ALE_VERSION_PATCH "{patch}"\n'
        '#define ALE_VERSION_GIT_SHA "sdist"\n#define STELLA_VERSION "2.4.2"\n#endif\n'
    )


def _extract_ale(archive: Path, into: Path) -> Path:
    """src/ale of the sdist, under into/src/ale; returns into/src (the include root: "ale/...")."""
    try:
        return _extract_members(archive, into)
    except (tarfile.TarError, EOFError, OSError) as failure:
        raise AtariError(f"cannot read ALE's sources from {archive}: {failure}") from None


def _extract_members(archive: Path, into: Path) -> Path:
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if "/src/ale/" in m.name and (m.isfile() or m.isdir())]
        if not members:
            raise AtariError(f"{archive} holds no src/ale (not ale-py's source distribution?)")
        prefix = members[0].name.split("/src/ale/")[0] + "/"
        for member in members:
            member.name = member.name[len(prefix) :]
        tar.extractall(into, members=members, filter="data")
    return into / "src"


def _compile_all(commands: list[list[str]], cwd: Path, what: str) -> None:
    """Runs the compile commands, as many at once as this process may use CPUs; the first failure is an
    AtariError with its output."""

    def run(command):
        return command, subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)

    report = progress.current()
    report.phase(f"compiling {what}", total=len(commands))
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=builds.compile_jobs())
    try:
        for done in concurrent.futures.as_completed([pool.submit(run, c) for c in commands]):
            command, result = done.result()
            report.advance()
            if result.returncode != 0:
                output = (result.stdout + result.stderr).strip()[-3000:]
                if "zlib.h" in output:
                    output += (
                        "\nALE needs zlib's headers: apt install zlib1g-dev (Debian, Ubuntu), dnf install zlib-devel"
                    )
                raise AtariError(
                    f"compiling {what} failed ({' '.join(command[:3])} ... exit {result.returncode}):\n{output}"
                )
    except FileNotFoundError:
        raise AtariError(
            f"compiling {what} needs a C++17 compiler: {commands[0][0]!r} was not found (install g++ or clang++, "
            "or set CXX)"
        ) from None
    finally:  # a failure or Ctrl-C starts no further compiler; those running finish
        pool.shutdown(wait=True, cancel_futures=True)


def ale_archive() -> Path:
    """The static archive of ALE for the installed ale-py (built once per version, compiler and flags)."""
    version = ale_version()
    compiler = cxx_compiler()
    sha256 = sdist_sha256(version)
    key = builds.digest([version, compiler, ALE_FLAGS, sha256])
    product = "libale.a"

    def build(stage: Path) -> None:
        archive = source_distribution(version, sha256)
        include = _extract_ale(archive, stage)
        (include / "ale" / "version.hpp").write_text(_version_header(version))
        sources = [
            path
            for path in sorted((include / "ale").rglob("*"))
            if path.suffix in (".cpp", ".cxx") and path.relative_to(include / "ale").parts[0] not in LEFT_OUT
        ]
        objects = stage / "objects"
        objects.mkdir()
        commands = [
            [
                compiler,
                *ALE_FLAGS,
                f"-I{include}",
                f"-I{include / 'ale'}",
                "-c",
                str(src),
                "-o",
                str(objects / f"{i}.o"),
            ]
            for i, src in enumerate(sources)
        ]
        _compile_all(commands, stage, f"ALE {version} (from {archive.name})")
        result = subprocess.run(
            ["ar", "rcs", str(stage / product), *map(str, sorted(objects.glob("*.o")))], capture_output=True, text=True
        )
        if result.returncode != 0:
            raise AtariError(f"archiving ALE failed: {result.stderr.strip()}")
        shutil.rmtree(objects)
        shutil.move(str(include), str(stage / "include"))
        (stage / "sdist.sha256").write_text(f"{sha256}  {archive.name}\n")

    title = f"building ALE {version} from ale-py's sdist for shoal.atari"
    folder = builds.cached_build(cache_root(), f"ale-{version}", key, product, build, AtariError, title)
    return folder / product


def env_sources() -> list[Path]:
    """The env library's C++ files: every .cpp of csrc/ (shoal_atari.cpp the env, area_resize.cpp the
    INTER_AREA resize); csrc/'s headers are included from them."""
    return sorted(CSRC.glob("*.cpp"))


def csrc_key() -> list[bytes]:
    """Every file of csrc/, name and content, and shoal's SDK headers: a build keyed by them is built again
    when any of them changes (a file added to csrc/ included)."""
    return [
        *(p.name.encode() + p.read_bytes() for p in sorted(CSRC.iterdir()) if p.is_file()),
        *(p.read_bytes() for p in sorted(Path(shoal.get_include(), "shoal").glob("*.h"))),
    ]


def env_compile_command(sources: list[Path], output: Path, archive: Path) -> list[str]:
    """The command that compiles ``sources`` into the shared library ``output``, linked against ALE's
    ``archive`` (ale_archive()) and zlib, with csrc/ on the include path (bench/native/atari_limit.cpp
    includes the env's source)."""
    include = archive.parent / "include"
    command = [cxx_compiler(), *ENV_FLAGS, "-shared", f"-I{shoal.get_include()}", f"-I{include}"]
    command += [f"-I{include / 'ale'}", f"-I{CSRC}", *map(str, sources), "-o", str(output)]
    return command + [str(archive), "-lz", "-lpthread"]


def env_library() -> Path:
    """shoal's Atari env library, linked against ALE's archive (cached)."""
    archive = ale_archive()
    product = f"shoal_atari{toolchain.current().library_suffix}"
    key = builds.digest([cxx_compiler(), ENV_FLAGS, shoal.__version__, archive.parent.name, *csrc_key()])

    def build(stage: Path) -> None:
        _compile_all([env_compile_command(env_sources(), stage / product, archive)], stage, "shoal's Atari env")

    title = "compiling shoal's Atari env"
    folder = builds.cached_build(cache_root(), "shoal_atari", key, product, build, AtariError, title)
    return folder / product
