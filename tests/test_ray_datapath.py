"""The Ray backend's data path (caller_side/ray_data_path.py, wire/shared_rows.py): steps through
compiled graphs in full sync and plain calls otherwise or where Ray cannot compile, actors on the
caller's node stepping in the caller's rows and the others' rows copied back, all bit-identical to
Serial; a replaced actor gets a graph of its own; the caller's rows are mapped only by an actor that
proves it maps them.

One simulated cluster (``ray.cluster_utils.Cluster``: a 2-CPU head, which runs this process, and a
3-CPU node, so a replacement has room away from the node it failed on) serves the module, with a temporary HOME and RAY_TMPDIR; no Ray process outlives it.
"""

import os
import shutil
import signal
import tempfile

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

from shoal.backends.wire.shared_rows import RowsSpec, attach, shared_rows  # noqa: E402
from shoal.vector import make  # noqa: E402

from rollouts import assert_same, rollout  # noqa: E402

START_LIMIT_S = 150
TIME_LIMIT_S = 90
RAY = "Ray"
OBS = gymnasium.spaces.Box(-1.0, 1.0, (3,), np.float32)
ACT = gymnasium.spaces.Discrete(2)


def make_cartpole():
    return gymnasium.make("CartPole-v1")


@pytest.fixture(scope="module")
def cluster():
    """A 2-CPU head (this process's node) and one 3-CPU node, joined by this process."""
    home = tempfile.mkdtemp(prefix="shoal-dp-")
    saved = {k: os.environ.get(k) for k in ("HOME", "RAY_TMPDIR", "RAY_AUTH_MODE")}
    os.environ.update(HOME=home, RAY_TMPDIR=home, RAY_AUTH_MODE="disabled")
    signal.alarm(START_LIMIT_S)
    try:
        sim = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "include_dashboard": False})
        sim.add_node(num_cpus=3)
        sim.wait_for_nodes()
        ray.init(address=sim.address, logging_level="WARNING")
    finally:
        signal.alarm(0)
    tree = psutil.Process().children(recursive=True)
    try:
        yield sim
    finally:
        ray.shutdown()
        sim.shutdown()
        tree += [p for p in psutil.Process().children(recursive=True) if p not in tree]
        _, alive = psutil.wait_procs(tree, timeout=15)
        for process in alive:
            process.kill()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(home, ignore_errors=True)
    assert not alive, f"Ray processes outlived the cluster: {alive}"


@pytest.fixture(autouse=True)
def bounded(time_limit, cluster):
    time_limit(TIME_LIMIT_S)


def serial_rollout(steps: int, num_envs: int = 4, seed: int = 3) -> dict:
    with make(make_cartpole, backend="Serial", num_envs=num_envs, seed=seed) as vecenv:
        return rollout(vecenv, steps)


def expected_paths(vecenv, way: str) -> list[str]:
    """What worker_paths must say: shared rows exactly for the actors on this process's node."""
    here = ray.get_runtime_context().get_node_id()
    return [f"{way}, {'shared rows' if n.node_id == here else 'rows copied'}" for n in vecenv.worker_nodes]


def test_full_sync_steps_through_graphs_on_both_nodes_identical_to_serial():
    with make(make_cartpole, backend=RAY, num_envs=4, num_workers=4, seed=3, compiled_graphs=True) as vecenv:
        got = rollout(vecenv, 120)  # CartPole's episodes end within it: autoreset, final observations
        paths = vecenv.worker_paths
        assert paths == expected_paths(vecenv, "graph")
        assert any("shared" in p for p in paths) and any("copied" in p for p in paths), paths
    assert_same(got, serial_rollout(120), "Ray (graphs) vs Serial")


def test_plain_calls_where_ray_cannot_compile_identical_to_serial(monkeypatch):
    from ray.dag import DAGNode

    def refuse(self, *args, **kwargs):
        raise RuntimeError("no compiled graphs here")

    monkeypatch.setattr(DAGNode, "experimental_compile", refuse)
    with make(make_cartpole, backend=RAY, num_envs=4, num_workers=4, seed=3, compiled_graphs=True) as vecenv:
        got = rollout(vecenv, 60)
        assert vecenv.worker_paths == expected_paths(vecenv, "calls")
    assert_same(got, serial_rollout(60), "Ray (calls after a refused compile) vs Serial")


@pytest.mark.parametrize(
    "options",
    [{}, {"batch_size": 2, "zero_copy": False, "compiled_graphs": True}, {"batch_size": 2, "compiled_graphs": True}],
    ids=["graphs-off-by-default", "copied-batches", "zero-copy-blocks"],
)
def test_calls_without_graphs_or_in_async_modes_identical_to_serial(options):
    with make(make_cartpole, backend=RAY, num_envs=4, num_workers=4, seed=3, **options) as vecenv:
        got = env_streams(vecenv, 80)
        assert vecenv.worker_paths == expected_paths(vecenv, "calls")
    with make(make_cartpole, backend="Serial", num_envs=4, seed=3) as serial:
        reference = env_streams(serial, 80)
    assert sorted(got) == [0, 1, 2, 3]
    for env, stream in got.items():
        assert len(stream) >= 10, f"env {env} stepped {len(stream)} times in 80 batches"
        for k, row in enumerate(stream):
            for value, expected, name in zip(row, reference[env][k], NAMES):
                np.testing.assert_array_equal(value, expected, err_msg=f"env {env}, its step {k}: {name}")


NAMES = ("observation", "reward", "terminal", "truncation")


def env_streams(vecenv, batches: int) -> dict:
    """Each env's (observation, reward, terminal, truncation) after each of its steps, whichever batches
    it came in; an env's k-th action is (k + env) % 2, so its stream does not depend on the order of batches."""
    vecenv.async_reset(3)
    streams: dict = {}
    for _ in range(batches):
        obs, rewards, terminals, truncations, _, ids, _ = vecenv.recv()
        actions = []
        for row, env in enumerate(int(i) for i in ids):
            stream = streams.setdefault(env, [])
            stream.append((obs[row].copy(), rewards[row], terminals[row], truncations[row]))
            actions.append((len(stream) + env) % 2)
        vecenv.send(np.array(actions, np.int32))
    return streams


def test_a_replaced_actor_gets_a_graph_of_its_own_and_the_others_step_on():
    with make(
        make_cartpole, backend=RAY, num_envs=4, num_workers=4, seed=3, on_worker_failure="restart", compiled_graphs=True
    ) as vecenv:
        with make(make_cartpole, backend="Serial", num_envs=4, seed=3) as reference:
            vecenv.reset()
            reference.reset()
            actions = np.zeros(4, np.int32)
            for _ in range(3):
                np.testing.assert_array_equal(vecenv.step(actions)[0], reference.step(actions)[0])
            here = ray.get_runtime_context().get_node_id()
            victim = next(w for w, node in enumerate(vecenv.worker_nodes) if node.node_id == here)
            assert vecenv.worker_paths[victim] == "graph, shared rows"
            os.kill(vecenv.worker_pids[victim], signal.SIGKILL)
            observations, _, _, truncations, infos = vecenv.step(actions)
            expected = reference.step(actions)[0]
            others = [w for w in range(4) if w != victim]
            np.testing.assert_array_equal(observations[others], expected[others])
            assert truncations[victim] and [i["worker_restart"]["worker"] for i in infos if "worker_restart" in i] == [
                victim
            ]
            for _ in range(3):  # the replacement's rows start a new stream; the others stay Serial's
                observations = vecenv.step(actions)[0]
                np.testing.assert_array_equal(observations[others], reference.step(actions)[0][others])
            # The replacement runs on the other node (never on the one it failed on): its rows come back.
            assert vecenv.worker_nodes[victim].node_id != here
            assert vecenv.worker_paths == expected_paths(vecenv, "graph")


def test_only_an_actor_that_maps_the_callers_memory_steps_in_it():
    caller = shared_rows(OBS, ACT, 4, "node-a")
    if caller is None:
        pytest.skip("no anonymous memory files on this OS: every actor keeps rows of its own")
    spec = caller.spec
    rows = attach(spec, "node-a", OBS, ACT, 2, 2)
    assert rows is not None
    rows.observations[:] = 0.5
    rows.actions[:] = 1
    np.testing.assert_array_equal(caller.buf.observations[2:], 0.5)
    np.testing.assert_array_equal(caller.buf.observations[:2], 0.0)
    np.testing.assert_array_equal(caller.buf.actions[2:], 1)
    assert attach(spec, "node-b", OBS, ACT, 2, 2) is None  # Ray says it runs elsewhere
    forged = RowsSpec(spec.node_id, spec.pid, spec.fd, spec.nbytes, bytes(len(spec.token)), spec.rows)
    assert attach(forged, "node-a", OBS, ACT, 2, 2) is None  # a namesake's memory: the token differs
    assert attach(None, "node-a", OBS, ACT, 2, 2) is None
    caller.close()
    assert attach(spec, "node-a", OBS, ACT, 2, 2) is None  # closed: nothing left to open
    np.testing.assert_array_equal(caller.buf.observations[2:], 0.5)  # the arrays outlive the descriptor
