"""config.ini mistakes read as one line naming the file, the line or the key and what is valid: every
unknown key at once (with "did you mean", [env] parameters included), malformed files without
configparser's multi-line messages, and [run] values that can only be typos refused with the reason."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from shoal.config import MAX_RUN_STEPS, MAX_WARMUP, ConfigError, env_parameters, load


def write(tmp_path, text: str, name: str = "config.ini"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def error_of(path, overrides=None) -> str:
    with pytest.raises(ConfigError) as error:
        load(path, overrides)
    message = str(error.value)
    assert "\n" not in message, message
    return message


# -- every unknown key at once ------------------------------------------------------------------


def test_every_unknown_key_is_reported_at_once_each_with_its_nearest_key(tmp_path):
    path = write(
        tmp_path,
        """\
        [env]
        name = cartpole
        [vec]
        num_envz = 3
        seeed = 3
        [run]
        stpes = 4
        """,
    )
    message = error_of(path)
    assert message.startswith(f"{path}: 3 unknown keys: ")
    for named in ("[vec] num_envz (did you mean num_envs?)", "[vec] seeed (did you mean seed?)"):
        assert named in message
    assert "[run] stpes (did you mean steps?)" in message
    assert "valid [vec] keys: [" in message and "valid [run] keys: ['repeats', 'seconds', 'steps', 'warmup']" in message


def test_unknown_keys_of_the_file_and_of_the_command_line_are_named_with_their_place(tmp_path):
    path = write(tmp_path, "[env]\nname = cartpole\n[vec]\nbackend = Serial\nmax_num_threads = 3\nnum_envz = 3\n")
    message = error_of(path, {"run.stpes": "4"})
    assert message.startswith(f"{path}: unknown key [vec] num_envz; did you mean num_envs? (valid keys: [")
    assert "; [vec] max_num_threads does not apply to backend Serial; Serial takes: " in message
    assert message.endswith(
        "; command line: unknown key [run] stpes; did you mean steps? (valid keys: "
        "['repeats', 'seconds', 'steps', 'warmup'])"
    )


def test_an_env_parameter_typo_gets_did_you_mean_for_a_bundled_native_env(tmp_path):
    path = write(tmp_path, "[env]\nname = deep\nwrok = 5\n[vec]\nbackend = Serial\nnum_envs = 2\n")
    assert error_of(path) == (
        f"{path}: unknown key [env] wrok; did you mean work? (valid keys: ['max_episode_steps', 'name', 'work'])"
    )


def test_an_env_parameter_typo_gets_did_you_mean_for_a_gymnasium_id(tmp_path):
    path = write(tmp_path, "[env]\nname = gymnasium:CartPole-v1\nsutton_barto_rewrd = true\n")
    message = error_of(path)
    assert message.startswith(f"{path}: unknown key [env] sutton_barto_rewrd; did you mean sutton_barto_reward? ")
    assert "'max_episode_steps'" in message and "'render_mode'" in message  # gymnasium.make's and the env's


def test_an_env_parameter_typo_gets_did_you_mean_for_a_module_callable(tmp_path):
    (tmp_path / "my_envs.py").write_text("def make(size=3, noise=0.0):\n    raise AssertionError('not built')\n")
    path = write(tmp_path, "[env]\nname = my_envs:make\nsise = 4\nnoize = 1\n")
    message = error_of(path)
    assert message.startswith(
        f"{path}: 2 unknown keys: [env] sise (did you mean size?), [env] noize (did you mean noise?)"
    )
    assert "valid [env] keys: ['name', 'noise', 'size']" in message


def test_a_creator_taking_any_keyword_accepts_every_key(tmp_path):
    (tmp_path / "kw_envs.py").write_text("def make(**kwargs):\n    return kwargs\n")
    path = write(tmp_path, "[env]\nname = kw_envs:make\nanything = 4\n")
    assert load(path).env_kwargs == {"anything": 4}
    assert env_parameters(load(path)) is None


def test_a_misspelt_name_key_is_pointed_out(tmp_path):
    path = write(tmp_path, "[env]\nnmae = cartpole\n")
    message = error_of(path)
    assert message.startswith(f"{path}: [env] name is missing (") and message.endswith(
        "is [env] nmae meant to be name?"
    )


def test_an_env_typo_through_the_command_is_one_line(tmp_path):
    path = write(tmp_path, "[env]\nname = deep\n[vec]\nbackend = Serial\nnum_envs = 2\n")
    result = subprocess.run(
        [sys.executable, "-m", "shoal", "run", "--config", str(path), "--env.wrok", "5"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert (
        result.stderr
        == "shoal: error: command line: unknown key [env] wrok; did you mean work? (valid keys: ['max_episode_steps', 'name', 'work'])\n"
    )


# -- malformed files ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        (
            "name = cartpole\n",
            "line 1: 'name = cartpole' comes before any section header; a config file's keys go under "
            "[env], [vec], [run] (e.g. [env] then name = cartpole)",
        ),
        ("[env]\nname = cartpole\nname = grid\n", "line 3: [env] name is set twice; keep one line"),
        ("[env]\nname = cartpole\n[env]\n", "line 3: section [env] appears twice; write each section once"),
        (
            "[env]\nname = cartpole\ngarbage\n",
            "line 3: cannot parse 'garbage'; expected key = value, a [section] header ([env], [vec], [run]) "
            "or a ; comment",
        ),
        (
            "[env]\nname = cartpole\n  more\n",
            "[env] name = 'cartpole\\nmore' spans several lines: an indented line continues the value above it; "
            "unindent that line",
        ),
    ],
)
def test_a_malformed_file_is_one_line_naming_file_and_line(tmp_path, text, expected):
    path = write(tmp_path, text)
    assert error_of(path) == f"{path}: {expected}"


def test_a_file_without_a_section_header_through_the_command(tmp_path):
    path = write(tmp_path, "name = cartpole\n")
    result = subprocess.run(
        [sys.executable, "-m", "shoal", "run", "--config", str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"shoal: error: {path}: line 1: 'name = cartpole' comes before any section header")


# -- [run] values that can only be mistakes -----------------------------------------------------


@pytest.mark.parametrize(
    "key, text, expected",
    [
        (
            "warmup",
            "99999999999999999999",
            f"warmup must be an integer in [0, {MAX_WARMUP:,}], got 99,999,999,999,999,999,999 "
            "(more batch steps than a day of stepping at any speed: a typo?)",
        ),
        (
            "steps",
            str(MAX_RUN_STEPS + 1),
            f"steps must be an integer in [1, {MAX_RUN_STEPS:,}], got {MAX_RUN_STEPS + 1:,} "
            "(more agent steps than a day of stepping at any speed: a typo?)",
        ),
        ("warmup", "-1", f"warmup must be an integer in [0, {MAX_WARMUP}], got -1"),
        (
            "seconds",
            "1e6",
            "seconds must be a number of seconds in [0, 86400], got 1e+06 (a window over a day is a mistake)",
        ),
        ("seconds", "nan", "seconds must be a number of seconds in [0, 86400], got nan"),
        ("seconds", "-1", "seconds must be a number of seconds in [0, 86400], got -1"),
        ("seconds", "soon", "seconds must be a number of seconds in [0, 86400], got 'soon'"),
        (
            "repeats",
            "100000",
            "repeats must be an integer in [1, 1,000], got 100,000 (more timed windows than a run needs for a "
            "spread: a typo?)",
        ),
    ],
)
def test_run_values_out_of_bounds_are_refused_with_the_reason(tmp_path, key, text, expected):
    path = write(tmp_path, f"[env]\nname = cartpole\n[run]\n{key} = {text}\n")
    assert error_of(path) == f"{path}: [run] {key} = {text!r}: {expected}"


def test_run_values_at_the_bounds_are_accepted(tmp_path):
    path = write(
        tmp_path,
        f"[env]\nname = cartpole\n[run]\nsteps = {MAX_RUN_STEPS}\nwarmup = {MAX_WARMUP}\nseconds = 86400\nrepeats = 1000\n",
    )
    assert load(path).run == {"steps": MAX_RUN_STEPS, "warmup": MAX_WARMUP, "seconds": 86400.0, "repeats": 1000}


def test_a_huge_warmup_fails_before_anything_steps(tmp_path):
    path = write(tmp_path, "[env]\nname = cartpole\n[run]\nwarmup = 99999999999999999999\n")
    result = subprocess.run(
        [sys.executable, "-m", "shoal", "run", "--config", str(path)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith(f"shoal: error: {path}: [run] warmup = '99999999999999999999': warmup must be")
