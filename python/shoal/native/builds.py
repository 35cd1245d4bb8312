"""Native env libraries compiled at first use and kept in a cache folder (Ocean envs, MuJoCo tasks).

A build is keyed by the hash of every input (flags, compiler, sources, shoal's headers and version), so
a changed input rebuilds. It happens in a temporary folder of the cache that is renamed into place only
after the compiler succeeded and the library's manifest (size, SHA-256) was written, so a failure
leaves nothing behind, an entry that no longer matches its manifest is rebuilt, and concurrent builds of one key never
see half a library. Each use marks a build as used; a new build of a name removes that name's builds
beyond the KEEP_BUILDS_PER_NAME most recently used (never one used within IN_USE_SECONDS, which another
process may be loading), and clean_builds() removes them all.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from . import manifest, toolchain

KEEP_BUILDS_PER_NAME = 8
IN_USE_SECONDS = 24 * 3600
STAGE_PREFIX = ".build-"
STALE_STAGE_SECONDS = 3600  # a staging folder this old belongs to a build that died
KEY_CHARS = 24


def cache_dir() -> Path:
    """shoal's cache: $SHOAL_CACHE_DIR, else the OS's user cache folder: Windows
    %LOCALAPPDATA%\\shoal\\Cache; elsewhere $XDG_CACHE_HOME/shoal if set, else macOS
    ~/Library/Caches/shoal and other systems ~/.cache/shoal (platformdirs' folders, without the dependency)."""
    if os.environ.get("SHOAL_CACHE_DIR"):
        return Path(os.environ["SHOAL_CACHE_DIR"])
    if sys.platform == "win32":
        local = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(local) / "shoal" / "Cache"
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]) / "shoal"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / "shoal"
    return Path.home() / ".cache" / "shoal"


def compiler() -> str:
    """The C compiler this machine's builds run ($CC, else the platform's: see toolchain.py)."""
    return toolchain.current().compiler


def digest(parts) -> str:
    """sha256 over ``parts`` (bytes, or anything str() turns into the text of an input)."""
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part if isinstance(part, bytes) else str(part).encode())
        hasher.update(b"\0")
    return hasher.hexdigest()


def run_compiler(command: list[str], cwd: Path, what: str, error: type[Exception]) -> None:
    """Runs ``command``; raises ``error`` with the compiler's output if it fails."""
    try:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    except FileNotFoundError:
        raise error(f"cannot compile {what}: C compiler {command[0]!r} not found (set CC)") from None
    if result.returncode != 0:
        output = (result.stdout + result.stderr).strip()
        raise error(f"compiling {what} failed ({command[0]} exit {result.returncode}):\n{output}")


def entry(root: Path, name: str, key: str) -> Path:
    """The cache folder of build ``key`` of ``name``."""
    return root / f"{name}-{key[:KEY_CHARS]}"


def cached_build(
    root: Path, name: str, key: str, product: str, build: Callable[[Path], None], error: type[Exception]
) -> Path:
    """The folder holding ``product`` built for ``key``: the cached one (marked used) if its library
    matches its manifest, else ``build(stage)`` writes it into a fresh staging folder that becomes the
    entry once its manifest is written. A damaged entry is discarded and rebuilt, never returned: loading
    a truncated library is a SIGBUS, not an error (see manifest.py)."""
    final = entry(root, name, key)
    damaged = None
    if final.exists():
        damaged = manifest.damage(final / product)
        if damaged is None:
            mark_used(final)
            return final
        manifest.discard(final)
    root.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(dir=root, prefix=f"{STAGE_PREFIX}{name}-"))
    try:
        try:
            build(stage)
        except error as failure:
            if damaged is None:
                raise
            raise error(
                f"the cached build {final} was damaged ({damaged}) and rebuilding it failed: {failure}"
            ) from None
        manifest.write(stage / product)  # last: an entry without it was never finished
        try:
            os.replace(stage, final)
        except OSError:
            if not (final / product).is_file():  # not a concurrent build that finished first
                raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    problem = manifest.damage(final / product)
    if problem is not None:
        raise error(f"the build {final} of {name!r} cannot be trusted: {problem}")
    prune_builds(root, name)
    return final


def mark_used(folder: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(folder)


def builds(root: Path, name: str | None = None) -> list[Path]:
    """The finished builds in ``root`` (of ``name``, or every one), most recently used first."""
    pattern = re.compile(rf"^{re.escape(name) if name else '.+'}-[0-9a-f]{{{KEY_CHARS}}}$")
    try:
        entries = [p for p in root.iterdir() if pattern.match(p.name) and p.is_dir()]
    except OSError:
        return []
    return sorted(entries, key=last_used, reverse=True)


def last_used(folder: Path) -> float:
    try:
        return folder.stat().st_mtime
    except OSError:
        return 0.0


def prune_builds(root: Path, name: str) -> None:
    """Removes the builds of ``name`` beyond the KEEP_BUILDS_PER_NAME most recently used, except those
    used in the last IN_USE_SECONDS."""
    now = time.time()
    for folder in builds(root, name)[KEEP_BUILDS_PER_NAME:]:
        if now - last_used(folder) >= IN_USE_SECONDS:
            shutil.rmtree(folder, ignore_errors=True)


def clean_builds(root: Path) -> tuple[int, int]:
    """Removes every finished build in ``root``, and staging folders left by builds that died; returns
    (folders removed, bytes freed). A process that has a build loaded keeps it."""
    now = time.time()
    try:
        stale = [
            p for p in root.iterdir() if p.name.startswith(STAGE_PREFIX) and now - last_used(p) > STALE_STAGE_SECONDS
        ]
    except OSError:
        return 0, 0
    removed = freed = 0
    for folder in builds(root) + stale:
        freed += sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        shutil.rmtree(folder, ignore_errors=True)
        removed += 1
    return removed, freed
