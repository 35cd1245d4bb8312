"""Env families as a table (shoal.families): a third-party package's family, found through its entry
point in the group ``shoal.env_families``, runs under ``shoal run`` like a built-in one. The example
package (examples/env_family) is installed without pip: its module and a dist-info folder naming the
entry point on PYTHONPATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shoal import families

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    shutil.copytree(ROOT / "examples/env_family/shoal_family_example", site / "shoal_family_example")
    info = site / "shoal_family_example-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shoal-family-example\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{families.GROUP}]\ncorridor = shoal_family_example\n")
    return site


def _shoal(site: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "shoal", *args], env=env, capture_output=True, text=True, timeout=120, cwd=site
    )


def test_an_installed_family_runs_under_shoal_run(site, tmp_path):
    config = tmp_path / "corridor.ini"
    config.write_text("[env]\nname = corridor:short\n[vec]\nbackend = Serial\nnum_envs = 2\n[run]\nsteps = 200\n")
    result = _shoal(site, "run", "--config", str(config))
    assert result.returncode == 0, result.stderr
    assert "SPS" in result.stdout or "steps/s" in result.stdout, result.stdout


def test_shoal_envs_lists_an_installed_family(site):
    result = _shoal(site, "envs")
    assert result.returncode == 0, result.stderr
    assert "corridor:<name>" in result.stdout


def test_a_wrong_name_in_an_installed_family_is_a_config_error(site, tmp_path):
    config = tmp_path / "corridor.ini"
    config.write_text("[env]\nname = corridor:wide\n[vec]\nbackend = Serial\nnum_envs = 2\n[run]\nsteps = 10\n")
    result = _shoal(site, "run", "--config", str(config))
    assert result.returncode != 0
    assert "corridor:wide" in result.stderr and "one of ['short', 'long']" in result.stderr


def test_built_in_families_are_found_without_importing_them():
    code = (
        "import sys; from shoal import config, families; "
        "assert families.prefixes()[:3] == ['mujoco', 'atari', 'ocean'], families.prefixes(); "
        "assert not {'shoal.mujoco', 'shoal.atari', 'shoal.ocean'} & set(sys.modules), sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
