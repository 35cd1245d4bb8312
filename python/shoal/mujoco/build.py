"""Compiles a task's C file at first use against the installed MuJoCo wheel, cached like Ocean builds.

The task library links the very ``libmujoco`` that the ``mujoco`` Python package loads (the wheel's, found
by rpath; on Windows through the DLL search path), so shoal steps the same physics code as Gymnasium's own
envs. The headers and the library come with the ``mujoco`` wheel (``mujoco-core`` from MuJoCo 4 on); nothing is fetched.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass, replace
from pathlib import Path

import shoal

from ..errors import APIUsageError
from ..native import builds, toolchain
from .task import Task

CSRC = Path(__file__).resolve().parent / "csrc"
INSTALL_HINT = (
    'shoal.mujoco needs MuJoCo and Gymnasium\'s MuJoCo assets: pip install "mujoco>=3.1" "gymnasium[mujoco]>=1.0" '
    '(or, in shoal\'s source folder, pip install ".[mujoco]")'
)
# fp_contract off: no fused multiply-adds, so rewards round as Gymnasium's numpy arithmetic does.
OPTIONS = toolchain.Options(
    optimize=2,
    std="gnu11",
    defines=("NDEBUG",),
    fp_contract=False,
    errors=("implicit-function-declaration",),
    libraries=("m",),
)


class MujocoMissing(APIUsageError):
    """MuJoCo (or Gymnasium's MuJoCo assets) is not installed; the message says which extra to install."""


@dataclass(frozen=True)
class Mujoco:
    """The installed MuJoCo wheel: its version, headers and shared library."""

    version: str
    include: Path
    library: Path


def installed_mujoco() -> Mujoco:
    """The MuJoCo wheel this interpreter imports, without importing it."""
    spec = importlib.util.find_spec("mujoco")
    if spec is None or not spec.submodule_search_locations:
        raise MujocoMissing(f"{INSTALL_HINT} (no mujoco package is installed)")
    folder = Path(next(iter(spec.submodule_search_locations)))
    libraries = sorted(folder.glob(toolchain.library_glob("mujoco")))
    if not (folder / "include" / "mujoco" / "mujoco.h").is_file() or not libraries:
        raise MujocoMissing(f"{INSTALL_HINT} (the mujoco package in {folder} has no headers or libmujoco)")
    version = "unknown"
    for distribution in ("mujoco-core", "mujoco"):
        try:
            version = importlib.metadata.version(distribution)
            break
        except importlib.metadata.PackageNotFoundError:
            continue
    return Mujoco(version, folder / "include", max(libraries, key=lambda p: len(p.name)))


def assets_dir() -> Path:
    """Gymnasium's MuJoCo assets (the tasks' default MJCF files)."""
    spec = importlib.util.find_spec("gymnasium")
    folder = Path(spec.origin).parent / "envs" / "mujoco" / "assets" if spec and spec.origin else None
    if folder is None or not folder.is_dir():
        raise MujocoMissing(f"{INSTALL_HINT} (gymnasium's MuJoCo assets are missing)")
    return folder


def build_cache_dir() -> Path:
    """Where compiled tasks are kept: $SHOAL_MUJOCO_BUILD_CACHE, else <shoal's cache>/mujoco."""
    return builds.family_cache_dir("mujoco")


def compile_command(source: Path, output: Path, mujoco: Mujoco, extra_includes=()) -> list[str]:
    """The compiler call that builds ``source`` (a task) into the shared library ``output``."""
    tools = toolchain.current()
    options = replace(OPTIONS, includes=(CSRC, *extra_includes, shoal.get_include(), mujoco.include))
    return tools.shared_library([source], output, options, tools.link_library(mujoco.library))


def build_task(task: Task) -> Path:
    """The cached shared library of ``task`` (compiled if needed)."""
    return build_source(CSRC / "tasks" / task.source, task.symbol)


def build_source(source: Path, name: str) -> Path:
    """The cached library of a task's C file ``source`` (a user's own, too), named ``name``."""
    mujoco = installed_mujoco()
    if not source.is_file():
        raise APIUsageError(f"MuJoCo task source {source} does not exist")
    library_stat = mujoco.library.stat()
    key = builds.digest(
        [
            OPTIONS,
            toolchain.current().describe(),
            shoal.__version__,
            mujoco.version,
            mujoco.library,
            library_stat.st_size,
            library_stat.st_mtime_ns,
            source.read_bytes(),
            *(p.read_bytes() for p in sorted(CSRC.glob("*.h"))),
            *(p.read_bytes() for p in sorted(Path(shoal.get_include(), "shoal").glob("*.h"))),
            (mujoco.include / "mujoco" / "mujoco.h").read_bytes(),
        ]
    )

    product = name + toolchain.current().library_suffix

    def build(stage: Path) -> None:
        command = compile_command(source, stage / product, mujoco, extra_includes=(source.parent,))
        builds.run_compiler(command, stage, f"MuJoCo task {name!r} ({source})", APIUsageError)

    toolchain.allow_dependencies_from(mujoco.library.parent)  # Windows: where the task finds mujoco.dll
    title = f"compiling MuJoCo task {name!r} ({source.name})"
    return builds.cached_build(build_cache_dir(), name, key, product, build, APIUsageError, title) / product
