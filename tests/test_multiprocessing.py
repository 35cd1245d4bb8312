"""Multiprocessing backend: API contract, per-env parity with Serial in every batching mode,
validation, faults (env exceptions, killed workers), shutdown, idle CPU, start methods."""

import faulthandler
import gc
import multiprocessing
import os
import signal
import time

import numpy as np
import psutil
import pytest
from gymnasium import spaces

from shoal import _native, seeding
from shoal.backends.multiprocessing import CLOSE_TIMEOUT_S
from shoal.errors import APIUsageError, EnvError, WorkerError
from shoal.pufferenv import PufferEnv
from shoal.vector import make

from envs_for_tests import (
    make_cartpole,
    make_dict_env,
    make_pz_env,
    make_raise_on_init,
    make_raise_on_reset,
    make_raise_on_step,
)

MP = "Multiprocessing"
CORES = _native.physical_cores()  # what the layout compares num_workers with
# Workers asked to close get CLOSE_TIMEOUT_S before they are killed, so a limit below it tells a
# clean exit from a kill at the timeout (with room for a loaded machine).
CLEAN_EXIT_S = 0.75 * CLOSE_TIMEOUT_S
TIME_LIMIT_S = 60


@pytest.fixture(autouse=True)
def bounded(time_limit):
    """Every test here fails instead of hanging."""
    time_limit(TIME_LIMIT_S)


# ---------------------------------------------------------------------------------------------------
# Native test envs (PufferEnv subclasses)
# ---------------------------------------------------------------------------------------------------


class WalkEnv(PufferEnv):
    """``num_agents`` random walkers with one seeded generator per env object.

    Each agent ends its episode by termination (|x| > 2.5) or by truncation (``max_steps``), and is
    reset in the same step (final observation kept). Masks flicker from the generator; an info is
    returned every fourth step. Actions are Discrete(3) or Box(-1, 1, (2,)).
    """

    def __init__(self, num_agents: int = 1, max_steps: int = 9, action: str = "discrete", buf=None, seed=0):
        self.single_observation_space = spaces.Box(-np.inf, np.inf, (3,), dtype=np.float32)
        if action == "discrete":
            self.single_action_space = spaces.Discrete(3)
        else:
            self.single_action_space = spaces.Box(-1.0, 1.0, (2,), dtype=np.float32)
        self.num_agents = num_agents
        self.max_steps = max_steps
        super().__init__(buf, seed)

    def reset(self, seed=None):
        seed = self.seed if seed is None else seed
        self.rng = np.random.default_rng(seeding.env_seed(seed, 0))
        self.t = np.zeros(self.num_agents, dtype=np.int64)
        self.calls = 0
        self.observations[:] = self.rng.normal(size=(self.num_agents, 3))
        self.rewards[:] = 0
        self.terminals[:] = False
        self.truncations[:] = False
        self.masks[:] = True
        return self.observations, []

    def step(self, actions):
        n = self.num_agents
        self.calls += 1
        push = np.asarray(actions, dtype=np.float32).reshape(n, -1).sum(axis=1) - 1.0
        self.t += 1
        x = self.observations
        x += (self.rng.normal(size=(n, 3)) * 0.5).astype(np.float32) + 0.1 * push[:, None]
        self.rewards[:] = -np.abs(x).sum(axis=1)
        self.terminals[:] = np.abs(x).max(axis=1) > 2.5
        self.truncations[:] = (self.t >= self.max_steps) & ~self.terminals
        self.masks[:] = self.rng.random(n) > 0.2
        done = self.terminals | self.truncations
        if done.any():
            self.final_observations[done] = x[done]
            x[done] = self.rng.normal(size=(int(done.sum()), 3))
            self.t[done] = 0
        infos = [{"calls": self.calls}] if self.calls % 4 == 0 else []
        return self.observations, self.rewards, self.terminals, self.truncations, infos


class FailingWalkEnv(WalkEnv):
    """WalkEnv that raises ValueError on its ``fail_at``-th step() call (counted since reset)."""

    def __init__(self, fail_at: int = 10**9, buf=None, seed=0):
        self.fail_at = fail_at
        super().__init__(buf=buf, seed=seed)

    def step(self, actions):
        if self.calls + 1 == self.fail_at:
            raise ValueError(f"planned failure at call {self.fail_at}")
        return super().step(actions)


class BigInfoWalkEnv(WalkEnv):
    """WalkEnv whose infos are large every third step (past the shared mailbox, through the pipe)
    and, with ``unpicklable=True``, hold a lambda on step 5."""

    def __init__(self, unpicklable: bool = False, buf=None, seed=0):
        self.unpicklable = unpicklable
        super().__init__(buf=buf, seed=seed)

    def step(self, actions):
        result = super().step(actions)
        infos = [{"blob": bytes(100_000), "calls": self.calls}] if self.calls % 3 == 0 else []
        if self.unpicklable and self.calls == 5:
            infos = [{"bad": lambda: None}]
        return (*result[:4], infos)


def make_walk(**kwargs):
    return WalkEnv(**kwargs)


# ---------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------


def helper_pids():
    """Long-lived multiprocessing helpers (not workers): the resource tracker and the fork server."""
    pids = set()
    from multiprocessing import forkserver, resource_tracker

    tracker_pid = getattr(resource_tracker._resource_tracker, "_pid", None)
    server_pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    pids.update(p for p in (tracker_pid, server_pid) if p)
    return pids


def worker_children():
    helpers = helper_pids()
    return [p for p in psutil.Process().children(recursive=True) if p.pid not in helpers]


def wait_no_workers(timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [p for p in worker_children() if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        zombies = [p for p in worker_children() if p.status() == psutil.STATUS_ZOMBIE]
        if not alive and not zombies:
            return
        time.sleep(0.02)
    raise AssertionError(f"processes left behind: {[(p.pid, p.status()) for p in worker_children()]}")


@pytest.fixture(autouse=True)
def no_leaks():
    before = {p.pid for p in worker_children()}
    assert not before, f"a previous test left processes: {before}"
    yield
    gc.collect()
    wait_no_workers()


def action_table(space, num_envs: int, agents: int, steps: int) -> list:
    """actions[env][t]: a deterministic function of (env id, that env's step count)."""
    out = []
    for env in range(num_envs):
        rng = np.random.default_rng(1000 + env)
        if isinstance(space, spaces.Discrete):
            out.append(rng.integers(0, space.n, size=(steps, agents)).astype(np.int32))
        elif isinstance(space, spaces.MultiDiscrete):
            out.append((rng.random((steps, agents, *space.shape)) * space.nvec).astype(np.int32))
        else:
            out.append(rng.uniform(space.low, space.high, (steps, agents, *space.shape)).astype(np.float32))
    return out


def per_env_rollout(vecenv, steps: int, seed: int = 7) -> list:
    """Every env's trajectory, env by env, whatever batches the backend returns.

    Each record is what one recv() said about one env: observation rows, rewards, terminals,
    truncations, masks and final observations where done. The env's next action is
    ``table[env][number of actions it received so far]``.
    """
    agents = vecenv.driver_env.num_agents
    num_envs = vecenv.num_agents // agents
    table = action_table(vecenv.single_action_space, num_envs, agents, steps + 1)
    records = [[] for _ in range(num_envs)]
    vecenv.async_reset(seed)
    while min(len(r) for r in records) < steps + 1:
        obs, rewards, terminals, truncations, infos, ids, masks = vecenv.recv()
        assert obs.shape[0] == vecenv.agents_per_batch == ids.shape[0]
        final = vecenv.final_observations
        envs = ids[::agents] // agents
        actions = []
        for i, env in enumerate(envs):
            rows = slice(i * agents, (i + 1) * agents)
            np.testing.assert_array_equal(ids[rows], np.arange(env * agents, (env + 1) * agents))
            done = terminals[rows] | truncations[rows]
            records[env].append(
                (
                    obs[rows].copy(),
                    rewards[rows].copy(),
                    terminals[rows].copy(),
                    truncations[rows].copy(),
                    masks[rows].copy(),
                    final[rows][done].copy(),
                )
            )
            actions.append(table[env][min(len(records[env]) - 1, steps)])
        vecenv.send(np.concatenate(actions))
    vecenv.recv()
    return [r[: steps + 1] for r in records]


def assert_same_trajectories(expected: list, got: list, label: str) -> None:
    names = ("observations", "rewards", "terminals", "truncations", "masks", "final observations")
    assert len(expected) == len(got)
    for env, (a, b) in enumerate(zip(expected, got)):
        for t, (ra, rb) in enumerate(zip(a, b)):
            for name, x, y in zip(names, ra, rb):
                np.testing.assert_array_equal(x, y, err_msg=f"{label}: env {env} step {t}: {name} differ")


STEPS = 1000
ENV_KINDS = {
    # name: (creator, env_kwargs, num_envs)
    "walk": (make_walk, {}, 4),
    "walk-box-3agents": (make_walk, {"num_agents": 3, "action": "box", "max_steps": 13}, 4),
    "cartpole": (make_cartpole, {}, 4),
    "dict": (make_dict_env, {}, 4),
    "pettingzoo": (make_pz_env, {}, 4),
}
# (num_workers, batch_size, zero_copy, sync_traj); batch_size in envs.
MODES = {
    "1 worker": (1, 4, True, True),
    "2 workers sync": (2, 4, True, True),
    "2 workers one-per-batch": (2, 2, True, False),
    "2 workers one-per-batch sync_traj": (2, 2, True, True),
    "2 workers one-per-batch copy": (2, 2, False, False),
    "4 workers zero-copy blocks": (4, 2, True, False),
    "4 workers zero-copy blocks sync_traj": (4, 2, True, True),
    "4 workers async copy": (4, 2, False, False),
    "4 workers async copy sync_traj": (4, 2, False, True),
}
_serial_cache = {}


def serial_reference(kind: str) -> list:
    if kind not in _serial_cache:
        creator, kwargs, num_envs = ENV_KINDS[kind]
        with make(creator, env_kwargs=kwargs, backend="Serial", num_envs=num_envs) as vecenv:
            _serial_cache[kind] = per_env_rollout(vecenv, STEPS)
    return _serial_cache[kind]


# ---------------------------------------------------------------------------------------------------
# API contract
# ---------------------------------------------------------------------------------------------------


def test_attributes_and_shapes():
    with make(
        make_walk,
        env_kwargs={"num_agents": 3},
        backend=MP,
        num_envs=8,
        num_workers=2,
        overwork=True,
        batch_size=4,
        seed=3,
    ) as vecenv:
        assert vecenv.num_envs == 8
        assert vecenv.num_workers == 2
        assert vecenv.batch_size == 4
        assert vecenv.num_agents == 24
        assert vecenv.agents_per_batch == 12
        assert vecenv.start_method == ("fork" if os.name == "posix" and os.uname().sysname == "Linux" else "spawn")
        assert vecenv.single_observation_space == spaces.Box(-np.inf, np.inf, (3,), dtype=np.float32)
        assert vecenv.single_action_space == spaces.Discrete(3)
        assert vecenv.observation_space.shape == (12, 3)
        assert vecenv.action_space.shape == (12,)
        assert vecenv.emulated is None
        assert isinstance(vecenv.driver_env, WalkEnv)
        assert len(vecenv.worker_pids) == 2
        vecenv.async_reset()
        seen = set()
        for _ in range(6):
            obs, rewards, terminals, truncations, infos, ids, masks = vecenv.recv()
            assert obs.shape == (12, 3) and obs.dtype == np.float32
            assert rewards.shape == (12,) and rewards.dtype == np.float32
            for array in (terminals, truncations, masks):
                assert array.shape == (12,) and array.dtype == np.bool_
            assert isinstance(infos, list)
            assert ids.shape == (12,) and ids.dtype == np.int64
            assert ids[0] in (0, 12)
            np.testing.assert_array_equal(ids, np.arange(ids[0], ids[0] + 12))
            seen.add(int(ids[0]))
            vecenv.send(np.ones(12, dtype=np.int32))
        assert seen == {0, 12}
        vecenv.recv()
        obs, infos = vecenv.reset(seed=5)
        assert obs.shape == (12, 3)
        obs, rewards, terminals, truncations, infos = vecenv.step(np.zeros(12, dtype=np.int64))
        assert obs.shape == (12, 3)


def test_infos_arrive():
    with make(make_walk, backend=MP, num_envs=4, num_workers=2, overwork=True) as vecenv:
        vecenv.reset()
        collected = []
        for _ in range(8):
            collected.extend(vecenv.step(np.zeros(4, dtype=np.int32))[4])
        # Every env reports {"calls": c} on calls 4 and 8.
        assert sorted(info["calls"] for info in collected) == [4] * 4 + [8] * 4


def test_large_and_unpicklable_infos():
    with make(BigInfoWalkEnv, backend=MP, num_envs=4, num_workers=2, overwork=True) as vecenv:
        vecenv.reset()
        for t in range(1, 10):
            infos = vecenv.step(np.zeros(4, dtype=np.int32))[4]
            expected = 4 if t % 3 == 0 else 0
            assert len(infos) == expected and all(len(i["blob"]) == 100_000 for i in infos)
    with make(
        BigInfoWalkEnv, env_kwargs={"unpicklable": True}, backend=MP, num_envs=2, num_workers=2, overwork=True
    ) as vecenv:
        vecenv.reset()
        with pytest.raises(EnvError, match="could not send infos"):
            for _ in range(6):
                vecenv.step(np.zeros(2, dtype=np.int32))


def test_gymnasium_attributes():
    with (
        make(make_dict_env, backend=MP, num_envs=4, num_workers=2, overwork=True) as vecenv,
        make(make_dict_env, backend="Serial", num_envs=4) as serial,
    ):
        assert vecenv.single_observation_space == serial.single_observation_space
        assert vecenv.emulated == serial.emulated
        assert vecenv.num_agents == 4


# ---------------------------------------------------------------------------------------------------
# Parity with Serial
# ---------------------------------------------------------------------------------------------------


def parity_cases():
    """Every batching mode on the plain env and every env kind on one mode stay in the fast tier; the
    rest of the kind x mode sweep is integration."""
    for kind in ENV_KINDS:
        for mode in MODES:
            fast = kind == "walk" or mode == "4 workers async copy sync_traj"
            yield pytest.param(kind, mode, id=f"{kind}-{mode}", marks=() if fast else pytest.mark.integration)


@pytest.mark.parametrize(("kind", "mode"), list(parity_cases()))
def test_parity_with_serial(kind, mode):
    creator, kwargs, num_envs = ENV_KINDS[kind]
    num_workers, batch_size, zero_copy, sync_traj = MODES[mode]
    expected = serial_reference(kind)
    # Episodes must end inside the comparison, by termination and by truncation somewhere.
    assert any(r[2].any() for traj in expected for r in traj), "no termination in the reference"
    with make(
        creator,
        env_kwargs=kwargs,
        backend=MP,
        num_envs=num_envs,
        num_workers=num_workers,
        batch_size=batch_size,
        zero_copy=zero_copy,
        sync_traj=sync_traj,
        overwork=True,
    ) as vecenv:
        got = per_env_rollout(vecenv, STEPS)
    assert_same_trajectories(expected, got, f"{kind} / {mode}")


def test_parity_internal_envs_and_per_env_kwargs():
    """Per-env kwargs reach the right worker, and seeds do not depend on the worker count."""
    kwargs = [{"max_steps": 5 + i} for i in range(6)]
    creators = [make_walk] * 6
    with make(creators, env_kwargs=kwargs, backend="Serial", num_envs=6) as serial:
        expected = per_env_rollout(serial, 200)
    for workers in (1, 2, 3):
        with make(creators, env_kwargs=kwargs, backend=MP, num_envs=6, num_workers=workers, overwork=True) as vecenv:
            assert_same_trajectories(expected, per_env_rollout(vecenv, 200), f"{workers} workers")


def test_sync_traj_returns_workers_in_send_order():
    with make(make_walk, backend=MP, num_envs=4, num_workers=4, batch_size=1, sync_traj=True, overwork=True) as vecenv:
        vecenv.async_reset()
        order = []
        for _ in range(12):
            ids = vecenv.recv()[5]
            order.append(int(ids[0]))
            vecenv.send(np.zeros(1, dtype=np.int32))
        vecenv.recv()
        assert order == [0, 1, 2, 3] * 3


def test_reset_while_steps_in_flight():
    """async_reset in an async mode: in-flight steps are drained, then everything restarts."""
    with make(make_walk, backend="Serial", num_envs=4) as serial:
        expected = per_env_rollout(serial, 50)
    with make(make_walk, backend=MP, num_envs=4, num_workers=2, overwork=True, batch_size=2, sync_traj=False) as vecenv:
        vecenv.async_reset(7)
        for _ in range(5):
            vecenv.recv()
            vecenv.send(np.zeros(2, dtype=np.int32))
        assert_same_trajectories(expected, per_env_rollout(vecenv, 50), "after a reset with steps in flight")


# ---------------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, match",
    [
        ({"num_envs": 6, "num_workers": 4, "overwork": True}, r"num_envs \(6\) must be divisible by num_workers \(4\)"),
        ({"num_envs": 8, "num_workers": 2, "batch_size": 2}, r"batch_size \(2\) must be divisible"),
        ({"num_envs": 6, "num_workers": 3, "batch_size": 3, "overwork": True}, r"batch_size \(3\) must be divisible"),
        ({"num_envs": 6, "num_workers": 6, "batch_size": 4, "overwork": True}, r"zero_copy=True needs num_envs \(6\)"),
        ({"num_envs": CORES + 1, "num_workers": CORES + 1}, rf"num_workers \({CORES + 1}\) > physical cores"),
        ({"num_envs": 4, "num_workers": 2, "bogus": 1}, r"invalid argument.*bogus"),
        ({"num_envs": 4, "num_workers": 2, "overwork": True, "start_method": "thread"}, r"start_method must be one of"),
        ({"num_envs": 4, "num_workers": 2, "overwork": True, "zero_copy": "yes"}, r"zero_copy must be True or False"),
        ({"num_envs": 4, "num_workers": 2, "overwork": True, "sync_traj": 1}, r"sync_traj must be True or False"),
        ({"num_envs": 4, "num_workers": 0}, r"num_workers must be an integer >= 1"),
    ],
)
def test_validation_before_any_process(options, match):
    calls = []

    def creator(buf=None):
        calls.append(1)
        return WalkEnv(buf=buf)

    with pytest.raises(APIUsageError, match=match):
        make(creator, backend=MP, **options)
    assert worker_children() == []
    assert calls == [], "envs were built before validation finished"


def test_zero_copy_false_allows_uneven_batches():
    with make(make_walk, backend=MP, num_envs=6, num_workers=6, batch_size=4, zero_copy=False, overwork=True) as vecenv:
        vecenv.async_reset()
        obs = vecenv.recv()[0]
        assert obs.shape == (4, 3)


def test_call_order_errors():
    with make(make_walk, backend=MP, num_envs=4, num_workers=2, overwork=True) as vecenv:
        with pytest.raises(APIUsageError, match="before send"):
            vecenv.send(np.zeros(4, dtype=np.int32))
        with pytest.raises(APIUsageError, match="before recv"):
            vecenv.recv()
        vecenv.async_reset()
        vecenv.recv()
        with pytest.raises(APIUsageError, match="recv\\(\\) called twice"):
            vecenv.recv()
        vecenv.send(np.zeros(4, dtype=np.int32))
        with pytest.raises(APIUsageError, match="send\\(\\) called twice"):
            vecenv.send(np.zeros(4, dtype=np.int32))
        vecenv.recv()


@pytest.mark.parametrize("batch_size", [4, 2])
def test_bad_actions_on_a_later_send(batch_size):
    with make(make_walk, backend=MP, num_envs=4, num_workers=2, overwork=True, batch_size=batch_size) as vecenv:
        vecenv.async_reset()
        n = vecenv.agents_per_batch
        for _ in range(20):
            vecenv.recv()
            vecenv.send(np.ones(n, dtype=np.int32))
        vecenv.recv()
        with pytest.raises(APIUsageError, match="shape"):
            vecenv.send(np.ones(n + 1, dtype=np.int32))
        with pytest.raises(APIUsageError, match="integers"):
            vecenv.send(np.ones(n, dtype=np.float32))
        with pytest.raises(APIUsageError, match="out of range"):
            vecenv.send(np.full(n, 3, dtype=np.int32))
        with pytest.raises(APIUsageError, match="out of range"):
            vecenv.send(np.full(n, -1, dtype=np.int64))
        vecenv.send(np.ones(n, dtype=np.int32))  # still usable
        vecenv.recv()


def test_bad_box_actions_under_strict():
    with make(
        make_walk,
        env_kwargs={"action": "box"},
        backend=MP,
        num_envs=2,
        num_workers=2,
        overwork=True,
        box_actions="strict",
    ) as vecenv:
        vecenv.reset()
        vecenv.step(np.zeros((2, 2), dtype=np.float32))
        with pytest.raises(APIUsageError, match="action 2.0 at row 0, dimension 0 is outside"):
            vecenv.send(np.full((2, 2), 2.0, dtype=np.float32))
        with pytest.raises(APIUsageError, match="action nan at row 0, dimension 0 is outside"):
            vecenv.send(np.full((2, 2), np.nan, dtype=np.float32))
        vecenv.step(np.zeros((2, 2), dtype=np.float32))


# ---------------------------------------------------------------------------------------------------
# Faults
# ---------------------------------------------------------------------------------------------------


def test_env_exception_names_worker_and_env():
    creators = [make_raise_on_step] * 8
    kwargs = [{"step": 3 if i == 5 else 10**9} for i in range(8)]
    with make(creators, env_kwargs=kwargs, backend=MP, num_envs=8, num_workers=2, overwork=True) as vecenv:
        vecenv.reset()
        vecenv.step(np.zeros(8, dtype=np.int32))
        vecenv.step(np.zeros(8, dtype=np.int32))
        with pytest.raises(EnvError) as info:
            vecenv.step(np.zeros(8, dtype=np.int32))
        assert not isinstance(info.value, WorkerError)
        message = str(info.value)
        assert "env 5 (worker 1)" in message
        assert "RuntimeError: RaiseOnStep: planned failure on step 3" in message
        assert "Traceback (most recent call last)" in message and "in step" in message
        # The vector needs a reset, then works again (RaiseOnStep fails only once).
        with pytest.raises(APIUsageError, match="before send"):
            vecenv.send(np.zeros(8, dtype=np.int32))
        vecenv.reset()
        for _ in range(5):
            vecenv.step(np.zeros(8, dtype=np.int32))


def test_native_env_exception_in_async_mode():
    creators = [FailingWalkEnv] * 4
    kwargs = [{"fail_at": 6 if i == 2 else 10**9} for i in range(4)]
    with make(
        creators, env_kwargs=kwargs, backend=MP, num_envs=4, num_workers=2, overwork=True, batch_size=2, sync_traj=False
    ) as vecenv:
        vecenv.async_reset()
        # "First ready" batching promises no fairness over a few rounds (on 2 cores worker 0 and the
        # caller can ping-pong while worker 1 waits for a CPU), so step until worker 1 got there.
        with pytest.raises(EnvError, match=r"env 2 \(worker 1\) raised ValueError: planned failure at call 6"):
            for _ in range(5000):
                vecenv.recv()
                vecenv.send(np.zeros(2, dtype=np.int32))


def test_reset_exception():
    with make(make_raise_on_reset, backend=MP, num_envs=2, num_workers=2, overwork=True) as vecenv:
        with pytest.raises(EnvError, match=r"env ([01]) \(worker \1\) raised RuntimeError: RaiseOnReset"):
            vecenv.reset()


def test_creation_error_surfaces_at_construction():
    creators = [make_cartpole] * 3 + [make_raise_on_init]
    with pytest.raises(EnvError, match=r"worker 1 failed to create envs 2..3: RuntimeError: RaiseOnInit") as info:
        make(creators, backend=MP, num_envs=4, num_workers=2, overwork=True)
    assert "Traceback" in str(info.value)


def test_killed_worker_raises_within_two_seconds():
    vecenv = make(make_walk, backend=MP, num_envs=4, num_workers=2, overwork=True)
    vecenv.reset()
    vecenv.send(np.zeros(4, dtype=np.int32))
    vecenv.recv()
    os.kill(vecenv.worker_pids[1], signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(WorkerError, match=r"worker 1 .*SIGKILL"):
        vecenv.step(np.zeros(4, dtype=np.int32))
    assert time.monotonic() - start < CLEAN_EXIT_S
    assert vecenv.closed
    with pytest.raises(APIUsageError, match="closed"):
        vecenv.reset()
    vecenv.close()


def test_worker_killed_mid_step():
    vecenv = make(make_walk, backend=MP, num_envs=4, num_workers=2, overwork=True, batch_size=2, sync_traj=False)
    vecenv.async_reset()
    vecenv.recv()
    vecenv.send(np.zeros(2, dtype=np.int32))
    for pid in vecenv.worker_pids:
        os.kill(pid, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(WorkerError):
        for _ in range(3):
            vecenv.recv()
            vecenv.send(np.zeros(2, dtype=np.int32))
    assert time.monotonic() - start < CLEAN_EXIT_S
    vecenv.close()


def test_segfault_in_worker():
    def creator(buf=None):
        env = WalkEnv(buf=buf)
        if multiprocessing.parent_process() is not None:
            original = env.step

            def crash(actions):
                if env.calls == 3:
                    faulthandler.disable()  # pytest's handler would print this worker's stack
                    os.kill(os.getpid(), signal.SIGSEGV)
                return original(actions)

            env.step = crash
        return env

    with make(creator, backend=MP, num_envs=2, num_workers=2, overwork=True) as vecenv:
        vecenv.reset()
        with pytest.raises(WorkerError, match="SIGSEGV"):
            for _ in range(6):
                vecenv.step(np.zeros(2, dtype=np.int32))


# ---------------------------------------------------------------------------------------------------
# Shutdown
# ---------------------------------------------------------------------------------------------------


def test_close_twice_and_context_manager():
    vecenv = make(make_walk, backend=MP, num_envs=4, num_workers=2, overwork=True)
    pids = vecenv.worker_pids
    vecenv.reset()
    vecenv.close()
    vecenv.close()
    assert vecenv.closed
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE for pid in pids)


def test_close_with_step_in_flight():
    vecenv = make(make_walk, backend=MP, num_envs=4, num_workers=2, overwork=True, batch_size=2)
    vecenv.async_reset()
    vecenv.recv()
    vecenv.send(np.zeros(2, dtype=np.int32))
    start = time.monotonic()
    vecenv.close()
    assert time.monotonic() - start < CLEAN_EXIT_S
    assert worker_children() == []


def test_garbage_collection_stops_workers():
    vecenv = make(make_walk, backend=MP, num_envs=4, num_workers=2, overwork=True)
    vecenv.reset()
    pids = vecenv.worker_pids
    del vecenv
    gc.collect()
    wait_no_workers()
    assert not any(psutil.pid_exists(pid) for pid in pids)


def test_orphaned_workers_exit(tmp_path):
    """A caller killed without closing: its workers notice and exit on their own."""
    import subprocess
    import sys

    script = tmp_path / "orphan.py"
    script.write_text(
        "import os, sys, time\n"
        "import numpy as np\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "from envs_for_tests import make_cartpole\n"
        "from shoal.vector import make\n"
        "v = make(make_cartpole, backend='Multiprocessing', num_envs=2, num_workers=2, overwork=True)\n"
        "v.reset()\n"
        "print(*v.worker_pids, flush=True)\n"
        "os.kill(os.getpid(), 9)\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=30)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2, out.stderr
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(psutil.pid_exists(p) for p in pids):
        time.sleep(0.05)
    assert not any(psutil.pid_exists(p) for p in pids)


# ---------------------------------------------------------------------------------------------------
# Idle CPU
# ---------------------------------------------------------------------------------------------------


def idle_cpu_seconds(vecenv, seconds=1.0) -> float:
    workers = [psutil.Process(pid) for pid in vecenv.worker_pids]

    def used():
        return sum(p.cpu_times().user + p.cpu_times().system for p in workers)

    before = used()
    time.sleep(seconds)
    return used() - before


@pytest.mark.parametrize("batch_size", [4, 2])
def test_idle_workers_use_no_cpu(batch_size):
    with make(make_cartpole, backend=MP, num_envs=4, num_workers=2, overwork=True, batch_size=batch_size) as vecenv:
        vecenv.async_reset()
        n = vecenv.agents_per_batch
        for _ in range(200):
            vecenv.recv()
            vecenv.send(np.zeros(n, dtype=np.int32))
        vecenv.recv()
        time.sleep(0.05)  # let the workers still in flight (async batch) finish their step
        used = idle_cpu_seconds(vecenv)
        assert used <= 0.02, f"idle workers used {used:.3f} s of CPU in 1 s"


# ---------------------------------------------------------------------------------------------------
# Start methods
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method",
    [
        # spawn starts a fresh interpreter per worker: integration
        pytest.param(m, marks=pytest.mark.integration if m == "spawn" else ())
        for m in ("fork", "spawn", "forkserver")
        if m in multiprocessing.get_all_start_methods()
    ],
)
def test_start_methods_with_lambda_creator(method):
    max_steps = 6
    creator = lambda buf=None: WalkEnv(num_agents=2, max_steps=max_steps, buf=buf)  # noqa: E731  (a closure on purpose)
    with make(creator, backend="Serial", num_envs=4) as serial:
        expected = per_env_rollout(serial, 30)
    with make(
        creator, backend=MP, num_envs=4, num_workers=2, overwork=True, batch_size=2, start_method=method
    ) as vecenv:
        assert vecenv.start_method == method
        assert_same_trajectories(expected, per_env_rollout(vecenv, 30), method)
    with make(
        lambda: make_dict_env(max_episode_steps=7),
        backend=MP,
        num_envs=2,
        num_workers=2,
        overwork=True,
        start_method=method,
    ) as vecenv:
        obs, _ = vecenv.reset()
        assert obs.shape[0] == 2


def test_unpicklable_creator_for_spawn():
    import threading

    lock = threading.Lock()

    def creator(buf=None):
        with lock:
            return WalkEnv(buf=buf)

    with pytest.raises(APIUsageError, match="cloudpickle"):
        make(creator, backend=MP, num_envs=2, num_workers=2, overwork=True, start_method="spawn")
