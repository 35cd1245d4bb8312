"""The Ray backend on a simulated cluster (``ray.cluster_utils.Cluster``: a head of 2 CPUs and two
nodes of 1 and 3 CPUs, each its own raylet on this machine): parity with Serial across nodes,
placement modes, threads per node, uneven nodes and a second vector that fail at once or fit, and
node loss (graceful removal, a raylet SIGKILLed, a node frozen with SIGSTOP) under each failure policy.

One cluster serves the module; a test that breaks a node replaces it with a fresh one of the same
CPUs. Ray runs with a temporary HOME and RAY_TMPDIR, and the fixture checks that no Ray process
outlives the module.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import gymnasium
import numpy as np
import psutil
import pytest

try:
    import ray
    from ray.cluster_utils import Cluster
except ModuleNotFoundError:  # the [test] extra has no Ray: each test is collected (the tiers count them), then skipped
    ray = None

pytestmark = pytest.mark.skipif(ray is None, reason="needs ray, in the [full] extra: pip install -e '.[full]'")

from shoal.envs import CartPole  # noqa: E402
from shoal.errors import APIUsageError, WorkerError  # noqa: E402
from shoal.vector import make  # noqa: E402

from rollouts import assert_same, rollout  # noqa: E402

START_LIMIT_S = 150
TIME_LIMIT_S = 90
FAIL_AT_ONCE_S = 10.0  # an unplaceable vector fails in this (the creation limit is 20 s or more)
NODE_CPUS = (1, 3)  # the two worker nodes; the head has 2
RAY = "Ray"


def make_cartpole():
    return gymnasium.make("CartPole-v1")


class DyingEnv(gymnasium.Env):
    """Kills its own process on the first step: every replacement dies too (a crash loop)."""

    observation_space = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def reset(self, seed=None, options=None):
        return np.zeros(2, np.float32), {}

    def step(self, action):
        os._exit(3)


def make_dying_env():
    return DyingEnv()


class SimulatedCluster:
    """A Ray Cluster with helpers to break its worker nodes and put fresh ones in their place."""

    def __init__(self):
        self.cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False})
        self.cpus = {}
        for cpus in NODE_CPUS:
            self._add(cpus)
        self.cluster.wait_for_nodes()
        self.head_id = self.cluster.head_node.node_id

    def _add(self, cpus: int):
        node = self.cluster.add_node(num_cpus=cpus)
        self.cpus[node.node_id] = (node, cpus)
        return node

    def node(self, node_id: str):
        return self.cpus[node_id][0]

    def processes(self, node_id: str) -> list:
        """The node's raylet and every process under it (its workers, the actors)."""
        raylet = psutil.Process(self.node(node_id).all_processes["raylet"][0].process.pid)
        return [raylet, *raylet.children(recursive=True)]

    def kill_raylet(self, node_id: str) -> None:
        os.kill(self.node(node_id).all_processes["raylet"][0].process.pid, signal.SIGKILL)

    def freeze(self, node_id: str) -> list:
        frozen = self.processes(node_id)
        for process in frozen:
            process.send_signal(signal.SIGSTOP)
        return frozen

    def renew(self, node_id: str, frozen=()) -> None:
        """Removes a broken node (thawing what was frozen first) and adds a fresh one of its CPUs."""
        node, cpus = self.cpus.pop(node_id)
        for process in frozen:
            try:
                process.send_signal(signal.SIGCONT)
            except psutil.NoSuchProcess:
                pass
        self.cluster.remove_node(node, allow_graceful=False)
        self._add(cpus)
        self.cluster.wait_for_nodes()

    def shutdown(self) -> list:
        tree = []
        for node, _ in self.cpus.values():
            tree += psutil.Process(node.all_processes["raylet"][0].process.pid).children(recursive=True)
        self.cluster.shutdown()
        _, alive = psutil.wait_procs(tree, timeout=15)
        for process in alive:
            process.kill()
        return alive


@pytest.fixture(scope="module")
def sim():
    saved = {key: os.environ.get(key) for key in ("HOME", "RAY_TMPDIR")}
    home, tmp = tempfile.mkdtemp(prefix="home"), tempfile.mkdtemp(prefix="ray")
    os.environ.update(HOME=home, RAY_TMPDIR=tmp)
    signal.alarm(START_LIMIT_S)
    try:
        cluster = SimulatedCluster()
        ray.init(address=cluster.cluster.address, logging_level="WARNING")
    finally:
        signal.alarm(0)
    try:
        yield cluster
    finally:
        ray.shutdown()
        alive = cluster.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)
    assert not alive, f"Ray processes outlived the cluster: {alive}"


@pytest.fixture(autouse=True)
def bounded(time_limit, sim):
    """Every test here fails instead of hanging (the cluster is up before the clock starts)."""
    time_limit(TIME_LIMIT_S)


def nodes_of(vecenv) -> list[str]:
    return [node.node_id for node in vecenv.worker_nodes]


def free_cpus() -> float:
    return ray.available_resources().get("CPU", 0.0)


def all_cpus_free(within: float = 10.0) -> bool:
    """Whether every CPU of the cluster shows as free within ``within`` s (killed actors and removed
    placement groups take a moment to show)."""
    deadline = time.monotonic() + within
    while free_cpus() != 6:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


# ---------------------------------------------------------------------------------------------------
# Parity and placement
# ---------------------------------------------------------------------------------------------------


def test_native_parity_across_nodes_with_threads_per_node(sim):
    """Three actors spread over three nodes of 2, 1 and 3 CPUs: each sizes its pool from its node."""
    kwargs = {"num_envs": 9, "seed": 3}
    vecenv = make(CartPole, backend=RAY, num_workers=3, **kwargs)
    try:
        nodes = nodes_of(vecenv)
        assert len(set(nodes)) == 3, vecenv.worker_nodes
        threads = {node: t for node, t in zip(nodes, vecenv.worker_threads)}
        assert threads == {node: cpus for node, (_, cpus) in sim.cpus.items()} | {sim.head_id: 2}
        got = rollout(vecenv, 150, seed=3)
    finally:
        vecenv.close()
    serial = make(CartPole, backend="Serial", **kwargs)
    try:
        assert_same(got, rollout(serial, 150, seed=3), "Ray across nodes vs Serial")
    finally:
        serial.close()
    assert all_cpus_free(), free_cpus()  # the placement group went with the vector


def test_gymnasium_parity_across_nodes_and_nodes_in_errors(sim):
    kwargs = {"num_envs": 6, "seed": 5}
    vecenv = make(make_cartpole, backend=RAY, num_workers=3, placement="strict_spread", **kwargs)
    try:
        assert len(set(nodes_of(vecenv))) == 3
        for node in vecenv.worker_nodes:
            assert node.address, vecenv.worker_nodes
        assert vecenv.worker_nodes[1].node_id[:12] in vecenv._origin(1)
        from shoal.cli import describe_vecenv  # here: actors import this module to unpickle its creators

        report = describe_vecenv(vecenv)["worker_nodes"]  # shoal run's report
        assert all(node.node_id[:12] in report for node in vecenv.worker_nodes), report
        got = rollout(vecenv, 100, seed=5)
    finally:
        vecenv.close()
    serial = make(make_cartpole, backend="Serial", **kwargs)
    try:
        assert_same(got, rollout(serial, 100, seed=5), "Ray across nodes vs Serial")
    finally:
        serial.close()


def test_pack_puts_actors_on_one_node(sim):
    vecenv = make(make_cartpole, backend=RAY, num_envs=2, num_workers=2, placement="pack")
    try:
        assert len(set(nodes_of(vecenv))) == 1, vecenv.worker_nodes
    finally:
        vecenv.close()


def test_driver_node_excluded_on_request(sim):
    vecenv = make(make_cartpole, backend=RAY, num_envs=3, num_workers=3, exclude_driver_node=True)
    try:
        assert sim.head_id not in nodes_of(vecenv), vecenv.worker_nodes
        # the 1-CPU node holds one actor, the 3-CPU node two
        assert sorted(nodes_of(vecenv).count(n) for n in sim.cpus) == [1, 2]
    finally:
        vecenv.close()


def test_strict_spread_beyond_the_nodes_fails_at_once_with_the_node_table(sim):
    start = time.monotonic()
    with pytest.raises(APIUsageError, match="one actor per node") as info:
        make(make_cartpole, backend=RAY, num_envs=4, num_workers=4, placement="strict_spread")
    assert time.monotonic() - start < FAIL_AT_ONCE_S
    message = str(info.value)
    for node_id, (_, cpus) in sim.cpus.items():
        assert f"node {node_id[:12]}" in message and f"{cpus} of {cpus} CPUs free" in message, message
    assert all_cpus_free(), free_cpus()


def test_uneven_nodes_fail_at_once_or_fit_with_threads_per_node(sim):
    """Nodes of 1 and 3 free CPUs (the driver's excluded): two 2-thread actors cannot fit, and say so
    at once; with threads sized per node (the default) they fit, as 1 and 3 threads."""
    options = {"num_envs": 6, "num_workers": 2, "exclude_driver_node": True}
    start = time.monotonic()
    with pytest.raises(APIUsageError, match="do not fit the free CPUs") as info:
        make(CartPole, backend=RAY, max_num_threads=2, **options)
    assert time.monotonic() - start < FAIL_AT_ONCE_S
    assert "1 of 1 CPUs free" in str(info.value) and "3 of 3 CPUs free" in str(info.value), info.value
    vecenv = make(CartPole, backend=RAY, **options)
    try:
        assert sorted(vecenv.worker_threads) == [1, 3]
        vecenv.reset()
        vecenv.step(np.zeros(vecenv.num_agents, dtype=np.int32))
    finally:
        vecenv.close()


def test_a_second_vector_fits_beside_a_first_and_a_third_fails_at_once(sim):
    first = make(make_cartpole, backend=RAY, num_envs=4, num_workers=4)
    try:
        second = make(make_cartpole, backend=RAY, num_envs=2, num_workers=2)
        try:
            assert free_cpus() == 0
            start = time.monotonic()
            with pytest.raises(APIUsageError, match="do not fit the free CPUs") as info:
                make(make_cartpole, backend=RAY, num_envs=1, num_workers=1)
            assert time.monotonic() - start < FAIL_AT_ONCE_S
            assert str(info.value).count("0 of ") == 3, info.value
        finally:
            second.close()
    finally:
        first.close()


def test_actor_options_pass_through(sim):
    with pytest.raises(APIUsageError, match="may not set"):
        make(make_cartpole, backend=RAY, num_envs=1, num_workers=1, ray_actor_options={"num_cpus": 2})
    with pytest.raises(APIUsageError, match="no node of the Ray cluster has the resource"):
        make(
            make_cartpole,
            backend=RAY,
            num_envs=1,
            num_workers=1,
            ray_actor_options={"resources": {"no_such_resource": 1}},
        )
    assert all_cpus_free(), free_cpus()


# ---------------------------------------------------------------------------------------------------
# Node loss
# ---------------------------------------------------------------------------------------------------


def victim_of(sim, vecenv) -> tuple[int, str]:
    """A worker on a node other than the head's (the driver's) and that node."""
    for w, node_id in enumerate(nodes_of(vecenv)):
        if node_id != sim.head_id:
            return w, node_id
    pytest.fail(f"every actor is on the head node: {vecenv.worker_nodes}")


def step_through(vecenv, steps: int) -> list:
    """Steps ``steps`` times; the infos of every step."""
    seen = []
    for _ in range(steps):
        *_, infos = vecenv.step(np.zeros(vecenv.num_agents, dtype=np.int64))
        seen.append(infos)
    return seen


def restarts_within(vecenv, seconds: float, then: int = 20) -> list[dict]:
    """Steps until an env's infos report a replacement (or ``seconds`` pass), then ``then`` steps
    more; every worker_restart entry seen."""
    found, deadline = [], time.monotonic() + seconds
    while not found and time.monotonic() < deadline:
        found += [i for i in step_through(vecenv, 1)[0] if "worker_restart" in i]
    for infos in step_through(vecenv, then):
        found += [i for i in infos if "worker_restart" in i]
    return found


# The file's integration run keeps one case of each policy to stay within a few minutes on a 2-core
# machine; the other cases are in the slow tier (and bench/cluster_node_loss.py loops them 10 times).
@pytest.mark.parametrize("fault", [pytest.param("SIGKILL", marks=pytest.mark.slow), "SIGSTOP"])
def test_restart_lands_away_from_the_lost_node_and_the_rollout_completes(sim, fault):
    vecenv = make(make_cartpole, backend=RAY, num_envs=3, num_workers=3, on_worker_failure="restart")
    frozen = []
    try:
        vecenv.reset(seed=1)
        step_through(vecenv, 3)
        w, lost = victim_of(sim, vecenv)
        if fault == "SIGKILL":
            sim.kill_raylet(lost)
        else:
            frozen = sim.freeze(lost)
        infos = restarts_within(vecenv, 30)
        assert [i["worker_restart"]["worker"] for i in infos] == [w], infos
        assert vecenv.worker_nodes[w].node_id != lost, vecenv.worker_nodes
        assert len(set(nodes_of(vecenv))) == 2  # the two survivors
    finally:
        vecenv.close()
        sim.renew(lost, frozen)


@pytest.mark.parametrize("fault", ["SIGKILL", pytest.param("SIGSTOP", marks=pytest.mark.slow)])
def test_elastic_keeps_stepping_with_the_lost_rows_masked(sim, fault):
    """The healthy actors step on while the lost one's replacement starts on a survivor; its rows are
    masked out and said lost in infos until it rejoins, reset, as a restart's."""
    vecenv = make(make_cartpole, backend=RAY, num_envs=3, num_workers=3, on_worker_failure="elastic")
    frozen = []
    try:
        vecenv.reset(seed=1)
        step_through(vecenv, 3)
        w, lost = victim_of(sim, vecenv)
        if fault == "SIGKILL":
            sim.kill_raylet(lost)
        else:
            frozen = sim.freeze(lost)
        others = [v for v in range(3) if v != w]
        masked, slowest, rejoined = 0, 0.0, []
        deadline = time.monotonic() + 60
        while not rejoined and time.monotonic() < deadline:
            start = time.monotonic()
            (infos,) = step_through(vecenv, 1)
            took = time.monotonic() - start
            rejoined = [i for i in infos if "worker_restart" in i]
            if any("worker_lost" in i for i in infos):
                assert not vecenv.buf.masks[w] and vecenv.buf.masks[others].all()
                if masked:  # the step that noticed the loss waited for it; those after it may not
                    slowest = max(slowest, took)
                masked += 1
        assert [i["worker_restart"]["worker"] for i in rejoined] == [w], rejoined
        assert masked >= 2 and slowest < 1.0, (masked, slowest)
        assert vecenv.worker_nodes[w].node_id != lost
        for _ in step_through(vecenv, 5):
            assert vecenv.buf.masks.all()
    finally:
        vecenv.close()
        sim.renew(lost, frozen)


def test_frozen_node_raises_within_seconds_by_default(sim):
    """No timeout given: the liveness check notices a frozen node (Ray's own takes about a minute)."""
    vecenv = make(make_cartpole, backend=RAY, num_envs=3, num_workers=3)
    vecenv.reset(seed=1)
    step_through(vecenv, 3)
    w, lost = victim_of(sim, vecenv)
    frozen = sim.freeze(lost)
    try:
        start = time.monotonic()
        with pytest.raises(WorkerError, match="liveness check") as info:
            step_through(vecenv, 5)
        assert time.monotonic() - start < 15
        assert lost[:12] in str(info.value)
    finally:
        vecenv.close()
        sim.renew(lost, frozen)


@pytest.mark.slow
def test_graceful_node_removal_raises_naming_the_node(sim):
    vecenv = make(make_cartpole, backend=RAY, num_envs=3, num_workers=3)
    vecenv.reset(seed=1)
    step_through(vecenv, 3)
    w, lost = victim_of(sim, vecenv)
    node, cpus = sim.cpus.pop(lost)
    sim.cluster.remove_node(node, allow_graceful=True)
    sim._add(cpus)
    try:
        with pytest.raises(WorkerError) as info:
            step_through(vecenv, 5)
        assert f"Ray actor {w}" in str(info.value) and lost[:12] in str(info.value), info.value
    finally:
        vecenv.close()
        sim.cluster.wait_for_nodes()


def test_crash_loop_ends_in_a_worker_error_and_each_node_is_tried_before_one_is_reused(sim):
    """An env that kills its actor on every step: the replacements go to each node in turn (a failed
    node is reused only once no other has room, and only because it answers a probe), and the restart
    budget ends the loop with a WorkerError."""
    vecenv = make(make_dying_env, backend=RAY, num_envs=1, num_workers=1, on_worker_failure="restart", max_restarts=4)
    vecenv.reset(seed=1)
    start = time.monotonic()
    with pytest.raises(WorkerError, match="not replaced|no healthy node") as info:
        step_through(vecenv, 20)
    assert time.monotonic() - start < 60, info.value
    failures = sorted((t, node) for node, times in vecenv._history.failures.items() for t in times)
    assert len({node for _, node in failures[:3]}) == 3, failures
    assert len(failures) >= 4, failures


# ---------------------------------------------------------------------------------------------------
# A local instance
# ---------------------------------------------------------------------------------------------------

LOCAL_SCRIPT = """
import functools, os
import gymnasium
from shoal.vector import make
vecenv = make(functools.partial(gymnasium.make, "CartPole-v1"), backend="Ray", num_envs=2, num_workers=1)
vecenv.reset()
vecenv.close()
print(sorted(os.path.relpath(os.path.join(root, f), os.environ["HOME"]) for root, _, fs in os.walk(os.environ["HOME"]) for f in fs))
print(os.environ.get("RAY_AUTH_TOKEN"), os.environ.get("RAY_AUTH_MODE"))
"""


def test_a_local_instance_leaves_nothing_in_home(sim, tmp_path):
    """Ray writes ~/.ray/auth_token for a local instance unless given a token; shoal gives it one."""
    home, tmp = tmp_path / "home", tempfile.mkdtemp(prefix="ray")
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env.update(HOME=str(home), RAY_TMPDIR=tmp)
    try:
        done = subprocess.run([sys.executable, "-c", LOCAL_SCRIPT], env=env, capture_output=True, text=True, timeout=80)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    files, auth = done.stdout.strip().splitlines()[-2:]
    assert files == "[]", files
    assert auth == "None None", auth
