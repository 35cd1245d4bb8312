"""Compiles an Ocean env's C sources, unmodified, into a shoal native env library.

A build stages the env's folder byte for byte beside shoal's ``env_binding.h`` (so the binding's
``#include "../env_binding.h"`` resolves to shoal's contract, not PufferLib's), writes the
generated config header (spaces, agents, keyword parameters, stats) and compiles
``csrc/shoal_ocean_adapter.c``, which includes the binding. Everything happens in a temporary
folder of the cache that is renamed into place only after the compiler succeeded and the build's
manifest (the library's size and SHA-256) was written, so a failure leaves nothing behind; an
entry whose library does not match its manifest is rebuilt, never loaded. Builds are keyed by the
hash of every input, so a changed tree rebuilds. The cache itself (keys, atomic builds, manifests,
pruning, ``shoal ocean clean``) is shoal.native.builds'.
"""

from __future__ import annotations

import math
import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from gymnasium import spaces

import shoal

from ..native import builds, toolchain
from ..native.builds import IN_USE_SECONDS, clean_builds, prune_builds
from ..native.builds import KEEP_BUILDS_PER_NAME as KEEP_BUILDS_PER_ENV
from . import resources
from .errors import OceanError
from .pyclass import SHARED_PREFIX, ClassModel
from .source import build_cache_dir

CSRC = Path(__file__).resolve().parent / "csrc"
# PufferLib 3.0's own release flags for Ocean bindings (setup.py), in no compiler's spelling
# (shoal.native.toolchain spells them for gcc, clang or MSVC). A call of an undeclared function (a
# raylib call shoal has no stand-in for) is a compile error here, never an unresolved symbol at
# load time. Reading a variable before it is set is undefined behaviour that crashes some envs
# (freeway's randomize_enemy_speed, in its own C loop too): refused at build time, never loaded.
OPTIONS = toolchain.Options(
    optimize=2,
    std="gnu11",
    defines=("NDEBUG", "PLATFORM_DESKTOP"),
    wrapv=True,
    errors=("implicit-function-declaration", "uninitialized", "maybe-uninitialized"),
    silenced=("alloc-size-larger-than",),
    libraries=("m",),
)
UNINITIALIZED = re.compile(r"(?m)^(\S+:\d+:\d+): error: (.*uninitialized.*)$")
STAGED_SUFFIXES = (".c", ".h")
_DTYPES = {
    np.dtype(np.float32): "SHOAL_FLOAT32",
    np.dtype(np.uint8): "SHOAL_UINT8",
    np.dtype(np.int8): "SHOAL_INT8",
    np.dtype(np.int32): "SHOAL_INT32",
}
# The SDK's limit for an env that keeps its own log (SHOAL_MAX_LOG_STATS): n and my_log's keys.
MAX_STATS = 64


@dataclass(frozen=True)
class Library:
    """A built Ocean env: the shared library and what was compiled into it."""

    name: str
    path: Path
    folder: Path  # the cache entry (staged sources, config.h, the library)
    params: tuple  # (name, "int" | "double" | "bool") of my_init's keyword arguments (seed aside)
    stats: tuple  # stat names: "n", then every key my_log writes


def log_keys(binding: Path) -> list[str]:
    """The keys my_log writes with assign_to_dict, in order."""
    text = binding.read_text(errors="replace")
    match = re.search(r"\bmy_log\s*\([^)]*\)\s*\{(.*?)\n\}", text, re.S)
    body = match.group(1) if match else ""
    keys = []
    for key in re.findall(r'assign_to_dict\s*\(\s*\w+\s*,\s*"([^"]+)"', body):
        if key not in keys:
            keys.append(key)
    return keys


def _c_number(value: float) -> str:
    if math.isinf(value):
        return "HUGE_VAL" if value > 0 else "(-HUGE_VAL)"
    return repr(float(value))


def _c_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _bound(values) -> float:
    values = np.asarray(values, dtype=np.float64).ravel()
    if values.size and not np.all(values == values[0]):
        raise OceanError("observation bounds must be the same for every element")
    return float(values[0]) if values.size else 0.0


def config_header(name: str, model: ClassModel, params: tuple, stats: tuple) -> str:
    obs = model.observation_space
    if obs.dtype not in _DTYPES:
        raise OceanError(
            f"{model.class_name} ({model.path}): observation dtype {obs.dtype} is not one shoal "
            f"buffers hold ({', '.join(str(d) for d in _DTYPES)})"
        )
    if not 1 <= len(obs.shape) <= 3:
        raise OceanError(
            f"{model.class_name} ({model.path}): observations of {len(obs.shape)} dimensions (shoal holds 1 to 3)"
        )
    action = model.action_space
    low = high = 0.0
    if isinstance(action, spaces.Discrete):
        kind, nvec = "SHOAL_ACTION_DISCRETE", [int(action.n)]
        if int(action.start) != 0:
            raise OceanError(f"{model.class_name} ({model.path}): Discrete actions must start at 0")
    elif isinstance(action, spaces.MultiDiscrete):
        kind, nvec = "SHOAL_ACTION_MULTIDISCRETE", [int(n) for n in np.asarray(action.nvec).ravel()]
    else:
        kind, nvec = "SHOAL_ACTION_BOX", [0] * int(np.prod(action.shape))
        low, high = _bound(action.low), _bound(action.high)
    if not 1 <= len(nvec) <= 16:
        raise OceanError(f"{model.class_name} ({model.path}): {len(nvec)} action dimensions (shoal holds 1 to 16)")
    lines = [
        f"/* Generated by shoal.ocean from {model.path.name} ({model.class_name}). */",
        f"#define SHOAL_OCEAN_NAME {name}",
        f"#define SHOAL_OCEAN_DOC {_c_string(f'PufferLib Ocean env {name} ({model.class_name})')}",
        f"#define SHOAL_OCEAN_NUM_AGENTS {model.agents_per_env}",
        f"#define SHOAL_OCEAN_OBS_DTYPE {_DTYPES[obs.dtype]}",
        f"#define SHOAL_OCEAN_OBS_ITEM_SIZE {obs.dtype.itemsize}",
        f"#define SHOAL_OCEAN_OBS_NDIM {len(obs.shape)}",
        f"#define SHOAL_OCEAN_OBS_SHAPE {{{', '.join(str(int(d)) for d in obs.shape)}}}",
        f"#define SHOAL_OCEAN_OBS_BYTES {int(np.prod(obs.shape, dtype=np.int64)) * obs.dtype.itemsize}",
        f"#define SHOAL_OCEAN_OBS_LOW {_c_number(_bound(obs.low))}",
        f"#define SHOAL_OCEAN_OBS_HIGH {_c_number(_bound(obs.high))}",
        f"#define SHOAL_OCEAN_ACTION_KIND {kind}",
        f"#define SHOAL_OCEAN_ACTION_DIMS {len(nvec)}",
        f"#define SHOAL_OCEAN_ACTION_NVEC {{{', '.join(str(n) for n in nvec)}}}",
        f"#define SHOAL_OCEAN_ACTION_LOW {_c_number(low)}f"
        if math.isfinite(low)
        else f"#define SHOAL_OCEAN_ACTION_LOW {_c_number(low)}",
        f"#define SHOAL_OCEAN_ACTION_HIGH {_c_number(high)}f"
        if math.isfinite(high)
        else f"#define SHOAL_OCEAN_ACTION_HIGH {_c_number(high)}",
        "#define SHOAL_OCEAN_PARAMS(X) \\",
    ]
    for index, (key, kind_) in enumerate(params):
        default = model.param_value(key)
        c_type = _PARAM_TYPES[kind_]
        default = int(default) if kind_ == "bool" else default
        lines.append(f"    X({_c_string(key)}, {c_type}, {_c_number(default)}, {index}) \\")
    lines.append("")
    first_shared = sum(1 for key, _ in params if not key.startswith(SHARED_PREFIX))
    lines.append(f"#define SHOAL_OCEAN_FIRST_SHARED_PARAM {first_shared}")
    if model.shared_key is not None:
        lines.append(f"#define SHOAL_OCEAN_SHARED_KEY {_c_string(model.shared_key)}")
    lines.append("#define SHOAL_OCEAN_STATS(X) " + " ".join(f"X({_c_string(s)})" for s in stats))
    return "\n".join(lines) + "\n"


# What PufferLib's unpack() reads from each Python type: an int as a C long within int32's range, a
# float as a double, a bool as the int it is (0 or 1).
_PARAM_TYPES = {"int": "SHOAL_PARAM_INT32", "double": "SHOAL_PARAM_FLOAT64", "bool": "SHOAL_PARAM_BOOL"}


def _param_kind(value) -> str:
    if isinstance(value, bool):
        return "bool"
    return "int" if isinstance(value, int) else "double"


def param_table(model: ClassModel) -> tuple:
    """(name, kind) of my_init's keyword arguments, by the Python type of the class's value (see
    _PARAM_TYPES). The `seed` keyword is not a parameter: the adapter draws it from the env's stream
    at its first reset. binding.shared()'s keywords follow as "shared:<keyword>" (one value per vector)."""
    own = tuple((key, _param_kind(value)) for key, value in model.init_kwargs.items() if key != "seed")
    return own + tuple((SHARED_PREFIX + key, _param_kind(value)) for key, value in model.shared_kwargs.items())


def _staged_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in STAGED_SUFFIXES)


def stage_sources(folder: Path, name: str, dest: Path) -> None:
    """Copies the env's C sources byte for byte to dest/ocean/<name>/, with shoal's contract at
    dest/ocean/env_binding.h."""
    for path in _staged_files(folder):
        target = dest / "ocean" / name / path.relative_to(folder)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    shutil.copyfile(CSRC / "env_binding.h", dest / "ocean" / "env_binding.h")


def _run_compiler(command: list[str], cwd: Path, what: str) -> None:
    try:
        builds.run_compiler(command, cwd, what, OceanError)
    except OceanError as error:
        unset = UNINITIALIZED.search(str(error))
        if unset is None:
            raise
        raise OceanError(
            f"{what} reads a variable before it is set ({Path(unset.group(1)).name}: {unset.group(2)}): "
            f"undefined behaviour that can crash the process, so shoal does not build it. {error}"
        ) from None


def _options(stage: Path, name: str, *defines: str) -> toolchain.Options:
    return replace(
        OPTIONS,
        includes=(stage, CSRC / "include", shoal.get_include()),
        defines=(
            *OPTIONS.defines,
            'SHOAL_OCEAN_CONFIG="shoal_ocean_config.h"',
            f'SHOAL_OCEAN_BINDING="ocean/{name}/binding.c"',
            *defines,
        ),
    )


def build_library(name: str, folder: Path, model: ClassModel) -> Library:
    """The cached library of env ``name`` for the layout of ``model`` (built if needed)."""
    params = param_table(model)
    keys = [k for k in log_keys(folder / "binding.c") if k != "n"]
    stats = ("n", *keys)
    if len(stats) > MAX_STATS:
        raise OceanError(
            f"Ocean env {name!r} ({folder / 'binding.c'}): my_log writes {len(keys)} keys; shoal keeps {MAX_STATS - 1}"
        )
    header = config_header(name, model, params, stats)
    data_root = resources.resource_root(name, folder.parent, folder)
    if data_root is not None:
        header += f"#define SHOAL_OCEAN_RESOURCE_ROOT {_c_string(str(data_root))}\n"
    tools = toolchain.current()
    product = f"{name}{tools.library_suffix}"
    sources = _staged_files(folder)
    key = builds.digest(
        [
            OPTIONS,
            tools.describe(),
            header,
            shoal.__version__,
            *(p.read_bytes() for p in sorted(CSRC.rglob("*")) if p.is_file()),
            *(p.read_bytes() for p in sorted(Path(shoal.get_include(), "shoal").glob("*.h"))),
            *(str(p.relative_to(folder)).encode() + p.read_bytes() for p in sources),
        ]
    )
    root = build_cache_dir()

    def build(stage: Path) -> None:
        stage_sources(folder, name, stage)
        (stage / "shoal_ocean_config.h").write_text(header)
        command = tools.shared_library([CSRC / "shoal_ocean_adapter.c"], stage / product, _options(stage, name))
        _run_compiler(command, stage, f"Ocean env {name!r} ({folder / 'binding.c'})")

    final = builds.cached_build(root, name, key, product, build, OceanError, f"compiling Ocean env {name!r}")
    return Library(name, final / product, final, params, stats)


__all__ = ["IN_USE_SECONDS", "KEEP_BUILDS_PER_ENV", "Library", "build_library", "clean_builds", "prune_builds"]


def build_harness(library: Library, out: Path, shoal_rand: bool) -> Path:
    """A plain C program stepping the env as PufferLib's vec_step does (``for i: c_step(&envs[i])``),
    from the library's staged sources, config and flags. ``shoal_rand``: rand() draws from each
    env's own stream, seeded as shoal seeds it (to compare trajectories with shoal); else it is
    libc's global rand(), as in PufferLib (for timing)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    defines = ["SHOAL_OCEAN_HARNESS_SHOAL_RAND"] if shoal_rand else []
    options = _options(library.folder, library.name, *defines)
    command = toolchain.current().executable([CSRC / "shoal_ocean_harness.c"], out, options)
    _run_compiler(command, library.folder, f"the C harness of Ocean env {library.name!r}")
    return out
