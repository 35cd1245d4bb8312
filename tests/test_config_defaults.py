"""What a newcomer's config.ini does: partial files start from the embedded defaults, keys must
apply to the backend, command-line errors say so, envs are found beside the config file."""

from __future__ import annotations

import subprocess
import sys

import pytest

from shoal.config import ConfigError, load, make_from_config
from shoal.envs import CartPole


def write(tmp_path, text: str):
    path = tmp_path / "config.ini"
    path.write_text(text)
    return path


def shoal(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "shoal", *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_a_config_with_only_env_starts_from_the_embedded_defaults(tmp_path):
    config = load(write(tmp_path, "[env]\nname = cartpole\n"))
    embedded = load()
    assert config.vec == embedded.vec and config.vec["backend"] == "Multithreading"
    assert config.vec["num_envs"] == 4096 and config.run == embedded.run


def test_a_vec_key_without_a_backend_line_uses_the_default_backend(tmp_path):
    config = load(write(tmp_path, "[env]\nname = cartpole\n[vec]\nmax_num_threads = 3\nnum_envs = 8\n"))
    assert config.vec["backend"] == "Multithreading" and config.vec["max_num_threads"] == 3
    with make_from_config(config) as vecenv:
        assert type(vecenv).__name__ == "Multithreading" and vecenv.max_num_threads == 3


def test_a_key_of_another_backend_is_an_error_naming_both(tmp_path):
    path = write(tmp_path, "[env]\nname = cartpole\n[vec]\nbackend = Serial\nmax_num_threads = 3\n")
    with pytest.raises(
        ConfigError, match=r"\[vec\] max_num_threads does not apply to backend Serial; Serial takes: "
    ) as error:
        load(path)
    assert str(error.value).startswith(f"{path}: ")


def test_defaults_of_other_backends_are_left_out(tmp_path):
    config = load(write(tmp_path, "[env]\nname = cartpole\n[vec]\nbackend = Serial\nnum_envs = 2\n"))
    assert "max_num_threads" not in config.vec and "schedule" not in config.vec
    with make_from_config(config) as vecenv:
        assert type(vecenv).__name__ == "Serial" and vecenv.num_envs == 2


def test_an_override_typo_is_reported_against_the_command_line():
    result = shoal("run", "--vec.num_thread", 1)
    assert result.returncode == 2
    assert result.stderr.startswith(
        "shoal: error: command line: unknown key [vec] num_thread; did you mean max_num_threads?"
    ), result.stderr
    assert "config.ini" not in result.stderr


def test_an_override_bad_value_is_reported_against_the_command_line():
    result = shoal("run", "--vec.max_num_threads=lots")
    assert result.stderr.startswith(
        "shoal: error: command line: [vec] max_num_threads = 'lots': max_num_threads must be an integer in [0, 1024]"
    ), result.stderr


def test_an_override_of_an_unknown_section_and_a_missing_value():
    result = shoal("run", "--ven.num_envs", 4)
    assert "shoal: error: command line: override --ven.num_envs: use --env.<key>, --vec.<key> or --run.<key>" in (
        result.stderr
    )
    result = shoal("run", "--vec.num_envs")
    assert "shoal: error: command line: override --vec.num_envs needs a value" in result.stderr
    result = shoal("run", "stray")
    assert "shoal: error: command line: unrecognized argument 'stray'; overrides look like --vec.num_envs 1024" in (
        result.stderr
    )


def test_run_help_documents_overrides():
    result = shoal("run", "--help")
    assert result.returncode == 0
    assert "--section.key VALUE" in result.stdout and "--vec.num_envs 64" in result.stdout


def test_module_callable_is_found_beside_the_config_file(tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "drift_env.py").write_text(
        "import gymnasium\n\ndef make(length=7):\n    return gymnasium.make('CartPole-v1', max_episode_steps=length)\n"
    )
    (folder / "config.ini").write_text(
        "[env]\nname = drift_env:make\nlength = 5\n[vec]\nbackend = Serial\nnum_envs = 2\n[run]\nwarmup = 1\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = shoal("run", "--config", folder / "config.ini", "--steps", 40, "--seconds", 0, cwd=elsewhere)
    assert result.returncode == 0, result.stderr
    assert "mean length: 5.0" in result.stdout


def test_a_missing_native_library_names_the_path_and_the_export_name(tmp_path):
    with pytest.raises(
        ConfigError, match=r"native env library .*build/drift\.so does not exist.*NAME is taken to be 'drift'"
    ):
        load(write(tmp_path, "[env]\nname = build/drift.so\n"))


def test_the_default_config_still_runs_cartpole():
    assert load().env_name == "cartpole" and issubclass(CartPole, object)


def test_run_steps_are_the_users_only_never_inherited(tmp_path, monkeypatch):
    # An embedded [run] steps = 40,000,000 made `shoal run --env.name atari:pong` an 18-hour run.
    import shoal.config

    embedded = tmp_path / "embedded.ini"
    embedded.write_text(shoal.config.DEFAULT_CONFIG.read_text().replace("[run]\n", "[run]\nsteps = 40000000\n", 1))
    monkeypatch.setattr(shoal.config, "DEFAULT_CONFIG", embedded)
    assert "steps" not in load().run and load().run["seconds"] == 5.0
    user = tmp_path / "user"
    user.mkdir()
    assert "steps" not in load(write(user, "[env]\nname = cartpole\n")).run
    assert load(write(user, "[env]\nname = cartpole\n[run]\nsteps = 1000\n")).run["steps"] == 1000
    assert load(None, {"run.steps": "500"}).run["steps"] == 500


def test_relative_env_paths_resolve_against_the_config_folder_and_the_command_line_against_the_cwd(
    tmp_path, monkeypatch
):
    from shoal.config import COMMAND_LINE, Config, _resolve_paths

    folder = tmp_path / "configs"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)

    def resolved(name, key, text, where):
        config = Config(str(folder / "config.ini"), name, {key: text}, folder=str(folder))
        _resolve_paths(config, {key: (text, where)})
        return config.env_kwargs[key]

    in_file = str(folder / "config.ini")
    assert resolved("atari:pong", "rom", "roms/pong.bin", in_file) == str(folder / "roms" / "pong.bin")
    assert resolved("atari:pong", "rom", "roms/pong.bin", COMMAND_LINE) == str(elsewhere / "roms" / "pong.bin")
    assert resolved("atari:pong", "rom", "/abs/pong.bin", in_file) == "/abs/pong.bin"
    # a MuJoCo xml_file starting with "." is the user's file; any other name is one of Gymnasium's assets
    assert resolved("mujoco:Ant-v5", "xml_file", "./ant.xml", in_file) == str(folder / "ant.xml")
    assert resolved("mujoco:Ant-v5", "xml_file", "ant.xml", in_file) == "ant.xml"
    assert resolved("cartpole", "rom", "roms/pong.bin", in_file) == "roms/pong.bin"  # not a path of this env
