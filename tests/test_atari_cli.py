"""Atari through config.ini and the `shoal` command: its [env] keys are its options (preset included,
a preset's rules not), a relative rom is the config file's, `shoal run` is bounded by time (an
inherited 40,000,000 steps was 18 hours), and `shoal bench` measures ale-py's vector and EnvPool."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time

import pytest

pytest.importorskip("ale_py", reason="shoal.atari needs ale-py: pip install -e '.[atari]'")

from shoal.atari import env_class
from shoal.atari.build import roms_dir
from shoal.atari.env import UNSUPPORTED
from shoal.atari.family import ENVS_PER_CPU as ATARI_ENVS_PER_CPU
from shoal.config import ConfigError, env_parameters, load, make_from_config
from shoal.cpus import usable_cpus


def write(folder, text: str):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "config.ini"
    path.write_text(text)
    return path


def shoal(*args, timeout=300, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "shoal", *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=cwd
    )


def test_every_key_offered_is_taken_by_the_env_preset_included_rules_not(tmp_path):
    path = write(tmp_path, "[env]\nname = atari:pong\npreset = envpool\n[vec]\nbackend = Serial\nnum_envs = 1\n")
    config = load(path)
    offered = env_parameters(config)
    assert "preset" in offered and "rules" not in offered
    # every key offered, at its default, goes through config.ini and make() to the env
    defaults = {p["name"]: p["default"] for p in env_class("pong").describe()["params"]}
    lines = [f"{key} = {defaults[key]:g}" for key in offered if key in defaults and key != "rom"]
    lines += [f"{key} = {str(value).lower()}" for key, (value, _) in UNSUPPORTED.items()]
    lines += ["preset = envpool", "max_episode_steps = 1000"]
    path = write(
        tmp_path, "[env]\nname = atari:pong\n" + "\n".join(lines) + "\n[vec]\nbackend = Serial\nnum_envs = 1\n"
    )
    with make_from_config(path) as vecenv:
        obs, _ = vecenv.reset(0)
        assert obs.shape == (1, 4, 84, 84)
    with pytest.raises(ConfigError, match=r"unknown key \[env\] rules.*'preset'"):
        load(write(tmp_path, "[env]\nname = atari:pong\nrules = 1\n"))


def test_a_relative_rom_is_the_config_files(tmp_path, monkeypatch):
    folder = tmp_path / "configs"
    (folder / "roms").mkdir(parents=True)
    shutil.copy(roms_dir() / "pong.bin", folder / "roms" / "pong.bin")
    path = write(folder, "[env]\nname = atari:pong\nrom = roms/pong.bin\n[vec]\nbackend = Serial\nnum_envs = 1\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)  # where roms/pong.bin is not
    config = load(path)
    assert config.env_kwargs["rom"] == str(folder / "roms" / "pong.bin")
    with make_from_config(config) as vecenv:
        vecenv.reset(0)


def test_an_atari_game_without_a_num_envs_of_the_users_gets_the_familys(tmp_path):
    assert load(None, {"env.name": "atari:pong"}).vec["num_envs"] == ATARI_ENVS_PER_CPU * usable_cpus()
    assert load(write(tmp_path, "[env]\nname = atari:pong\n[vec]\nnum_envs = 4\n")).vec["num_envs"] == 4


def test_shoal_run_on_an_atari_game_returns_within_a_minute():
    env_class("pong")  # the build (cached) is not the run's
    started = time.monotonic()
    result = shoal("run", "--env.name", "atari:pong", timeout=180)
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert re.search(r"^  timed: 1 window of 5 s after \d+ warm-up batch steps: [\d.]+ s$", result.stdout, re.M)
    assert re.search(r"^SPS: [\d,]+$", result.stdout, re.M) and took < 60, (took, result.stdout)


def test_shoal_bench_on_atari_measures_ale_pys_vector_and_envpool(tmp_path):
    pytest.importorskip("envpool", reason="EnvPool's row needs envpool")
    args = ["bench", "--env.name", "atari:pong", "--vec.num_envs", 2, "--repeats", 1, "--seconds", 0.05]
    result = shoal(*args, "--out", tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr
    table = (tmp_path / "bench.md").read_text()
    for row in (
        r"\| ale-py AtariVectorEnv pong T=\d+ \(its defaults: preset ale_vector\) \| [\d,]+ .* \| peer \|",
        r"\| EnvPool pong T=\d+ \(its defaults: preset envpool\) \| [\d,]+ .* \| peer \|",
        r"\| Multithreading n=2 T=\d+ preset=ale_vector \| [\d,]+ .* \| shoal \|",
        r"\| Multithreading n=2 T=\d+ preset=envpool \| [\d,]+ .* \| shoal \|",
    ):
        assert re.search(row, table), (row, table)
    assert "Left out: gymnasium vector envs: an Atari game's vector peers are ale-py's vector and EnvPool." in table
