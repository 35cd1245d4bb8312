"""The vector API contract (PufferLib 3.0 compatible): make(), registry, attributes, call order,
action validation on every send, closing."""

import numpy as np
import pytest
from gymnasium import spaces

import shoal
from shoal.envs import CartPole, Grid
from shoal.errors import APIUsageError
from shoal.vector import make, register_backend, resolve_backend, worker_layout

CORES = shoal._native.physical_cores()  # what worker_layout compares num_workers with

SYNC_BACKENDS = [("Serial", {}), ("Multithreading", {"max_num_threads": 2})]


@pytest.fixture(params=SYNC_BACKENDS, ids=[b for b, _ in SYNC_BACKENDS])
def vecenv(request):
    backend, options = request.param
    env = make(Grid, backend=backend, num_envs=3, seed=5, **options)
    yield env
    env.close()


def test_attributes_and_return_tuples(vecenv):
    assert vecenv.num_envs == 3
    assert vecenv.num_agents == vecenv.agents_per_batch == 12  # 4 agents per grid env
    assert vecenv.single_observation_space == spaces.Box(0, 4, (5, 5), np.uint8)
    assert vecenv.single_action_space == spaces.Discrete(5)
    assert vecenv.observation_space.shape == (12, 5, 5)
    assert vecenv.action_space.shape == (12,)
    assert vecenv.driver_env.single_action_space == vecenv.single_action_space
    assert vecenv.emulated is None
    obs, infos = vecenv.reset()
    assert obs.shape == (12, 5, 5) and obs.dtype == np.uint8 and isinstance(infos, list)
    out = vecenv.step(np.zeros(12, dtype=np.int32))
    assert len(out) == 5
    vecenv.send(np.zeros(12, dtype=np.int32))
    obs, rewards, terminals, truncations, infos, agent_ids, masks = vecenv.recv()
    assert rewards.dtype == np.float32 and rewards.shape == (12,)
    assert terminals.dtype == truncations.dtype == masks.dtype == np.bool_
    np.testing.assert_array_equal(agent_ids, np.arange(12))


def test_recv_returns_views_of_preallocated_buffers(vecenv):
    obs, _ = vecenv.reset()
    vecenv.send(np.ones(12, dtype=np.int32))
    obs2 = vecenv.recv()[0]
    assert np.shares_memory(obs, obs2)


def test_call_order_is_enforced(vecenv):
    actions = np.zeros(12, dtype=np.int32)
    with pytest.raises(APIUsageError, match="before send"):
        vecenv.send(actions)
    with pytest.raises(APIUsageError, match="before recv"):
        vecenv.recv()
    vecenv.async_reset(1)
    with pytest.raises(APIUsageError, match="send\\(\\) called twice|recv\\(\\) to collect"):
        vecenv.send(actions)
    vecenv.recv()
    with pytest.raises(APIUsageError, match="recv\\(\\) called twice"):
        vecenv.recv()


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.zeros(11, dtype=np.int32), "shape"),
        (np.zeros((12, 1), dtype=np.int32), "shape"),
        (np.zeros(12, dtype=np.float32), "integers"),
        (np.full(12, 5, dtype=np.int32), "out of range"),
        (np.full(12, -1, dtype=np.int64), "out of range"),
        (np.full(12, 2**40, dtype=np.int64), "out of range"),
        ("left", "numpy array|shape"),
    ],
)
def test_bad_actions_rejected_on_a_later_send(vecenv, bad, match):
    vecenv.reset()
    for _ in range(3):
        vecenv.step(np.zeros(12, dtype=np.int32))
    before = vecenv.buf.observations.copy()
    with pytest.raises(APIUsageError, match=match):
        vecenv.send(bad)
    # Nothing was touched: the vector can go on.
    np.testing.assert_array_equal(vecenv.buf.observations, before)
    vecenv.step(np.zeros(12, dtype=np.int32))


def test_int64_and_list_actions_are_accepted(vecenv):
    """Other integer dtypes and lists step exactly as the equivalent int32 array does."""

    def trajectory(first, second):
        vecenv.reset()
        return [vecenv.step(first)[0].copy(), vecenv.step(second)[0].copy()]

    expected = trajectory(np.arange(12, dtype=np.int32) % 5, np.zeros(12, dtype=np.int32))
    got = trajectory(np.arange(12, dtype=np.int64) % 5, [0] * 12)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    assert not np.array_equal(expected[0], trajectory(np.zeros(12, dtype=np.int32), [0] * 12)[0]), (
        "the actions must matter for this comparison to mean anything"
    )


def test_box_actions_pass_by_default_and_strict_rejects_nan_and_out_of_bounds():
    from shoal.spaces import ActionChecker

    strict = ActionChecker(spaces.Box(-1, 1, (2,), np.float32), 3, box_actions="strict")
    passing = ActionChecker(spaces.Box(-1, 1, (2,), np.float32), 3)
    strict(np.zeros((3, 2)))
    for bad in (np.full((3, 2), np.nan), np.full((3, 2), 1.5), np.full((3, 2), -np.inf)):
        with pytest.raises(APIUsageError, match=r"at row 0, dimension 0 is outside \[-1, 1\]"):
            strict(bad)
        np.testing.assert_array_equal(passing(bad), bad)  # Gymnasium's and PufferLib's way: as given
    for check in (strict, passing):
        with pytest.raises(APIUsageError, match="floats"):
            check(np.zeros((3, 2), dtype=np.complex64))


def test_multidiscrete_ranges_checked_per_dimension():
    from shoal.spaces import ActionChecker

    check = ActionChecker(spaces.MultiDiscrete([2, 5]), 2)
    check(np.array([[1, 4], [0, 0]]))
    with pytest.raises(APIUsageError, match="out of range"):
        check(np.array([[2, 0], [0, 0]]))


def test_close_is_idempotent_and_blocks_use(vecenv):
    vecenv.reset()
    vecenv.close()
    vecenv.close()
    with pytest.raises(APIUsageError, match="closed"):
        vecenv.reset()


def test_context_manager_closes():
    with make(CartPole, backend="Serial", num_envs=2) as vecenv:
        vecenv.reset()
    assert vecenv.closed


def test_unknown_kwargs_name_the_valid_ones():
    with pytest.raises(APIUsageError, match=r"\['num_worker'\].*valid.*num_workers"):
        make(CartPole, backend="Serial", num_envs=2, num_worker=2)
    with pytest.raises(APIUsageError, match="max_num_threads"):
        make(CartPole, backend="Multithreading", num_envs=2, max_threads=2)


@pytest.mark.parametrize("num_envs", [0, -1, 2.5, "4", True])
def test_num_envs_validated(num_envs):
    with pytest.raises(APIUsageError, match="num_envs"):
        make(CartPole, backend="Serial", num_envs=num_envs)


@pytest.mark.parametrize("seed", [-1, 1.5, "7", None, 2**64])
def test_seed_validated(seed):
    with pytest.raises(APIUsageError, match="seed"):
        make(CartPole, backend="Serial", num_envs=2, seed=seed)


def test_backend_by_class_or_name():
    assert resolve_backend("serial") is shoal.vector.Serial
    assert resolve_backend("Multithreading") is shoal.vector.Multithreading
    assert resolve_backend(shoal.vector.Serial) is shoal.vector.Serial
    with pytest.raises(APIUsageError, match="valid backends.*Multiprocessing"):
        resolve_backend("Threads")

    class Custom(shoal.vector.Serial):
        pass

    with pytest.raises(APIUsageError, match="not registered"):
        make(CartPole, backend=Custom, num_envs=2)
    register_backend(Custom)
    with make(CartPole, backend="Custom", num_envs=2) as vecenv:
        assert type(vecenv) is Custom


def test_pufferenv_backend_needs_one_env_object():
    env = make(CartPole, env_kwargs={"num_envs": 16}, seed=3)
    assert isinstance(env, shoal.PufferEnv) and env.num_agents == 16 and env.seed == 3
    env.close()
    with pytest.raises(APIUsageError, match="num_envs must be 1"):
        make(CartPole, num_envs=4)
    with pytest.raises(APIUsageError, match="returns a shoal PufferEnv"):
        make(lambda: object())


def test_per_env_creator_lists_are_checked():
    with pytest.raises(APIUsageError, match="3 env creators for num_envs=2"):
        make([CartPole] * 3, backend="Serial", num_envs=2)
    with pytest.raises(APIUsageError, match="env_kwargs must be a list of 2 dicts"):
        make([CartPole] * 2, env_kwargs=[{}], backend="Serial", num_envs=2)
    with pytest.raises(APIUsageError, match="not callable"):
        make([CartPole, 3], backend="Serial", num_envs=2)
    with pytest.raises(APIUsageError, match="env_kwargs must be a dict"):
        make(CartPole, env_kwargs=[{}], backend="Serial", num_envs=2)


def test_mismatched_spaces_across_envs_are_rejected():
    from shoal.envs import Squared

    with pytest.raises(APIUsageError, match="env 1 (has single_observation_space|does not fit)"):
        make([CartPole, Squared], backend="Serial", num_envs=2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(num_envs=6, num_workers=4), r"num_envs \(6\) must be divisible by num_workers \(4\)"),
        (
            dict(num_envs=8, num_workers=2, batch_size=6),
            r"batch_size \(6\) must be divisible by num_envs / num_workers \(8 / 2 = 4\)",
        ),
        (dict(num_envs=12, num_workers=2, batch_size=12 // 2 * 1, zero_copy=True, overwork=True), None),
        (dict(num_envs=24, num_workers=2, batch_size=36), r"batch_size \(36\) must be <= num_envs \(24\)"),
        (
            dict(num_envs=36, num_workers=3, batch_size=24, zero_copy=True, overwork=True),
            r"zero_copy=True needs num_envs \(36\) divisible by batch_size \(24\)",
        ),
        (dict(num_envs=CORES + 1, num_workers=CORES + 1), rf"num_workers \({CORES + 1}\) > physical cores"),
        (dict(num_envs=4, num_workers=0), "num_workers must be an integer >= 1"),
    ],
)
def test_worker_layout_rules(kwargs, match):
    if match is None:
        layout = worker_layout(**kwargs)
        assert layout.envs_per_worker == 6 and layout.workers_per_batch == 1
    else:
        with pytest.raises(APIUsageError, match=match):
            worker_layout(**kwargs)


def test_overwork_allows_more_workers_than_cores():
    assert worker_layout(64, num_workers=64, overwork=True).num_workers == 64


def test_version_has_one_source():
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert shoal.__version__ == pyproject["project"]["version"]
