"""Ray backend: parity with Serial (sync and every batching mode), faults, close, connection
ownership, validation, and that Ray stays an optional, lazily imported dependency.

The module starts its own 2-CPU Ray head in a subprocess (so tests can check that a cluster the
backend merely joined survives close()) and connects this process to it. Every test is bounded by
a timeout, and the fixture checks that no Ray process outlives the module.
"""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import gymnasium
import numpy as np
import psutil
import pytest

try:
    import ray
except ModuleNotFoundError:  # the [test] extra has no Ray: each test is collected (the tiers count them), then skipped
    ray = None

pytestmark = pytest.mark.skipif(ray is None, reason="needs ray, in the [full] extra: pip install -e '.[full]'")

from shoal.envs import CartPole  # noqa: E402
from shoal.errors import APIUsageError, EnvError, WorkerError  # noqa: E402
from shoal.seeding import env_seed, restart_seed  # noqa: E402
from shoal.vector import make  # noqa: E402

from envs_for_tests import make_raise_on_init, make_raise_on_step  # noqa: E402
from fault_checks import close_while_recv_waits  # noqa: E402
from rollouts import assert_same, rollout  # noqa: E402

TIME_LIMIT_S = 90
HEAD_START_S = 60
RAY = "Ray"
HERE = os.path.dirname(os.path.abspath(__file__))
# The head runs without token authentication so that this process (and subprocesses) can join it
# by address alone; Ray >= 2.5x enables tokens for instances it starts itself.
HEAD_SCRIPT = textwrap.dedent("""
    import sys
    import ray
    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR")
    print(ray.get_runtime_context().gcs_address, flush=True)
    sys.stdin.read()  # runs until the test closes our stdin
    ray.shutdown()
""")


def make_cartpole():
    return gymnasium.make("CartPole-v1")


@pytest.fixture(scope="module")
def cluster():
    """A 2-CPU Ray head in a subprocess, joined by this process; its address."""
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    head = subprocess.Popen(
        [sys.executable, "-c", HEAD_SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    signal.alarm(HEAD_START_S)
    try:
        address = head.stdout.readline().strip()
        assert address, "the Ray head subprocess did not start"
        ray.init(address=address, logging_level="WARNING")
    finally:
        signal.alarm(0)
    yield address
    tree = psutil.Process(head.pid).children(recursive=True)
    ray.shutdown()
    head.stdin.close()
    try:
        head.wait(30)
    finally:
        if head.poll() is None:
            head.kill()
        head.stdout.close()
        _, alive = psutil.wait_procs(tree, timeout=15)
        for process in alive:
            process.kill()
    assert not alive, f"Ray processes outlived the cluster: {alive}"


@pytest.fixture(autouse=True)
def bounded(time_limit, cluster):
    """Every test here fails instead of hanging (the cluster is up before the clock starts)."""
    time_limit(TIME_LIMIT_S)


def wait_gone(pids, timeout: float = 10.0) -> list:
    processes = []
    for pid in pids:
        try:
            processes.append(psutil.Process(pid))
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(processes, timeout=timeout)
    return alive


def run_script(code: str, *args, timeout: float = 80) -> str:
    """Runs a Python script; on timeout kills it with every process it started (Ray included)."""
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=HERE,
    )
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        tree = psutil.Process(process.pid).children(recursive=True)
        process.kill()
        for child in tree:
            child.kill()
        stdout, stderr = process.communicate()
        pytest.fail(f"script timed out after {timeout} s:\n{stdout}\n{stderr}")
    assert process.returncode == 0, f"script failed:\n{stdout}\n{stderr}"
    return stdout


# ---------------------------------------------------------------------------------------------------
# Parity with Serial
# ---------------------------------------------------------------------------------------------------

STEPS = 1000


@pytest.mark.parametrize("kind", ["gymnasium", "native", "native-2-threads"])
def test_sync_parity_with_serial(kind):
    """1,000 synchronous steps, bit-identical to Serial, across many episode ends."""
    if kind == "gymnasium":
        creator, num_envs, options = make_cartpole, 8, {"num_workers": 2}
    elif kind == "native":
        creator, num_envs, options = CartPole, 64, {"num_workers": 2, "max_num_threads": 1}
    else:  # two pool threads per actor: more CPUs than the cluster has, so overwork shares them
        creator, num_envs, options = CartPole, 64, {"num_workers": 2, "max_num_threads": 2, "overwork": True}
    with make(creator, backend="Serial", num_envs=num_envs, seed=11) as vecenv:
        expected = rollout(vecenv, STEPS, seed=11)
    with make(creator, backend=RAY, num_envs=num_envs, seed=11, **options) as vecenv:
        got = rollout(vecenv, STEPS, seed=11)
    assert_same(expected, got, kind)
    assert sum(len(f) for f in got["final"]) > 10 * num_envs  # many episodes ended and were reset


def test_ocean_env_parity_with_serial(tmp_path, monkeypatch):
    """A PufferLib Ocean env (snake, 16 snakes per env, compiled from the pinned sdist) on Ray actors
    is bit-identical to Serial: the class travels to the actors and the env's rand() stays per env."""
    from shoal import ocean

    monkeypatch.setenv("SHOAL_OCEAN_BUILD_CACHE", str(tmp_path))
    snake = ocean.env_class("snake", num_snakes=16, num_food=64, width=40, height=40)
    with make(snake, backend="Serial", num_envs=4, seed=5) as vecenv:
        expected = rollout(vecenv, 300, seed=5)
    with make(snake, backend=RAY, num_envs=4, seed=5, num_workers=2, max_num_threads=1) as vecenv:
        got = rollout(vecenv, 300, seed=5)
    assert_same(expected, got, "Ocean snake on Ray")
    assert expected["rewards"].any(), "snakes must eat or die within 300 steps"


def test_attributes_shapes_and_dtypes():
    with make(CartPole, backend=RAY, num_envs=8, num_workers=2, batch_size=4, seed=3) as vecenv:
        assert vecenv.num_envs == 8 and vecenv.num_agents == 8 and vecenv.agents_per_batch == 4
        assert vecenv.num_workers == 2 and vecenv.max_num_threads == 1
        assert len(vecenv.worker_pids) == 2 and all(psutil.pid_exists(p) for p in vecenv.worker_pids)
        assert vecenv.single_observation_space.shape == (4,)
        vecenv.async_reset(3)
        obs, rewards, terminals, truncations, infos, ids, masks = vecenv.recv()
        assert obs.shape == (4, 4) and obs.dtype == np.float32
        assert rewards.dtype == np.float32 and terminals.dtype == truncations.dtype == masks.dtype == bool
        assert ids.shape == (4,) and ids[0] % 4 == 0 and list(ids) == list(range(ids[0], ids[0] + 4))
        assert obs.flags.writeable  # caller-owned buffers, not read-only object-store views
        assert vecenv.final_observations.shape == (4, 4)
        vecenv.send(np.zeros(4, dtype=np.int64))  # other integer dtypes are accepted and converted


def test_native_infos_arrive():
    """The aggregated episode log of a native vector travels back from its actor."""
    with make(CartPole, backend=RAY, num_envs=8, num_workers=2, seed=5) as vecenv:
        vecenv.reset()
        infos = []
        for _ in range(200):
            infos += vecenv.step(np.ones(8, dtype=np.int32))[4]
        assert infos and all(isinstance(info, dict) for info in infos)


def env_trajectories(vecenv, steps: int, seed: int) -> list:
    """Each env's records (obs, reward, terminal, truncation, mask, final obs where done), env by env,
    whatever batches the backend returns; env e's k-th action comes from a table, so every backend
    feeds every env the same actions."""
    num_envs = vecenv.num_agents
    table = np.random.default_rng(99).integers(0, 2, size=(num_envs, steps + 1)).astype(np.int32)
    records = [[] for _ in range(num_envs)]
    vecenv.async_reset(seed)
    while min(len(r) for r in records) < steps + 1:
        obs, rewards, terminals, truncations, _, ids, masks = vecenv.recv()
        assert obs.shape[0] == ids.shape[0] == vecenv.agents_per_batch
        final = vecenv.final_observations
        for i, env in enumerate(ids):
            done = terminals[i] | truncations[i]
            records[env].append(
                (obs[i].copy(), rewards[i], terminals[i], truncations[i], masks[i], final[i].copy() if done else None)
            )
        vecenv.send(table[ids, np.minimum([len(records[e]) - 1 for e in ids], steps)])
    vecenv.recv()
    return [r[: steps + 1] for r in records]


BATCH_STEPS = 300
# (num_workers, batch_size, zero_copy, sync_traj); 8 envs.
BATCH_MODES = {
    "one actor per batch": (2, 4, True, False),
    "one actor per batch, sync_traj": (2, 4, True, True),
    "aligned blocks": (4, 4, True, False),
    "first ready, copied": (4, 4, False, False),
    "send order, copied": (4, 4, False, True),
}


@pytest.mark.parametrize("mode", list(BATCH_MODES))
def test_batching_matches_serial_env_by_env(mode):
    num_workers, batch_size, zero_copy, sync_traj = BATCH_MODES[mode]
    with make(make_cartpole, backend="Serial", num_envs=8, seed=21) as vecenv:
        expected = env_trajectories(vecenv, BATCH_STEPS, 21)
    with make(
        make_cartpole,
        backend=RAY,
        num_envs=8,
        seed=21,
        num_workers=num_workers,
        batch_size=batch_size,
        zero_copy=zero_copy,
        sync_traj=sync_traj,
        overwork=True,
    ) as vecenv:
        assert vecenv.agents_per_batch == batch_size
        got = env_trajectories(vecenv, BATCH_STEPS, 21)
    for env, (a, b) in enumerate(zip(expected, got)):
        for t, (ra, rb) in enumerate(zip(a, b)):
            for name, x, y in zip(("obs", "reward", "terminal", "truncation", "mask", "final"), ra, rb):
                np.testing.assert_array_equal(x, y, err_msg=f"{mode}: env {env} step {t}: {name} differ")


def test_zero_copy_blocks_and_sync_traj_order():
    with make(
        make_cartpole, backend=RAY, num_envs=4, num_workers=4, batch_size=2, sync_traj=True, overwork=True
    ) as vecenv:
        vecenv.async_reset(0)
        for expected_first in [0, 2, 0, 2, 0]:
            ids = vecenv.recv()[5]
            assert list(ids) == [expected_first, expected_first + 1]
            vecenv.send(np.zeros(2, dtype=np.int32))


# ---------------------------------------------------------------------------------------------------
# Faults
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("in_flight", [False, True])
def test_killed_actor_raises_worker_error_quickly(in_flight):
    vecenv = make(make_cartpole, backend=RAY, num_envs=4, num_workers=2, seed=1)
    vecenv.reset()
    victim = vecenv.worker_pids[1]
    if in_flight:
        vecenv.send(np.zeros(4, dtype=np.int32))
    os.kill(victim, signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(WorkerError, match="actor 1 .*died.*envs 2..3"):
        if in_flight:
            vecenv.recv()
        else:
            for _ in range(100):  # the death may land after a step that was already done
                vecenv.step(np.zeros(4, dtype=np.int32))
    assert time.monotonic() - start < 10
    assert vecenv.closed
    assert not wait_gone(vecenv.worker_pids)
    vecenv.close()


def test_env_exception_names_worker_env_and_traceback():
    creators = [make_raise_on_step] * 4
    kwargs = [{"step": 100}, {"step": 100}, {"step": 100}, {"step": 5}]
    with make(creators, env_kwargs=kwargs, backend=RAY, num_envs=4, num_workers=2) as vecenv:
        vecenv.reset()
        with pytest.raises(EnvError, match=r"env 3 \(worker 1\) raised RuntimeError") as info:
            for _ in range(10):
                vecenv.step(np.zeros(4, dtype=np.int32))
        assert not isinstance(info.value, WorkerError)
        assert "planned failure on step 5" in str(info.value) and "Traceback" in str(info.value)
        assert "in step" in str(info.value)  # the frame of the env's own code
        with pytest.raises(APIUsageError, match="reset"):
            vecenv.send(np.zeros(4, dtype=np.int32))
        vecenv.reset()  # the vector stays usable
        vecenv.step(np.zeros(4, dtype=np.int32))


def test_every_env_failing_in_one_step_is_reported_by_that_step():
    """As under Multiprocessing (tests/test_workers.py, issue 45): the step raises every actor's failure,
    and the reset after it raises none of them a call late."""
    with make(make_raise_on_step, env_kwargs={"step": 3}, backend=RAY, num_envs=2, num_workers=2) as vecenv:
        vecenv.reset()
        actions = np.zeros(2, dtype=np.int32)
        vecenv.step(actions)
        vecenv.step(actions)
        with pytest.raises(EnvError, match=r"^env 0 \(worker 0\) raised RuntimeError") as info:
            vecenv.step(actions)
        assert "env 1 (worker 1) raised RuntimeError: RaiseOnStep: planned failure on step 3" in str(info.value)
        vecenv.reset()
        vecenv.step(actions)


def test_a_failed_step_in_flight_fails_the_async_reset_that_drains_it():
    """As under Multiprocessing (tests/test_workers.py): a failure is reported, never dropped."""
    with make(
        make_raise_on_step, env_kwargs={"step": 1}, backend=RAY, num_envs=2, num_workers=2, batch_size=1
    ) as vecenv:
        vecenv.async_reset()
        vecenv.recv()
        vecenv.send(np.zeros(1, dtype=np.int32))  # this actor's env fails while the step is in flight
        with pytest.raises(EnvError, match="RaiseOnStep: planned failure on step 1"):
            vecenv.async_reset()
        with pytest.raises(APIUsageError, match="reset"):
            vecenv.recv()
        vecenv.async_reset()
        vecenv.recv()
        vecenv.send(np.zeros(1, dtype=np.int32))
        vecenv.recv()


def test_creation_error_surfaces_at_construction():
    creators = [make_raise_on_step] * 3 + [make_raise_on_init]
    with pytest.raises(EnvError, match=r"worker 1 failed to create envs 2..3.*planned failure in __init__"):
        make(creators, backend=RAY, num_envs=4, num_workers=2)


# ---------------------------------------------------------------------------------------------------
# Close and connection ownership
# ---------------------------------------------------------------------------------------------------


def test_close_kills_actors_and_leaves_the_joined_cluster(cluster):
    vecenv = make(make_cartpole, backend=RAY, num_envs=4, num_workers=2, ray_address=cluster)
    vecenv.reset()
    pids = vecenv.worker_pids
    vecenv.close()
    vecenv.close()  # idempotent
    assert vecenv.closed
    assert not wait_gone(pids)
    assert ray.is_initialized() and ray.cluster_resources().get("CPU") == 2
    with pytest.raises(APIUsageError, match="closed"):
        vecenv.reset()
    with make(make_cartpole, backend=RAY, num_envs=2, num_workers=2) as again:  # the cluster still works
        again.reset()


def test_join_by_address_from_another_process(cluster):
    """A process that joins by ray_address disconnects on close(); the cluster and others survive."""
    out = run_script(
        """
        import sys
        import gymnasium, ray
        from shoal.vector import make
        vecenv = make(lambda: gymnasium.make("CartPole-v1"), backend="Ray", num_envs=4, num_workers=2,
                      ray_address=sys.argv[1])
        assert ray.is_initialized()
        vecenv.reset()
        vecenv.step([0, 1, 0, 1])
        print(*vecenv.worker_pids)
        vecenv.close()
        assert not ray.is_initialized()
    """,
        cluster,
    )
    assert not wait_gone(int(p) for p in out.split())
    assert ray.cluster_resources().get("CPU") == 2


def test_a_cluster_joined_after_shoal_stopped_its_local_instance_runs_actors(cluster):
    """After the local instance shoal started is shut down, joining a cluster without token
    authentication still starts actors: the token mode Ray turned on for the whole process when it
    started that instance is undone (before, the joined cluster cancelled every actor: "The actor
    never ran - it was cancelled before it started running")."""
    out = run_script(
        """
        import os, sys
        os.environ.pop("RAY_AUTH_MODE", None)  # as a process that never set it
        import gymnasium, ray
        from shoal.vector import make
        local = make(lambda: gymnasium.make("CartPole-v1"), backend="Ray", num_envs=2, num_workers=1)
        local.reset()
        local.close()
        assert not ray.is_initialized()
        print("mode after close:", os.environ.get("RAY_AUTH_MODE"))
        joined = make(lambda: gymnasium.make("CartPole-v1"), backend="Ray", num_envs=4, num_workers=2,
                      ray_address=sys.argv[1])
        joined.reset(seed=3)
        joined.step([0, 1, 0, 1])
        joined.close()
        print("joined ok")
    """,
        cluster,
        timeout=120,
    )
    assert "mode after close: None" in out and "joined ok" in out, out


def test_local_instance_is_started_and_shut_down():
    """Without a connection or address the backend starts a local Ray instance, shared by the
    vectors of the process and shut down with the last of them; importing shoal never imports Ray."""
    run_script("""
        import sys
        import gymnasium, psutil
        import shoal, shoal.vector
        from shoal.vector import make
        make(lambda: gymnasium.make("CartPole-v1"), backend="Serial", num_envs=2).close()
        assert "ray" not in sys.modules, "importing shoal imported ray"
        # One actor (one CPU) each: the local instance has this machine's CPUs for both.
        first = make(lambda: gymnasium.make("CartPole-v1"), backend="Ray", num_envs=2, num_workers=1)
        second = make(lambda: gymnasium.make("CartPole-v1"), backend="Ray", num_envs=2, num_workers=1)
        import ray
        tree = psutil.Process().children(recursive=True)
        assert any("raylet" in p.name() for p in tree)
        first.reset()
        first.close()
        assert ray.is_initialized()
        second.reset()  # still served by the shared instance
        second.step([0, 1])
        second.close()
        assert not ray.is_initialized()
        _, alive = psutil.wait_procs(tree, timeout=20)
        assert not alive, alive
    """)


def test_missing_ray_names_the_extra():
    run_script(
        """
        import sys
        sys.modules["ray"] = None  # import ray now fails as if it were not installed
        import gymnasium
        from shoal.errors import APIUsageError
        from shoal.vector import make
        try:
            make(lambda: gymnasium.make("CartPole-v1"), backend="Ray", num_envs=2, num_workers=2)
        except APIUsageError as error:
            assert "pip install 'ray>=2.9'" in str(error) and "'.[ray]'" in str(error), error
        else:
            raise AssertionError("no error without ray")
    """,
        timeout=60,
    )


# ---------------------------------------------------------------------------------------------------
# Validation
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "creator, options, match",
    [
        (make_cartpole, {"num_workers": 3}, r"num_envs \(4\) must be divisible by num_workers \(3\)"),
        (make_cartpole, {"num_workers": 2, "batch_size": 3}, r"batch_size \(3\) must be divisible"),
        (make_cartpole, {"num_workers": 2, "batch_size": 2, "zero_copy": "yes"}, "zero_copy must be True or False"),
        (make_cartpole, {"num_workers": 4}, r"(?s)num_workers \(4\) actors of 1 CPU.*2 of 2 CPUs free.*overwork=True"),
        (make_cartpole, {"num_workers": 2, "max_num_threads": 2}, "max_num_threads .*native envs"),
        (
            CartPole,
            {"num_workers": 2, "max_num_threads": 2},
            r"(?s)\(max_num_threads\).*2 of 2 CPUs free.*overwork=True",
        ),
        (CartPole, {"num_workers": 2, "max_num_threads": -1}, "max_num_threads must be an integer"),
        (make_cartpole, {"num_workers": 2, "ray_address": 6379}, "ray_address must be"),
        (make_cartpole, {"num_workers": 2, "start_method": "fork"}, "invalid argument.*start_method"),
    ],
)
def test_validation_errors(creator, options, match):
    with pytest.raises(APIUsageError, match=match):
        make(creator, backend=RAY, num_envs=4, **options)


def test_call_order_and_bad_actions():
    with make(make_cartpole, backend=RAY, num_envs=2, num_workers=2) as vecenv:
        with pytest.raises(APIUsageError, match="reset"):
            vecenv.send(np.zeros(2, dtype=np.int32))
        vecenv.async_reset(0)
        vecenv.recv()
        with pytest.raises(APIUsageError):
            vecenv.send(np.full(2, 7, dtype=np.int32))  # out of Discrete(2)
        vecenv.send(np.zeros(2, dtype=np.int32))
        with pytest.raises(APIUsageError, match="twice"):
            vecenv.send(np.zeros(2, dtype=np.int32))
        vecenv.recv()


def test_reset_while_steps_in_flight():
    """async_reset drops results still in flight; the next batch comes from the new seed."""
    with make(make_cartpole, backend="Serial", num_envs=4, seed=4) as vecenv:
        expected, _ = vecenv.reset(8)
        expected = expected.copy()
    with make(
        make_cartpole, backend=RAY, num_envs=4, num_workers=4, batch_size=1, overwork=True, sync_traj=False, seed=4
    ) as vecenv:
        vecenv.async_reset(1)
        vecenv.recv()
        vecenv.send(np.zeros(1, dtype=np.int32))
        vecenv.async_reset(8)
        seen = {}
        while len(seen) < 4:
            obs, *_, ids, _ = vecenv.recv()
            seen.setdefault(int(ids[0]), obs[0].copy())
            vecenv.send(np.zeros(1, dtype=np.int32))
        vecenv.recv()
    for env in range(4):
        np.testing.assert_array_equal(seen[env], expected[env])


@pytest.mark.slow
def test_create_step_close_cycles_leak_nothing(cluster, time_limit):
    """80 create/step/close cycles (SHOAL_RAY_CYCLES for more): every actor process gone, the cluster's CPUs free again, and
    no thread, file descriptor or /dev/shm segment left in this process."""
    time_limit(1200)
    process = psutil.Process()

    def resources():
        return process.num_threads(), len(os.listdir("/proc/self/fd")), len(os.listdir("/dev/shm"))

    def cycle():
        with make(CartPole, backend=RAY, num_envs=4, num_workers=2, max_num_threads=1) as vecenv:
            vecenv.reset()
            vecenv.step(np.zeros(4, np.int32))
            return vecenv.worker_pids

    for _ in range(40):  # Ray's client starts a few threads lazily over the first ~30 cycles
        cycle()
    before, rss_before = resources(), process.memory_info().rss
    pids = []
    for _ in range(int(os.environ.get("SHOAL_RAY_CYCLES", 80))):
        pids += cycle()
    assert not wait_gone(pids, timeout=30), "actor processes outlived their vector"
    deadline = time.monotonic() + 10
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ray.available_resources().get("CPU") == 2
    after = resources()
    # Ray's client starts a few internal threads lazily, sometimes late in a long run; a leak per
    # cycle would add about 80 threads or descriptors, so a small constant bound tells them apart.
    threads, fds, shm = (a - b for a, b in zip(after, before))
    assert threads <= 3 and fds <= 3 and shm <= 0, f"threads/fds/shm grew: {before} -> {after}"
    assert process.memory_info().rss - rss_before < 64 * 2**20


# ---------------------------------------------------------------------------------------------------
# Issue 13: interrupts, deadlines and restarts
# ---------------------------------------------------------------------------------------------------


def test_interrupted_recv_refuses_until_reset_then_returns_fresh_steps():
    from envs_for_tests import counting_creators

    n = 4
    slow, fast = np.ones(n, np.int32), np.zeros(n, np.int32)
    with make(counting_creators(n), backend=RAY, num_envs=n, num_workers=2) as vecenv:
        vecenv.reset()
        vecenv.step(fast)
        vecenv.send(slow)
        timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                vecenv.recv()
        finally:
            timer.cancel()
        with pytest.raises(APIUsageError, match=r"interrupted.*reset\(\)"):
            vecenv.step(fast)
        observations, _ = vecenv.reset()
        np.testing.assert_array_equal(observations[:, 0], 0)
        for t in (1, 2):
            np.testing.assert_array_equal(vecenv.step(fast)[0], [[t, i] for i in range(n)])


def test_hung_env_raises_worker_error_within_the_deadline():
    from envs_for_tests import HangOnAction

    vecenv = make(HangOnAction, backend=RAY, num_envs=4, num_workers=2, timeout=1.0)
    pids = vecenv.worker_pids
    vecenv.reset()
    actions = np.array([0, 0, 0, 1], np.int32)
    started = time.monotonic()
    with pytest.raises(WorkerError, match=r"actor 1 .*still busy 1\.\d\d s.*timeout=1 s.*envs 2..3"):
        vecenv.step(actions)
    assert time.monotonic() - started < 1.5
    assert vecenv.closed
    assert not wait_gone(pids)


def test_deadline_is_on_time_when_shoal_started_ray():
    """The failure path does not wait for ray.shutdown() of the instance shoal started (it runs in a
    thread of its own, which a new connection waits for); the message tells the real elapsed time."""
    out = run_script("""
        import time
        import numpy as np, psutil
        import ray
        from shoal.errors import WorkerError
        from shoal.vector import make
        from envs_for_tests import HangOnAction

        vecenv = make(HangOnAction, backend="Ray", num_envs=2, num_workers=1, timeout=1.0)
        tree = psutil.Process().children(recursive=True)
        vecenv.reset()
        started = time.monotonic()
        try:
            vecenv.step(np.ones(2, np.int32))
        except WorkerError as exc:
            elapsed = time.monotonic() - started
            reported = float(str(exc).split("still busy ")[1].split(" s")[0])
        print("elapsed", round(elapsed, 3), "reported", reported)
        again = make(HangOnAction, backend="Ray", num_envs=2, num_workers=1)  # waits for the shutdown
        again.reset()
        again.close()
        assert not ray.is_initialized()
        _, alive = psutil.wait_procs(tree, timeout=20)
        assert not alive, alive
    """)
    words = out.split()
    elapsed, reported = float(words[words.index("elapsed") + 1]), float(words[words.index("reported") + 1])
    assert 1.0 <= elapsed < 1.5, out
    assert abs(reported - elapsed) < 0.1, out


def test_a_forked_child_cannot_drive_the_actors():
    """After os.fork() the child's step is an APIUsageError before anything reaches an actor, and the
    parent's next steps are those of a run never forked."""
    seed = 4
    actions = np.zeros(4, np.int32)
    with make(make_cartpole, backend=RAY, num_envs=4, num_workers=2, seed=seed) as vecenv:
        reference = make(make_cartpole, backend="Serial", num_envs=4, seed=seed)
        np.testing.assert_array_equal(vecenv.reset()[0], reference.reset()[0])
        pid = os.fork()
        if pid == 0:
            code = 3
            try:
                vecenv.step(actions)
            except APIUsageError as exc:
                code = 0 if "is a fork of it" in str(exc) else 2
            except BaseException:
                code = 1
            os._exit(code)  # Ray's own state in a forked child is not safe to tear down
        assert os.waitpid(pid, 0)[1] == 0
        for _ in range(5):
            np.testing.assert_array_equal(vecenv.step(actions)[0], reference.step(actions)[0])
        reference.close()


def test_killed_actor_is_replaced_under_restart():
    seed = 5
    with make(make_cartpole, backend=RAY, num_envs=4, num_workers=2, seed=seed, on_worker_failure="restart") as vecenv:
        vecenv.reset()
        reference = make(make_cartpole, backend="Serial", num_envs=4, seed=seed)
        reference.reset()
        actions = np.zeros(4, np.int32)
        first = vecenv.step(actions)[0].copy()
        np.testing.assert_array_equal(first, reference.step(actions)[0])
        victim = vecenv.worker_pids[0]
        os.kill(victim, signal.SIGKILL)
        observations, rewards, terminals, truncations, infos = vecenv.step(actions)
        expected = reference.step(actions)[0]
        np.testing.assert_array_equal(observations[2:], expected[2:])  # worker 1 stepped on
        for env in (0, 1):
            reset, _ = gymnasium.make("CartPole-v1").reset(seed=env_seed(restart_seed(seed, 1), env))
            np.testing.assert_array_equal(observations[env], reset)
        np.testing.assert_array_equal(truncations, [True, True, False, False])
        restarts = [info["worker_restart"] for info in infos if "worker_restart" in info]
        assert [r["worker"] for r in restarts] == [0] and "died" in restarts[0]["reason"]
        assert vecenv.worker_pids[0] != victim
        vecenv.step(actions)
        reference.close()
    assert not wait_gone([victim])


def test_malformed_step_outputs_are_env_errors_naming_env_and_worker():
    """The same EnvError sentences as Serial and Multiprocessing (tests/test_reliability_faults.py)."""
    from envs_for_tests import bad_output_creators
    from fault_checks import check_bad_output_errors, step_until_bad_outputs

    with make(bad_output_creators(4, bad_env=3), backend=RAY, num_envs=4, num_workers=2) as vecenv:
        said = check_bad_output_errors(step_until_bad_outputs(vecenv), "env 3 (worker 1)")
    with make(bad_output_creators(4, bad_env=3), backend="Serial", num_envs=4) as vecenv:
        assert said == check_bad_output_errors(step_until_bad_outputs(vecenv), "env 3")


def test_close_from_another_thread_while_recv_waits():
    from envs_for_tests import counting_creators

    vecenv = make(counting_creators(4), backend=RAY, num_envs=4, num_workers=2)
    pids = vecenv.worker_pids
    vecenv.reset()
    vecenv.send(np.ones(4, np.int32))  # every actor sleeps
    waiter, raised = close_while_recv_waits(vecenv, 0.3)
    assert not waiter.is_alive()
    assert len(raised) == 1 and type(raised[0]) is APIUsageError, raised
    assert "closed (by another thread) while recv() waited" in str(raised[0])
    assert not wait_gone(pids)


def test_failing_env_close_is_listed_after_every_env_closed(tmp_path):
    from envs_for_tests import close_recorder_creators

    vecenv = make(close_recorder_creators(4, tmp_path, fail=(2,)), backend=RAY, num_envs=4, num_workers=2)
    vecenv.reset()
    with pytest.raises(EnvError, match=r"(?s)env close\(\) call\(s\) failed:\n.*  env 2: RuntimeError: close of env 2"):
        vecenv.close()
    assert {int(name.split("-")[1]) for name in os.listdir(tmp_path)} == {0, 1, 2, 3}
