"""Native env libraries compiled at first use and kept in a cache folder (Ocean envs, MuJoCo tasks).

A build is keyed by the hash of every input (flags, compiler, sources, shoal's headers and version), so
a changed input rebuilds. It happens in a temporary folder of the cache that is renamed into place only
after the compiler succeeded and the library's manifest (size, SHA-256) was written, so a failure
leaves nothing behind, an entry that no longer matches its manifest is rebuilt, and concurrent builds of one key never
see half a library. A staging folder holds a lock while its build runs; a build that was killed leaves
its folder unlocked, and the next build in that cache removes it. The cache folder is created private
(0700) and refused when another user owns it or others may write to it: shoal compiles and loads what
it holds. Each use marks a build as used; a new build of a name removes that name's builds
beyond the KEEP_BUILDS_PER_NAME most recently used (never one used within IN_USE_SECONDS, which another
process may be loading), and clean_builds() removes them all.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from . import manifest, progress, toolchain

try:
    import fcntl
except ImportError:  # Windows: a dead build's staging folder is found by its age alone
    fcntl = None

KEEP_BUILDS_PER_NAME = 8
IN_USE_SECONDS = 24 * 3600
STAGE_PREFIX = ".build-"
STALE_STAGE_SECONDS = 3600  # a staging folder this old, holding no lock, belongs to a build that died
STAGE_LOCK = ".lock"
KEY_LOCK_PREFIX = ".lock-"  # one per entry: concurrent builds of it wait for the first
KEY_CHARS = 24


def family_cache_dir(name: str) -> Path:
    """Where env family ``name`` keeps its builds: $SHOAL_<NAME>_BUILD_CACHE, else <cache_dir()>/<name>."""
    variable = f"SHOAL_{name.upper()}_BUILD_CACHE"
    if os.environ.get(variable):
        return Path(os.environ[variable])
    return cache_dir() / name


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


class CacheError(Exception):
    """A cache folder shoal will not build in (not its user's, or writable by others)."""


def private_folder(folder: Path, error: type[Exception] = CacheError) -> Path:
    """``folder``, created 0700 (each missing level) if missing, and checked: a folder shoal compiles
    into and loads from must be the user's own and writable by nobody else, and so must shoal's cache
    folder where it lies inside it (whoever may write there may replace it)."""
    missing = []
    here = Path(folder)
    while not here.exists() and here.parent != here:
        missing.append(here)
        here = here.parent
    for level in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(level, 0o700)
    shoal_cache = cache_dir()
    checked = [shoal_cache, folder] if shoal_cache in Path(folder).parents else [folder]
    for path in checked:
        problem = untrusted(path)
        if problem is not None:
            raise error(
                f"the build cache {path} {problem}: shoal compiles and loads code from it, so it must be "
                "yours and writable only by you (chmod go-w it, or choose another folder with $SHOAL_CACHE_DIR)"
            )
    return folder


def untrusted(folder: Path) -> str | None:
    """Why ``folder`` cannot be trusted as a build cache, or None."""
    try:
        info = os.stat(folder)
    except OSError as failure:
        return f"cannot be used ({failure.strerror or failure})"
    if not stat.S_ISDIR(info.st_mode):
        return "is not a folder"
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        return f"is owned by another user (uid {info.st_uid}; you are uid {os.geteuid()})"
    if sys.platform != "win32" and info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return (
            f"is writable by {'others' if info.st_mode & stat.S_IWOTH else 'its group'} (mode {info.st_mode & 0o777:o})"
        )
    return None


def compile_jobs() -> int:
    """Compilers to run at once: the CPUs this process may use (affinity and cgroup quota)."""
    from ..cpus import usable_cpus

    return usable_cpus()


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
    root: Path,
    name: str,
    key: str,
    product: str,
    build: Callable[[Path], None],
    error: type[Exception],
    title: str | None = None,
) -> Path:
    """The folder holding ``product`` built for ``key``: the cached one (marked used) if its library
    matches its manifest, else ``build(stage)`` writes it into a fresh staging folder that becomes the
    entry once its manifest is written. A damaged entry is discarded and rebuilt, never returned: loading
    a truncated library is a SIGBUS, not an error (see manifest.py). A build prints its progress
    (``title``, the cache folder, then how far it is; see progress.py)."""
    final = entry(root, name, key)
    private_folder(root, error)
    remove_dead_stages(root)  # on a hit too: a build killed beside a finished one leaves its stage
    title = title or f"building {name}"
    with _key_lock(root, final.name, title):  # a second process waits for the first one's build
        damaged = None
        if final.exists():
            damaged = manifest.damage(final / product)
            if damaged is None:
                mark_used(final)
                return final
            manifest.discard(final)
        _build_into(final, product, build, error, title, damaged)
    problem = manifest.damage(final / product)
    if problem is not None:
        raise error(f"the build {final} of {name!r} cannot be trusted: {problem}")
    prune_builds(root, name)
    return final


def _build_into(final: Path, product: str, build, error, title: str, damaged: str | None) -> None:
    stage = Path(tempfile.mkdtemp(dir=final.parent, prefix=f"{STAGE_PREFIX}{final.name[: -KEY_CHARS - 1]}-"))
    try:
        try:
            with _stage_lock(stage), progress.Progress(title, final.parent):
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


@contextlib.contextmanager
def _key_lock(root: Path, entry_name: str, title: str):
    """One build of an entry at a time across processes; the others wait, saying so, then find it built.
    The lock file goes when its holder is done: a process that opens a new one meanwhile at worst builds
    beside another, as without the lock, and finds the entry built first."""
    if fcntl is None:
        yield
        return
    path = root / f"{KEY_LOCK_PREFIX}{entry_name}"
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            with progress.Progress(f"waiting for another process's {title}", root):
                fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
        os.close(descriptor)


@contextlib.contextmanager
def _stage_lock(stage: Path):
    """Holds a lock in ``stage`` while its build runs (the kernel drops it when the process dies); the
    lock file is gone before the stage becomes an entry."""
    if fcntl is None:
        yield
        return
    lock = stage / STAGE_LOCK
    descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(descriptor)


def remove_dead_stages(root: Path) -> int:
    """Removes the staging folders of builds that died (their lock free, or, without a lock file, older
    than STALE_STAGE_SECONDS), and the key locks they left; returns how many staging folders."""
    removed = 0
    try:
        entries = list(root.iterdir())
    except OSError:
        return 0
    for path in entries:
        if path.name.startswith(STAGE_PREFIX) and path.is_dir() and _stage_is_dead(path):
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
        elif path.name.startswith(KEY_LOCK_PREFIX) and _lock_is_free(path):
            with contextlib.suppress(OSError):
                path.unlink()
    return removed


def _stage_is_dead(stage: Path) -> bool:
    lock = stage / STAGE_LOCK
    if fcntl is None or not lock.exists():
        return time.time() - last_used(stage) > STALE_STAGE_SECONDS
    return _lock_is_free(lock)


def _lock_is_free(lock: Path) -> bool:
    """No live process holds ``lock`` (the kernel drops a dead one's)."""
    if fcntl is None:
        return False
    try:
        descriptor = os.open(lock, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # its build holds it
    finally:
        os.close(descriptor)  # drops the lock if this call took it
    return True


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
    try:
        stale = [p for p in root.iterdir() if p.name.startswith(STAGE_PREFIX) and _stage_is_dead(p)]
    except OSError:
        return 0, 0
    removed = freed = 0
    for folder in builds(root) + stale:
        freed += sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        shutil.rmtree(folder, ignore_errors=True)
        removed += 1
    return removed, freed
