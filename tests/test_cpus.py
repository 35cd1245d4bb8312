"""usable_cpus(): the affinity mask capped by the cgroup CPU quota (v2 cpu.max, v1 cfs), and every
default count that follows it."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from shoal import cpus

V2_MOUNT = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n"
V1_MOUNT = "32 31 0:29 {root} /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"


def fake_root(tmp_path: Path, memberships: str, mountinfo: str, files: dict[str, str]) -> Path:
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text(memberships)
    (tmp_path / "proc/self/mountinfo").write_text(mountinfo)
    for name, text in files.items():
        path = tmp_path / name.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


@pytest.mark.parametrize(
    ("text", "expected"),
    [("max 100000\n", None), ("150000 100000\n", 1.5), ("50000 100000", 0.5), ("400000 100000", 4.0)],
)
def test_parse_cpu_max(text, expected):
    assert cpus.parse_cpu_max(text) == expected


@pytest.mark.parametrize(("quota", "period", "expected"), [("-1", "100000", None), ("250000\n", "100000\n", 2.5)])
def test_parse_cfs(quota, period, expected):
    assert cpus.parse_cfs(quota, period) == expected


def test_v2_no_quota(tmp_path):
    root = fake_root(tmp_path, "0::/app\n", V2_MOUNT, {"/sys/fs/cgroup/app/cpu.max": "max 100000\n"})
    assert cpus.quota_cpus(root) is None
    assert cpus.usable_cpus(root) == cpus.affinity_cpus()


def test_v2_quota_rounds_down_to_at_least_one(tmp_path):
    root = fake_root(tmp_path, "0::/app\n", V2_MOUNT, {"/sys/fs/cgroup/app/cpu.max": "50000 100000\n"})
    assert cpus.quota_cpus(root) == 0.5
    assert cpus.usable_cpus(root) == 1


def test_v2_nested_parent_quota_binds(tmp_path):
    files = {
        "/sys/fs/cgroup/cpu.max": "ignored-root-has-none",  # the hierarchy's root is not read past the mount
        "/sys/fs/cgroup/kube/cpu.max": "100000 100000\n",
        "/sys/fs/cgroup/kube/pod/cpu.max": "max 100000\n",
        "/sys/fs/cgroup/kube/pod/ctr/cpu.max": "300000 100000\n",
    }
    root = fake_root(tmp_path, "0::/kube/pod/ctr\n", V2_MOUNT, files)
    assert cpus.quota_cpus(root) == 1.0
    assert cpus.usable_cpus(root) == 1


def test_v2_quota_above_cgroups_without_the_cpu_controller_binds(tmp_path):
    """cpu left out of kube's subtree_control: pod and ctr have no cpu.max, kube's quota still binds them."""
    files = {
        "/sys/fs/cgroup/cgroup.procs": "",
        "/sys/fs/cgroup/kube/cgroup.procs": "",
        "/sys/fs/cgroup/kube/cpu.max": "50000 100000\n",
        "/sys/fs/cgroup/kube/pod/cgroup.procs": "",
        "/sys/fs/cgroup/kube/pod/ctr/cgroup.procs": "",
    }
    root = fake_root(tmp_path, "0::/kube/pod/ctr\n", V2_MOUNT, files)
    assert cpus.quota_cpus(root) == 0.5
    assert cpus.usable_cpus(root) == 1


def test_v1_container_mount_root(tmp_path):
    """Docker on cgroup v1: the hierarchy is mounted at the container's own cgroup."""
    files = {
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "150000\n",
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
    }
    mounts = V1_MOUNT.format(root="/docker/abc")
    root = fake_root(tmp_path, "5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n", mounts, files)
    assert cpus.quota_cpus(root) == 1.5
    assert cpus.usable_cpus(root) == 1


def test_v1_nested_without_quota(tmp_path):
    files = {
        "/sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_quota_us": "-1\n",
        "/sys/fs/cgroup/cpu,cpuacct/a/cpu.cfs_period_us": "100000\n",
        "/sys/fs/cgroup/cpu,cpuacct/a/b/cpu.cfs_quota_us": "-1\n",
        "/sys/fs/cgroup/cpu,cpuacct/a/b/cpu.cfs_period_us": "100000\n",
    }
    root = fake_root(tmp_path, "5:cpu,cpuacct:/a/b\n", V1_MOUNT.format(root="/"), files)
    assert cpus.quota_cpus(root) is None


def test_unreadable_proc_means_no_quota(tmp_path):
    assert cpus.quota_cpus(tmp_path) is None
    assert cpus.usable_cpus(tmp_path) >= 1


def test_mountinfo_escapes(tmp_path):
    mounts = "30 23 0:26 / /sys/fs/cg\\040roup rw - cgroup2 cgroup2 rw\n"
    root = fake_root(tmp_path, "0::/x\n", mounts, {"/sys/fs/cg roup/x/cpu.max": "200000 100000"})
    assert cpus.quota_cpus(root) == 2.0


def _own_cpu_cgroup() -> tuple[Path, int] | str:
    """A writable cgroup directory of this process holding the cpu controller, or why there is none."""
    if not sys.platform.startswith("linux"):
        return "cgroups are Linux's"
    try:
        found = cpus.cgroup_dirs(Path("/proc/self/cgroup").read_text(), Path("/proc/self/mountinfo").read_text())
    except OSError as error:
        return f"cannot read /proc/self: {error}"
    for directory, version in found:
        here = Path(directory)
        if version == 2 and "cpu" not in (here / "cgroup.subtree_control").read_text(errors="replace").split():
            continue
        if os.access(here, os.W_OK):
            return here, version
    return f"no writable cgroup directory with the cpu controller among {found}"


def test_real_cgroup_quota_caps_every_default():
    """A cgroup created here with a quota of one CPU: a child moved into it counts 1 usable CPU,
    defaults to one thread and one worker, and its pool spins no thread beside the caller, where its
    affinity allows more."""
    if cpus.affinity_cpus() < 2:
        pytest.skip("needs an affinity mask of 2 CPUs or more to see a quota cap it")
    own = _own_cpu_cgroup()
    if isinstance(own, str):
        pytest.skip(own)
    parent, version = own
    group = parent / f"shoal-test-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
    except OSError as error:
        pytest.skip(f"cannot create a cgroup under {parent}: {error}")
    try:
        if version == 2:
            (group / "cpu.max").write_text("100000 100000")
        else:
            (group / "cpu.cfs_period_us").write_text("100000")
            (group / "cpu.cfs_quota_us").write_text("100000")
        procs = group / "cgroup.procs"
        code = (
            "from shoal import cpus\n"
            "from shoal.backends.multithreading import default_num_threads\n"
            "from shoal.backends.caller_side.env_split import worker_layout\n"
            "from shoal.envs import CartPole\n"
            "from shoal.vector import make\n"
            "with make(CartPole, backend='Multithreading', num_envs=8, max_num_threads=2) as v:\n"
            "    spinning = v.env.pool_stats()['active_limit']\n"
            "print(cpus.usable_cpus(), default_num_threads(64), worker_layout(64).num_workers, spinning)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code],
            preexec_fn=lambda: procs.write_text(str(os.getpid())),
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        # usable CPUs, default threads, default workers, pool threads that may spin at once (a pool of
        # 2 asked for explicitly: the quota's one CPU is the caller's, so none spins)
        assert out.split() == ["1", "1", "1", "0"]
    finally:
        group.rmdir()
