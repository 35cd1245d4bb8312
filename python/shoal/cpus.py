"""The CPUs this process may use: its affinity mask, capped by its cgroup's CPU quota.

A container limited with Docker's ``--cpus`` or a Kubernetes CPU limit sees every CPU in its
affinity mask but may only use ``quota / period`` of them; threads or workers beyond that take
turns being throttled. Every default count of threads, workers and compile jobs follows
:func:`usable_cpus` (cores: :func:`physical_cores`).

The quota is read where Linux puts it: cgroup v2's ``cpu.max`` ("max 100000" or "150000 100000"),
cgroup v1's ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us`` (-1 = none), for the process's own cgroup
(``/proc/self/cgroup``) and each of its ancestors up to the hierarchy's mount (a parent's quota
binds its children), found through ``/proc/self/mountinfo``. Elsewhere there is no quota.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import psutil

__all__ = ["physical_cores", "quota_cpus", "usable_cpus"]


def usable_cpus(root: str | os.PathLike = "/") -> int:
    """CPUs in the affinity mask, capped by the cgroup quota, rounded down; at least 1."""
    cpus = affinity_cpus()
    quota = quota_cpus(root)
    if quota is not None:
        cpus = min(cpus, math.floor(quota))
    return max(1, cpus)


def physical_cores() -> int:
    """Physical cores among the allowed CPUs (shoal's native count), capped by :func:`usable_cpus`."""
    from . import _native

    return max(1, min(_native.physical_cores(), usable_cpus()))


def affinity_cpus() -> int:
    """Logical CPUs in this process's affinity mask (every CPU where the OS keeps no mask: macOS)."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13+
        return os.process_cpu_count() or 1
    try:
        return len(psutil.Process().cpu_affinity())
    except (AttributeError, psutil.Error):
        return os.cpu_count() or 1


def quota_cpus(root: str | os.PathLike = "/") -> float | None:
    """CPUs the cgroup quota allows (fractional), the tightest of the process's cgroup and its
    ancestors, or None where no quota applies. ``root`` prefixes every path read (tests)."""
    root = Path(root)
    try:
        memberships = (root / "proc/self/cgroup").read_text()
        mounts = (root / "proc/self/mountinfo").read_text()
    except OSError:
        return None
    limits = [
        limit
        for directory, version in cgroup_dirs(memberships, mounts)
        for limit in _limits_up(root, directory, version)
    ]
    return min(limits) if limits else None


def parse_cpu_max(text: str) -> float | None:
    """cgroup v2 ``cpu.max``: "max 100000" (no quota) or "quota period" -> CPUs."""
    fields = text.split()
    if not fields or fields[0] == "max":
        return None
    period = int(fields[1]) if len(fields) > 1 else 100_000
    return _ratio(int(fields[0]), period)


def parse_cfs(quota_text: str, period_text: str) -> float | None:
    """cgroup v1 ``cpu.cfs_quota_us`` (-1 = no quota) and ``cpu.cfs_period_us`` -> CPUs."""
    return _ratio(int(quota_text.strip()), int(period_text.strip()))


def _ratio(quota: int, period: int) -> float | None:
    return quota / period if quota > 0 and period > 0 else None


def cgroup_dirs(memberships: str, mountinfo: str) -> list[tuple[str, int]]:
    """(directory of the process's cgroup as mounted, cgroup version) for the v2 hierarchy and the
    v1 hierarchy holding the ``cpu`` controller, where they are mounted."""
    paths = {}  # version (or v1's "cpu") -> path inside the hierarchy
    for line in memberships.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            paths[2] = path
        elif "cpu" in controllers.split(","):
            paths[1] = path
    found = []
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        after = line.split(" - ", 1)[1].split()
        fstype, options = after[0], (after[2] if len(after) > 2 else "")
        if fstype == "cgroup2":
            version = 2
        elif fstype == "cgroup" and "cpu" in options.split(","):
            version = 1
        else:
            continue
        if version not in paths:
            continue
        mount_root, mount_point = _unescape(fields[3]), _unescape(fields[4])
        path = paths.pop(version)
        relative = os.path.relpath(path, mount_root) if path.startswith(mount_root) else path.lstrip("/")
        found.append((os.path.normpath(os.path.join(mount_point, relative)), version))
    return found


def _limits_up(root: Path, directory: str, version: int):
    """Each quota from ``directory`` up to its mount point (a path above it has no cgroup files)."""
    here = Path(str(root) + directory) if directory.startswith("/") else root / directory
    while True:
        limit = _limit_at(here, version)
        if limit is not None:
            yield limit
        parent = here.parent
        if parent == here or not _is_cgroup_dir(parent, version):
            return
        here = parent


def _is_cgroup_dir(path: Path, version: int) -> bool:
    """A folder of the hierarchy: every cgroup has cgroup.procs, also one without the cpu controller (v2
    writes no cpu.max below a cgroup whose subtree_control leaves cpu out; the quota above still binds)."""
    return any((path / name).exists() for name in ("cpu.max" if version == 2 else "cpu.cfs_quota_us", "cgroup.procs"))


def _limit_at(path: Path, version: int) -> float | None:
    try:
        if version == 2:
            return parse_cpu_max((path / "cpu.max").read_text())
        return parse_cfs((path / "cpu.cfs_quota_us").read_text(), (path / "cpu.cfs_period_us").read_text())
    except (OSError, ValueError, IndexError):
        return None


def _unescape(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field
