"""A native vector enforces the action rule itself (shoal/actions.hpp): actions in its native form
(int32/int64, float32 for a box, native byte order, C-contiguous, of the exact shape) are checked,
clipped and copied natively, and a refusal is raised by the native call with the ActionChecker's own
words, without the Python conversion (ActionChecker.converted) running.

The envs (tests/native_envs/echo_actions.c) observe the actions they receive.
"""

import numpy as np
import pytest

from shoal.errors import APIUsageError
from shoal.spaces import ActionChecker
from shoal.vector import make

from echo_envs import build_echo_envs

ROWS = 2
SEED = 3
# (name, make() options, envs): the pipelined vector's buffers hold ROWS envs each
NATIVE = [
    ("Multithreading", {"backend": "Multithreading", "max_num_threads": 2}, ROWS),
    ("Multithreading pipelined", {"backend": "Multithreading", "batch_size": ROWS, "max_num_threads": 2}, 2 * ROWS),
    ("PufferEnv", {"backend": "PufferEnv"}, ROWS),
]


@pytest.fixture(scope="module")
def echo(tmp_path_factory):
    return build_echo_envs(tmp_path_factory.mktemp("echo_envs"))


def vector(cls, options, num_envs, **more):
    if options["backend"] == "PufferEnv":
        env = cls(num_envs=num_envs, seed=SEED)
        if "box_actions" in more:
            env.set_box_actions(more["box_actions"])
        return env
    return make(cls, num_envs=num_envs, seed=SEED, **options, **more)


@pytest.fixture
def no_conversion(monkeypatch):
    """Makes ActionChecker's conversion and full check fail if anything calls them."""

    def refuse(self, actions):
        raise AssertionError(f"the Python action check ran for {actions!r}")

    monkeypatch.setattr(ActionChecker, "converted", refuse)
    monkeypatch.setattr(ActionChecker, "__call__", refuse)


def checker_message(space, actions, box_actions="pass") -> str:
    """What ActionChecker says of ``actions`` (the text every backend gives)."""
    with pytest.raises(APIUsageError) as refused:
        ActionChecker(space, ROWS, box_actions)(actions)
    return str(refused.value)


def send_once(vecenv, actions):
    """reset, then one send of ``actions``: the observations of the first ROWS envs (a pipelined vector
    steps its second buffer with the same actions, then returns its first)."""
    vecenv.async_reset(SEED)
    vecenv.recv()
    vecenv.send(actions)
    if vecenv.num_envs > ROWS:
        vecenv.recv()
        vecenv.send(actions)
    return vecenv.recv()[0][:ROWS].copy()


@pytest.mark.parametrize("name, options, num_envs", NATIVE)
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_out_of_range_native_form_is_refused_natively_in_the_checkers_words(
    echo, name, options, num_envs, dtype, no_conversion
):
    actions = np.array([1, 1000], dtype)  # Discrete(1000)
    vecenv = vector(echo["discrete"], options, num_envs)
    try:
        vecenv.async_reset(SEED)
        vecenv.recv()
        with pytest.raises(APIUsageError, match=r"action 1000 at row 1 is out of range") as refused:
            vecenv.send(actions)
        message = str(refused.value)
        assert "(dtype " + np.dtype(dtype).name + "; 1 value(s) out of range)" in message
        assert "actions must be integers in [0, 1000)" in message
        # refused actions leave the vector as it was: the next send goes on
        vecenv.send(np.array([2, 3], dtype))
        obs = vecenv.recv()[0]
        if num_envs == ROWS:  # (a pipelined vector's recv returns its other buffer)
            np.testing.assert_array_equal(obs[:, 0], [2, 3])
    finally:
        vecenv.close()


def test_refusal_words_are_the_checkers(echo):
    """The native refusal and ActionChecker's own check say the same thing, word for word."""
    env = echo["multi"](num_envs=ROWS, seed=SEED)
    try:
        env.reset()
        for actions in (np.array([[2, 999], [3, 1000]], np.int32), np.array([[-1, 0], [0, 0]], np.int64)):
            expected = checker_message(env.single_action_space, actions)
            with pytest.raises(APIUsageError) as refused:
                env.step(actions)
            assert str(refused.value) == expected
    finally:
        env.close()


@pytest.mark.parametrize("name, options, num_envs", NATIVE)
def test_multidiscrete_bounds_are_per_dimension(echo, name, options, num_envs, no_conversion):
    # MultiDiscrete([3, 1000]): 3 is inside the second dimension's bound, outside the first's
    vecenv = vector(echo["multi"], options, num_envs)
    try:
        obs = send_once(vecenv, np.array([[2, 999], [0, 3]], np.int32))
        np.testing.assert_array_equal(obs[:, :2], [[2, 999], [0, 3]])
        vecenv.async_reset(SEED)
        vecenv.recv()
        for actions, where, bound in (
            (np.array([[2, 999], [3, 0]], np.int32), "row 1, dimension 0", 3),
            (np.array([[2, 1000], [0, 0]], np.int64), "row 0, dimension 1", 1000),
        ):
            with pytest.raises(APIUsageError, match=rf"at {where} is out of range .*\[0, {bound}\)"):
                vecenv.send(actions)
    finally:
        vecenv.close()


@pytest.mark.parametrize("name, options, num_envs", NATIVE)
def test_box_actions_are_clipped_and_refused_natively(echo, name, options, num_envs, no_conversion):
    actions = np.array([[2.0, np.nan, -0.5], [-3.0, 1.0, 0.25]], np.float32)
    clipping = vector(echo["box"], options, num_envs, box_actions="clip")
    strict = vector(echo["box"], options, num_envs, box_actions="strict")
    try:
        obs = send_once(clipping, actions)
        np.testing.assert_array_equal(obs[:, :3], [[1.0, np.nan, -0.5], [-1.0, 1.0, 0.25]])
        strict.async_reset(SEED)
        strict.recv()
        with pytest.raises(APIUsageError, match=r"action 2.0 at row 0, dimension 0 is outside \[-1, 1\]") as refused:
            strict.send(actions)
        assert "(dtype float32; 3 value(s) outside or NaN)" in str(refused.value)
    finally:
        clipping.close()
        strict.close()


@pytest.mark.parametrize("name, options, num_envs", NATIVE)
def test_other_forms_are_converted_then_stepped(echo, name, options, num_envs):
    vecenv = vector(echo["multi"], options, num_envs)
    try:
        for actions in (
            np.array([[2, 999], [1, 5]], ">i4"),
            np.array([[2, 999], [1, 5]], np.uint16),
            np.asfortranarray(np.array([[2, 999], [1, 5]], np.int32)),
            [[2, 999], [1, 5]],
        ):
            obs = send_once(vecenv, actions)
            np.testing.assert_array_equal(obs[:, :2], [[2, 999], [1, 5]])
        vecenv.async_reset(SEED)
        vecenv.recv()
        with pytest.raises(APIUsageError, match=r"action 3 at row 1, dimension 0 is out of range .*dtype int8"):
            vecenv.send(np.array([[2, 99], [3, 5]], np.int8))
        with pytest.raises(APIUsageError, match=r"actions have shape \(3, 2\), expected \(2, 2\)"):
            vecenv.send(np.zeros((3, 2), np.int32))
    finally:
        vecenv.close()


def test_a_closed_vector_says_so_without_converting(echo, no_conversion):
    env = echo["discrete"](num_envs=ROWS, seed=SEED)
    env.reset()
    env.close()
    with pytest.raises(APIUsageError, match="closed"):
        env.step(np.array([1, 2000], np.int32))


def test_a_pipelined_native_env_stepped_whole_says_it_is_pipelined():
    """step() on a NativeEnv of two buffers: the error names the misuse (use submit/wait), not the
    shape of one buffer's actions, before any conversion of the whole batch's array."""
    from shoal.envs import CartPole

    env = CartPole(num_envs=4, seed=0, num_buffers=2)
    try:
        env.reset()
        for actions in (np.zeros(4, np.int32), np.zeros(4, np.int64), [0, 1, 0, 1]):
            with pytest.raises(APIUsageError, match="pipelined; use submit"):
                env.step(actions)
    finally:
        env.close()
