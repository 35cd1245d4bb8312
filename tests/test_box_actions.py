"""Box actions reach the env as given (outside the bounds, NaN and infinities included), as Gymnasium and
PufferLib pass them, on every backend; box_actions="clip" clips them to the bounds and "strict" refuses
them, naming the value, its row and the remedy. Discrete and MultiDiscrete actions stay range-checked.

The native envs (tests/native_envs/echo_actions.c) and the Python env below observe the actions they
receive, so a value changed on the way shows in the observations.
"""

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces

import shoal.vector
from shoal.errors import APIUsageError

from echo_envs import build_echo_envs

ROWS = 4
STEPS = 3  # under the echo envs' time limit of 4: every observation is the last step's actions
BACKENDS = [
    ("Serial", "Serial", {}),
    ("Multiprocessing", "Multiprocessing", {"num_workers": 2, "start_method": "fork"}),
    ("Multithreading", "Multithreading", {"max_num_threads": 2}),
    ("Multithreading T=0", "Multithreading", {"max_num_threads": 0}),
    ("Multithreading pipelined", "Multithreading", {"batch_size": ROWS, "max_num_threads": 2}),
    ("PufferEnv", "PufferEnv", {}),
]
NAMES = [name for name, *_ in BACKENDS]


@pytest.fixture(scope="module")
def echo(tmp_path_factory):
    return build_echo_envs(tmp_path_factory.mktemp("echo_envs"))


def gaussian_stream(steps=STEPS, rows=ROWS, dims=3, seed=0):
    """A Gaussian policy's unclipped actions, scaled x10 (far outside Box(-1, 1)), with NaN and both
    infinities in some rows."""
    actions = (10 * np.random.default_rng(seed).normal(0, 1, (steps, rows, dims))).astype(np.float32)
    actions[0, 1, dims - 1] = np.nan
    actions[1, 2, 0] = np.inf
    actions[2, 3, 1] = -np.inf
    return actions


def make_vector(cls, name, rows=ROWS, **options):
    _, backend, backend_options = next(entry for entry in BACKENDS if entry[0] == name)
    if backend == "PufferEnv":
        num_envs = 2 * rows if name.endswith("pipelined") else rows
        return shoal.vector.make(cls, env_kwargs={"num_envs": num_envs}, backend="PufferEnv", **options)
    num_envs = 2 * rows if name.endswith("pipelined") else rows
    return shoal.vector.make(cls, backend=backend, num_envs=num_envs, seed=3, **backend_options, **options)


def observed(vecenv, actions, pipelined):
    """The observations after each step with actions[t] (what the env saw), one array per step."""
    vecenv.async_reset(3)
    vecenv.recv()
    seen = []
    for step_actions in actions:
        vecenv.send(step_actions)
        if pipelined:  # the second buffer takes the same actions; the first comes back next
            vecenv.recv()
            vecenv.send(step_actions)
        obs = vecenv.recv()[0]
        seen.append(obs.copy())
    return np.stack(seen)


@pytest.mark.parametrize("name", NAMES)
def test_gaussian_actions_reach_the_native_env_as_given(echo, name):
    actions = gaussian_stream()
    with make_vector(echo["box"], name) as vecenv:
        seen = observed(vecenv, actions, name.endswith("pipelined"))
    np.testing.assert_array_equal(seen[..., :3], actions, err_msg=f"{name}: the env saw other actions")


@pytest.mark.parametrize("name", NAMES)
def test_float64_actions_reach_the_native_env_rounded_to_float32(echo, name):
    """The slow path (another dtype) passes out-of-bound values too, as numpy rounds them."""
    actions = gaussian_stream().astype(np.float64) * 1.1
    with make_vector(echo["box"], name) as vecenv:
        seen = observed(vecenv, actions, name.endswith("pipelined"))
    np.testing.assert_array_equal(seen[..., :3], actions.astype(np.float32))


@pytest.mark.parametrize("name", NAMES)
def test_clip_mode_clips_to_the_bounds(echo, name):
    actions = gaussian_stream()
    with make_vector(echo["box"], name, box_actions="clip") as vecenv:
        seen = observed(vecenv, actions, name.endswith("pipelined"))
    np.testing.assert_array_equal(seen[..., :3], np.clip(actions, -1, 1))  # NaN stays NaN, as np.clip leaves it


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_strict_mode_refuses_naming_the_value_the_row_and_the_remedy(echo, name, dtype):
    actions = np.zeros((ROWS, 3), dtype)
    actions[2, 1] = 7.5
    with make_vector(echo["box"], name, box_actions="strict") as vecenv:
        vecenv.async_reset(3)
        vecenv.recv()
        before = vecenv.buf.observations.copy()
        with pytest.raises(APIUsageError) as refused:
            vecenv.send(actions)
        message = str(refused.value)
        assert "action 7.5 at row 2, dimension 1 is outside [-1, 1]" in message, message
        assert "box_actions='clip'" in message and "box_actions='strict'" in message, message
        np.testing.assert_array_equal(vecenv.buf.observations, before)  # nothing stepped
        actions[2, 1] = np.nan
        with pytest.raises(APIUsageError, match="action nan at row 2, dimension 1"):
            vecenv.send(actions)
        actions[2, 1] = 1.0
        vecenv.send(actions)  # still usable: in-bound actions step
        vecenv.recv()


def test_box_actions_is_checked_by_make_and_config(echo, tmp_path):
    with pytest.raises(APIUsageError, match=r"box_actions must be one of \('pass', 'clip', 'strict'\), got 'clamp'"):
        shoal.vector.make(echo["box"], backend="Multithreading", num_envs=2, box_actions="clamp")
    with shoal.vector.make(echo["box"], backend="Serial", num_envs=2) as vecenv:
        assert vecenv.box_actions == "pass"
    from shoal.config import load, make_from_config

    path = tmp_path / "config.ini"
    path.write_text("[env]\nname = cartpole\n[vec]\nbackend = Serial\nnum_envs = 2\nbox_actions = strict\n")
    with make_from_config(load(str(path), {})) as vecenv:
        assert vecenv.box_actions == "strict"


def test_discrete_errors_name_the_value_the_row_and_the_remedy(echo):
    with shoal.vector.make(echo["discrete"], backend="Multithreading", num_envs=3) as vecenv:
        vecenv.reset(0)
        with pytest.raises(APIUsageError) as refused:
            vecenv.send(np.array([1, 1000, 2], np.int32))
        message = str(refused.value)
        assert "action 1000 at row 1 is out of range for Discrete(1000)" in message, message
        assert "integers in [0, 1000)" in message and "sample them from the action space" in message, message
    with shoal.vector.make(echo["multi"], backend="Serial", num_envs=2) as vecenv:
        vecenv.reset(0)
        with pytest.raises(APIUsageError, match=r"action -1 at row 1, dimension 0 is out of range .*\[0, 3\)"):
            vecenv.send(np.array([[0, 5], [-1, 2]], np.int64))


class ActionEcho(gymnasium.Env):
    """A Python env whose observation is the action it got, as Gymnasium handed it over."""

    observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = spaces.Box(np.array([-1.0, 0.0], np.float32), np.array([1.0, 0.5], np.float32))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(2, np.float32), {}

    def step(self, action):
        return np.asarray(action, np.float32), float(np.sum(np.square(action))), False, False, {}


@pytest.mark.parametrize("backend", ["Serial", "Multiprocessing"])
def test_gaussian_actions_reach_a_gymnasium_env_as_given(backend):
    actions = gaussian_stream(dims=2)
    options = {"num_workers": 2} if backend == "Multiprocessing" else {}
    with shoal.vector.make(ActionEcho, backend=backend, num_envs=ROWS, **options) as vecenv:
        seen = observed(vecenv, actions, False)
    np.testing.assert_array_equal(seen, actions)
    # per-dimension bounds under clip
    with shoal.vector.make(ActionEcho, backend=backend, num_envs=ROWS, box_actions="clip", **options) as vecenv:
        seen = observed(vecenv, actions, False)
    np.testing.assert_array_equal(seen, np.clip(actions, [-1.0, 0.0], [1.0, 0.5]))
