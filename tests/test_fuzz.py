"""Property-based tests: every malformed input is rejected with APIUsageError before any env runs,
and valid inputs are never rejected. Together these draw well over 1,000 examples."""

import numbers

import numpy as np
import pytest
from gymnasium import spaces
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from shoal import _native
from shoal import config as shoal_config
from shoal.backends.registry import backend_options, canonical_name
from shoal.envs import CartPole
from shoal.errors import APIUsageError
from shoal.spaces import ActionChecker
from shoal.vector import make, worker_layout

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CORES = _native.physical_cores()  # what worker_layout compares num_workers with

action_spaces = st.one_of(
    st.integers(1, 9).map(spaces.Discrete),
    st.lists(st.integers(1, 6), min_size=1, max_size=3).map(spaces.MultiDiscrete),
    st.tuples(st.floats(-5, 0), st.floats(0.1, 5), st.integers(1, 3)).map(
        lambda t: spaces.Box(t[0], t[1], (t[2],), np.float32)
    ),
)
dtypes = st.sampled_from(
    [
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint32,
        np.float16,
        np.float32,
        np.float64,
        np.bool_,
        np.complex64,
    ]
)


def is_valid(space, rows, array, box_actions="strict") -> bool:
    expected_shape = (rows, *(() if isinstance(space, spaces.Discrete) else space.shape))
    if array.shape != expected_shape:
        return False
    if isinstance(space, spaces.Box):
        if array.dtype.kind not in "fiu":
            return False
        values = array.astype(np.float64)
        if box_actions == "clip":
            values = np.clip(values, space.low, space.high)
        if box_actions != "strict":
            # any value goes to the env, but one the float32 buffer cannot hold finitely
            return not np.any(np.isfinite(values) & (np.abs(values) > np.finfo(np.float32).max))
        return bool(np.all(values >= space.low) and np.all(values <= space.high))
    if array.dtype.kind not in "iu":
        return False
    upper = space.n if isinstance(space, spaces.Discrete) else space.nvec
    return bool(np.all(array.astype(np.int64) >= 0) and np.all(array.astype(np.float64) < upper))


@st.composite
def action_cases(draw):
    space = draw(action_spaces)
    rows = draw(st.integers(1, 5))
    shape = (rows, *(() if isinstance(space, spaces.Discrete) else space.shape))
    shape = draw(st.one_of(st.just(shape), hnp.array_shapes(min_dims=0, max_dims=3, max_side=6)))
    dtype = draw(dtypes)
    array = draw(hnp.arrays(dtype, shape, elements=None if dtype is not np.bool_ else st.booleans()))
    if draw(st.booleans()) and array.ndim >= 1 and array.shape[0] >= 1:
        array = np.repeat(array, 2, axis=0)[::2]  # non-contiguous view, same values
    return space, rows, array


@FUZZ
@given(action_cases(), st.sampled_from(["pass", "clip", "strict"]))
def test_actions_rejected_iff_invalid(case, box_actions):
    space, rows, array = case
    check = ActionChecker(space, rows, box_actions)
    valid = is_valid(space, rows, array, box_actions)
    if valid and box_actions == "clip" and isinstance(space, spaces.Box):
        np.testing.assert_array_equal(check(array), np.clip(array, space.low.astype(np.float64), space.high))
    elif valid:
        assert check(array) is array
    else:
        with pytest.raises(APIUsageError):
            check(array)


@FUZZ
@given(st.integers(1, 4), st.sampled_from([0, 2]), st.data())
def test_bad_actions_never_reach_a_live_vector(num_envs, threads, data):
    with make(CartPole, backend="Multithreading", num_envs=num_envs, max_num_threads=threads) as vecenv:
        vecenv.reset(1)
        before = vecenv.buf.observations.copy()
        bad = data.draw(
            st.one_of(
                hnp.arrays(np.int32, st.integers(0, 8).filter(lambda n: n != num_envs)),
                hnp.arrays(np.int64, num_envs, elements=st.integers(2, 2**40) | st.integers(-(2**40), -1)),
                hnp.arrays(np.float64, num_envs),
                st.just(np.full(num_envs, np.nan)),
            )
        )
        with pytest.raises(APIUsageError):
            vecenv.send(bad)
        np.testing.assert_array_equal(vecenv.buf.observations, before)


counts = st.one_of(st.integers(-3, 70), st.floats(-2, 70), st.sampled_from([None, "auto", "4", True]))


def layout_is_valid(num_envs, num_workers, batch_size, zero_copy, overwork) -> bool:
    def count(x):
        return isinstance(x, numbers.Integral) and not isinstance(x, bool) and x >= 1

    if not count(num_envs):
        return False
    workers = min(CORES, num_envs) if num_workers in (None, "auto") else num_workers
    batch = num_envs if batch_size in (None, "auto") else batch_size
    if not (count(workers) and count(batch)) or num_envs % workers or batch > num_envs:
        return False
    if batch % (num_envs // workers) or (zero_copy and num_envs % batch):
        return False
    return overwork or workers <= CORES


@FUZZ
@given(st.integers(-2, 70) | st.sampled_from([2.0, "8", None]), counts, counts, st.booleans(), st.booleans())
def test_worker_layout_rejects_iff_invalid(num_envs, num_workers, batch_size, zero_copy, overwork):
    valid = layout_is_valid(num_envs, num_workers, batch_size, zero_copy, overwork)
    if valid:
        layout = worker_layout(num_envs, num_workers, batch_size, zero_copy, overwork)
        assert layout.envs_per_worker * layout.num_workers == num_envs
    else:
        with pytest.raises(APIUsageError):
            worker_layout(num_envs, num_workers, batch_size, zero_copy, overwork)


@FUZZ
@given(
    num_envs=counts,
    seed=st.one_of(st.integers(-5, 2**65), st.sampled_from([None, 1.0, "3"])),
    backend=st.sampled_from(["Serial", "Multithreading", "serial", "Nope", 3]),
    extra=st.dictionaries(
        st.sampled_from(["num_workers", "max_num_threads", "bogus", "batch_size"]), st.integers(-1, 5), max_size=2
    ),
)
def test_make_rejects_before_any_env_is_created(num_envs, seed, backend, extra):
    created = []

    class Counted(CartPole):
        def __init__(self, *args, **kwargs):
            created.append(1)
            super().__init__(*args, **kwargs)

    Counted.__module__ = __name__
    try:
        vecenv = make(Counted, backend=backend, num_envs=num_envs, seed=seed, **extra)
    except APIUsageError:
        assert not created, "an env was built before the arguments were rejected"
        return
    vecenv.close()
    # Accepted: then the arguments were valid.
    assert isinstance(num_envs, int) and not isinstance(num_envs, bool) and num_envs >= 1
    assert isinstance(seed, int) and 0 <= seed < 2**64
    assert str(backend).lower() in ("serial", "multithreading")


VEC_VALUES = st.sampled_from(
    [
        "1",
        "0",
        "-1",
        "auto",
        "true",
        "false",
        "maybe",
        "static",
        "dynamic",
        "Serial",
        "Multithreading",
        "fork",
        "64",
        "x",
        "",
    ]
)


@FUZZ
@given(st.dictionaries(st.sampled_from(sorted(shoal_config.VEC_KEYS) + ["bogus", "threads"]), VEC_VALUES, max_size=5))
def test_config_rejects_iff_a_key_or_value_is_invalid(tmp_path_factory, vec):
    path = tmp_path_factory.mktemp("cfg") / "config.ini"
    path.write_text("[env]\nname = cartpole\n[vec]\n" + "".join(f"{k} = {v}\n" for k, v in vec.items()))
    try:
        backend = canonical_name(vec.get("backend", "Multithreading"))
    except APIUsageError:
        backend = None
    takes = {"num_envs", "seed", *backend_options(backend)} if backend else set()
    bad = ["backend"] if backend is None else []
    for key, text in vec.items():
        if key == "backend":
            continue
        if key not in takes:
            bad.append(key)
            continue
        try:
            shoal_config._option(backend, key).from_text(text)
        except APIUsageError:
            bad.append(key)
    if bad:
        with pytest.raises(shoal_config.ConfigError) as error:
            shoal_config.load(path)
        assert any(key in str(error.value) for key in bad) and str(path) in str(error.value)
    else:
        loaded = shoal_config.load(path)
        assert set(vec) <= set(loaded.vec) <= takes | {"backend"}
