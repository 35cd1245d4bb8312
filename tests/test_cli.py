"""The `shoal` command, driven as a subprocess the way users run it."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def shoal(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "shoal", *map(str, args)], capture_output=True, text=True, timeout=timeout
    )


def sps_of(output: str) -> float:
    match = re.search(r"^SPS: ([\d,]+)$", output, re.MULTILINE)
    assert match, output
    return float(match.group(1).replace(",", ""))


def test_run_default_config_reports_sps():
    result = shoal("run")
    assert result.returncode == 0, result.stderr
    assert sps_of(result.stdout) > 0
    assert "backend: Multithreading" in result.stdout
    assert re.search(r"episodes: [1-9][\d,]*", result.stdout)
    for field in ("cpu:", "python:", "shoal:", "max_num_threads:"):
        assert field in result.stdout


def test_overrides_reach_the_vector():
    result = shoal("run", "--steps", 100000, "--seconds", 0, "--vec.max_num_threads", 1, "--vec.num_envs=512")
    assert result.returncode == 0, result.stderr
    assert "max_num_threads: 1" in result.stdout and "num_envs: 512" in result.stdout


def write(tmp_path, text):
    path = tmp_path / "config.ini"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, named",
    [
        ("[env]\nname = cartpole\n[vec]\nbackend = Serial\nnum_envz = 4\n", "num_envz"),
        ("[env]\nname = cartpole\n[vec]\nbackend = Serial\nnum_envs = four\n", "num_envs"),
        ("[env]\nname = cartpole\n[vec]\nbackend = Multithreading\nmax_num_threads = -1\n", "max_num_threads"),
        ("[env]\nname = cartpole\n[vec]\nbackend = Threads\n", "backend"),
        ("[env]\nname = nosuchenv\n", "name"),
        ("[env]\nname = nosuchmodule:make\n", "name"),
        ("[vec]\nbackend = Serial\n", "name"),
        ("[env]\nname = cartpole\n[vec]\nbackend = Multiprocessing\nnum_envs = 6\nnum_workers = 4\n", "num_workers"),
        (
            "[env]\nname = cartpole\n[vec]\nbackend = Multiprocessing\nnum_envs = 8\nnum_workers = 2\nbatch_size = 6\n",
            "batch_size",
        ),
        ("[env]\nname = cartpole\n[vec]\nzero_copy = maybe\n", "zero_copy"),
        ("[env]\nname = deep\nwork = -5\n[vec]\nbackend = Serial\n", "work"),
        ("[env]\nname = cartpole\n[extra]\nx = 1\n", "extra"),
    ],
)
def test_bad_configs_fail_naming_the_key(tmp_path, text, named):
    path = write(tmp_path, text)
    result = shoal("run", "--config", path, "--steps", 1000)
    assert result.returncode != 0
    assert named in result.stderr and str(path) in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_missing_config_file(tmp_path):
    result = shoal("run", "--config", tmp_path / "absent.ini")
    assert result.returncode != 0 and "does not exist" in result.stderr


def test_bad_override_is_named():
    result = shoal("run", "--vec.max_num_threads", "lots")
    assert result.returncode != 0 and "max_num_threads" in result.stderr


def test_gymnasium_env_under_multiprocessing(tmp_path):
    path = write(
        tmp_path,
        "[env]\nname = gymnasium:CartPole-v1\n[vec]\nbackend = Multiprocessing\n"
        "num_envs = 8\nnum_workers = 2\noverwork = true\n[run]\nsteps = 20000\nseconds = 0\n",
    )
    result = shoal("run", "--config", path)
    assert result.returncode == 0, result.stderr
    assert sps_of(result.stdout) > 0 and "backend: Multiprocessing" in result.stdout


def test_autotune_write_produces_a_config_run_accepts(tmp_path):
    original = (ROOT / "config.ini").read_text().replace("num_envs = 4096", "num_envs = 256")
    path = write(tmp_path, original)
    result = shoal("autotune", "--config", path, "--budget", 6, "--write")
    assert result.returncode == 0, result.stderr
    assert "recommended [vec]" in result.stdout
    written = path.read_text()
    assert "; shoal's embedded default configuration" in written  # comments kept
    assert "[run]" in written
    result = shoal("run", "--config", path, "--steps", 50000, "--seconds", 0)
    assert result.returncode == 0, result.stderr
    assert sps_of(result.stdout) > 0


def test_bench_writes_table_and_plot(tmp_path):
    path = write(tmp_path, "[env]\nname = cartpole\n[vec]\nbackend = Multithreading\nnum_envs = 256\n")
    result = shoal("bench", "--config", path, "--repeats", 2, "--seconds", 0.1, "--out", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    table = (tmp_path / "out" / "bench.md").read_text()
    assert "Multithreading n=256 T=0" in table and "Serial n=256" in table
    assert re.search(r"\| Multithreading n=256 T=1 \| [\d,]+ \|", table)
    png = (tmp_path / "out" / "bench.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 2000


def test_envs_lists_bundled_envs():
    result = shoal("envs")
    assert result.returncode == 0
    for name in ("cartpole", "squared", "grid", "deep"):
        assert name in result.stdout
    assert "param work (int, default 20000" in result.stdout


def _one_line_error(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_a_callable_that_cannot_take_the_env_parameters_is_named(tmp_path):
    path = write(tmp_path, "[env]\nname = os:system\n[vec]\nbackend = Serial\nnum_envs = 2\n")
    line = _one_line_error(shoal("run", "--config", path, "--steps", 10))
    assert line.startswith(f"shoal: error: {path}: [env] name = 'os:system': ")
    assert "cannot be called with the [env] parameters (none): missing a required argument: 'command'" in line


def test_a_creator_that_raises_is_a_one_line_error_naming_the_key(tmp_path):
    module = tmp_path / "failing_creator.py"
    module.write_text("def make(size=3):\n    raise ValueError(f'size {size} is not supported')\n")
    path = write(tmp_path, "[env]\nname = failing_creator:make\nsize = 5\n[vec]\nbackend = Serial\nnum_envs = 2\n")
    result = subprocess.run(
        [sys.executable, "-m", "shoal", "run", "--config", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
    )
    line = _one_line_error(result)
    assert line == (
        f"shoal: error: {path}: [env] name = 'failing_creator:make': making the env failed: "
        "ValueError: size 5 is not supported"
    )


def test_a_num_envs_of_26_digits_is_refused_with_the_estimate(tmp_path):
    path = write(tmp_path, "[env]\nname = cartpole\n[vec]\nnum_envs = 12345678901234567890123456\n")
    line = _one_line_error(shoal("run", "--config", path))
    assert line.startswith(f"shoal: error: {path}: num_envs=12,345,678,901,234,567,890,123,456 needs ")
    assert "of memory for the vector (" in line and "this machine has available" in line


def test_a_config_with_a_utf8_byte_order_mark_is_read(tmp_path):
    path = tmp_path / "bom.ini"
    path.write_bytes(b"\xef\xbb\xbf[env]\nname = cartpole\n[vec]\nbackend = Serial\nnum_envs = 2\n")
    result = shoal("run", "--config", path, "--steps", 100, "--seconds", 0)
    assert result.returncode == 0, result.stderr
    assert "backend: Serial" in result.stdout and "num_envs: 2" in result.stdout
