"""One action rule on every backend: any dtype, byte order or layout a caller passes reaches the envs
as the values numpy reads from it (what Serial sees), or is refused with the same APIUsageError.

The envs (tests/native_envs/echo_actions.c) observe the actions they receive, so a value that is
misread shows in the observations.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from shoal.errors import APIUsageError
from shoal.spaces import ActionChecker
from shoal.vector import make

from echo_envs import build_echo_envs

ROWS = 2  # agents per batch of every vector compared
SEED = 5

# (name, backend, make() options, envs); pipelined Multithreading holds two buffers of ROWS envs and
# its buffer 0 (envs 0..ROWS-1, the same seeds) is compared with the others.
BACKENDS = [
    ("Serial", "Serial", {}, ROWS),
    ("Multiprocessing", "Multiprocessing", {"num_workers": 2, "start_method": "fork"}, ROWS),
    ("Multithreading", "Multithreading", {"max_num_threads": 2}, ROWS),
    ("Multithreading pipelined", "Multithreading", {"batch_size": ROWS, "max_num_threads": 2}, 2 * ROWS),
    ("PufferEnv", "PufferEnv", {}, ROWS),
]


@pytest.fixture(scope="module")
def echo(tmp_path_factory):
    return build_echo_envs(tmp_path_factory.mktemp("echo_envs"))


def make_vector(cls, backend, options, num_envs):
    if backend == "PufferEnv":
        return cls(num_envs=num_envs, seed=SEED)
    return make(cls, backend=backend, num_envs=num_envs, seed=SEED, **options)


@pytest.fixture(scope="module")
def vectors(echo):
    made = {kind: [(name, make_vector(cls, *rest)) for name, *rest in BACKENDS] for kind, cls in echo.items()}
    yield made
    for pairs in made.values():
        for _, vecenv in pairs:
            vecenv.close()


def trajectory(vecenv, make_actions, pipelined: bool, steps: int = 1):
    """reset, then ``steps`` steps of the first ROWS envs with ``make_actions()``: their observations,
    rewards and final observations, or the APIUsageError's message. A pipelined vector steps its
    second buffer with the same actions."""
    vecenv.async_reset(SEED)
    vecenv.recv()
    out = []
    for _ in range(steps):
        try:
            vecenv.send(make_actions())
            if pipelined:
                vecenv.recv()
                vecenv.send(make_actions())
        except APIUsageError as error:
            return str(error)
        obs, rewards, terminals, truncations, _, _, _ = vecenv.recv()
        done = terminals | truncations
        out.append((obs.copy(), rewards.copy(), vecenv.final_observations[done].copy()))
    return [np.concatenate(parts) for parts in zip(*out)]


def one_step(vecenv, actions, pipelined: bool):
    return trajectory(vecenv, lambda: actions, pipelined)


def results_by_backend(pairs, make_actions):
    # 4 steps: the echo envs' time limit, so the last one returns final observations
    return {name: trajectory(vecenv, make_actions, name.endswith("pipelined"), steps=4) for name, vecenv in pairs}


def assert_same_everywhere(results):
    serial = results["Serial"]
    for name, result in results.items():
        if isinstance(serial, str):
            assert result == serial, f"{name}: {result!r}, Serial refused with {serial!r}"
        else:
            assert not isinstance(result, str), f"{name} refused ({result}) what Serial accepted"
            for got, want in zip(result, serial):
                np.testing.assert_array_equal(got, want, err_msg=f"{name} differs from Serial")


# --- the reproducers of issue 26, finding 1 ---------------------------------------------------------


@pytest.mark.parametrize("name", [name for name, *_ in BACKENDS])
def test_big_endian_float32_box_actions_reach_the_env_as_their_values(vectors, name):
    vecenv = dict(vectors["box"])[name]
    actions = np.array([[1.0, -1.0, 0.5]] * ROWS, dtype=">f4")
    obs, rewards, _ = one_step(vecenv, actions, name.endswith("pipelined"))
    np.testing.assert_array_equal(obs[:, :3], [[1.0, -1.0, 0.5]] * ROWS)
    np.testing.assert_array_equal(rewards, [1.0] * ROWS)


@pytest.mark.parametrize("name", [name for name, *_ in BACKENDS])
@pytest.mark.parametrize("strided", [False, True])
def test_negative_int8_is_refused_for_discrete_1000(vectors, name, strided):
    vecenv = dict(vectors["discrete"])[name]
    actions = np.array([3, -1], dtype=np.int8)
    if strided:  # takes the Python fallback rather than the native pass
        actions = np.repeat(actions, 2)[::2]
    result = one_step(vecenv, actions, name.endswith("pipelined"))
    assert isinstance(result, str) and "out of range" in result and "int8" in result, result


@pytest.mark.parametrize("name", [name for name, *_ in BACKENDS])
def test_big_endian_int32_out_of_range_is_refused(vectors, name):
    vecenv = dict(vectors["discrete"])[name]
    result = one_step(vecenv, np.array([16777216, 2], dtype=">i4"), name.endswith("pipelined"))
    assert isinstance(result, str) and "16777216" in result, result


@pytest.mark.parametrize("name", [name for name, *_ in BACKENDS])
@pytest.mark.parametrize("kind", ["discrete", "multi"])
def test_big_endian_int32_in_range_reaches_the_env(vectors, name, kind):
    vecenv = dict(vectors[kind])[name]
    actions = np.array([1, 999] if kind == "discrete" else [[1, 999], [2, 500]], dtype=">i4")
    obs, _, _ = one_step(vecenv, actions, name.endswith("pipelined"))
    np.testing.assert_array_equal(obs[:, : actions.ndim], actions.reshape(ROWS, -1))


@pytest.mark.parametrize("name", ["Multithreading", "Multithreading pipelined", "PufferEnv"])
@pytest.mark.parametrize("kind", ["discrete", "multi"])
def test_int64_actions_reach_native_envs_without_a_conversion(vectors, name, kind, monkeypatch):
    # numpy's default integer and torch's argmax: checked and narrowed natively, as numpy's astype would
    vecenv = dict(vectors[kind])[name]
    native = getattr(vecenv, "env", vecenv)

    class Refuses:
        def __call__(self, actions):
            raise AssertionError("int64 actions went through the Python conversion")

        converted = __call__

    actions = np.array([1, 999] if kind == "discrete" else [[2, 999], [0, 500]], dtype=np.int64)
    with monkeypatch.context() as patch:
        patch.setattr(native, "_check_actions", Refuses())
        patch.setattr(native, "_check_buffer_actions", Refuses())
        obs, _, _ = one_step(vecenv, actions, name.endswith("pipelined"))
    np.testing.assert_array_equal(obs[:, : actions.ndim], actions.reshape(ROWS, -1))


@pytest.mark.parametrize("name", ["Multithreading", "Multithreading pipelined", "PufferEnv"])
@pytest.mark.parametrize("value", [2**32 + 1, -1, -(2**63), 1000])
def test_int64_actions_out_of_range_are_refused_not_narrowed(vectors, name, value):
    # 2**32 + 1 narrowed to int32 would be 1, inside Discrete(1000): it must be refused before narrowing
    vecenv = dict(vectors["discrete"])[name]
    result = one_step(vecenv, np.array([1, value], dtype=np.int64), name.endswith("pipelined"))
    assert isinstance(result, str) and "out of range" in result and str(value) in result, result


@pytest.mark.parametrize(
    "actions, space_upper",
    [
        (np.array([3, -1], np.int8), 1000),
        (np.array([3, -1], np.int16), 70000),
        (np.array([16777216, 2], ">i4"), 3),
        (np.array([-(2**31), 1], ">i8"), 3),
    ],
)
@pytest.mark.parametrize("strided", [False, True])
def test_the_checker_refuses_what_numpy_reads_out_of_range(actions, space_upper, strided):
    from gymnasium import spaces

    if strided:
        actions = np.repeat(actions, 2)[::2]
    with pytest.raises(APIUsageError, match="out of range"):
        ActionChecker(spaces.Discrete(space_upper), 2)(actions)


def test_the_checker_accepts_big_endian_values_in_range():
    from gymnasium import spaces

    for dtype in (">i2", ">i4", ">i8", ">u4", "<i4"):
        actions = np.array([1, 2], dtype)
        assert ActionChecker(spaces.Discrete(3), 2)(actions) is actions


# --- every dtype, byte order and layout, drawn ------------------------------------------------------

INTEGER_DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
FLOAT_DTYPES = [np.float16, np.float32, np.float64, np.longdouble]
DTYPES = [*INTEGER_DTYPES, *FLOAT_DTYPES, np.bool_, np.complex64]
LAYOUTS = ["contiguous", "strided", "fortran", "readonly", "unaligned", "list", "0-d", "ragged list"]
SHAPES = {"box": (ROWS, 3), "multi": (ROWS, 2), "discrete": (ROWS,)}


def values_for(kind, dtype, in_space: bool):
    """Values of ``dtype``: inside the space of ``kind`` when ``in_space`` (and the dtype can hold
    them), else anything near or beyond its bounds, the dtype's extremes, NaN and infinities."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind == "c":
        return st.complex_numbers(max_magnitude=1, allow_nan=False)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if in_space:
            return st.integers(0, 2) if kind != "discrete" else st.integers(0, min(999, int(info.max)))
        near = st.integers(max(int(info.min), -3), min(int(info.max), 1003))
        return near | st.sampled_from([int(info.min), int(info.max)])
    width = min(dtype.itemsize * 8, 64)
    if in_space and kind == "box":
        return st.floats(-1, 1, width=width) | st.sampled_from([-1.0, 1.0, -0.0])
    finite = st.floats(-1.5, 1.5, width=width) | st.integers(-3, 1003).map(float)
    return finite | st.sampled_from([np.nan, np.inf, -np.inf, 2.0**60])


def as_layout(array: np.ndarray, layout: str):
    if layout == "strided":
        return np.repeat(array, 2, axis=0)[::2]
    if layout == "fortran":
        return np.asfortranarray(array) if array.ndim == 2 else array[::-1][::-1]
    if layout == "readonly":
        array = array.copy()
        array.flags.writeable = False
        return array
    if layout == "unaligned":
        raw = np.zeros(array.nbytes + 1, np.uint8)
        unaligned = raw[1:].view(array.dtype).reshape(array.shape)
        unaligned[...] = array
        return unaligned
    if layout == "list":
        return array.tolist()
    if layout == "0-d":
        return array.reshape(-1)[:1].reshape(())
    return [array.tolist(), [1]] if layout == "ragged list" else array


@st.composite
def action_recipes(draw):
    kind = draw(st.sampled_from(sorted(SHAPES)))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    if dtype.itemsize > 1 and draw(st.booleans()):
        dtype = dtype.newbyteorder()
    shape = SHAPES[kind]
    values = values_for(kind, dtype, in_space=draw(st.booleans()))
    flat = draw(st.lists(values, min_size=int(np.prod(shape)), max_size=int(np.prod(shape))))
    with np.errstate(over="ignore"):  # 2**60 as float16 is inf: a value like any other here
        array = np.array(flat, dtype=dtype).reshape(shape)
    layout = draw(st.sampled_from(LAYOUTS[:-2]) | st.sampled_from(LAYOUTS))  # mostly a shape that fits
    return kind, array, layout


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(action_recipes())
def test_every_dtype_byte_order_and_layout_gives_serials_values_or_its_refusal(vectors, recipe):
    kind, array, layout = recipe
    results = results_by_backend(vectors[kind], lambda: as_layout(array, layout))
    assert_same_everywhere(results)
    serial = results["Serial"]
    event(f"{kind}: {'refused' if isinstance(serial, str) else 'accepted'}")
    if not isinstance(serial, str):  # what Serial saw is what numpy reads from the array, as float32
        expected = np.asarray(array, dtype=np.float64).reshape(ROWS, -1).astype(np.float32)
        assert len(serial[2]) == ROWS  # every env's episode ended at the last step: its observation is final
        np.testing.assert_array_equal(serial[2][:, : expected.shape[1]], expected)
