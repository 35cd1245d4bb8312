"""Issue 54's node-loss acceptance loops on a simulated cluster, run by hand (minutes, not CI).

    python bench/cluster_node_loss.py [--runs 10] [--faults SIGKILL,SIGSTOP] [--policies restart,elastic]
                                      [--no-graphs]

One ``ray.cluster_utils.Cluster`` (a head and two nodes of 2 CPUs each, loopback, a temporary HOME and
RAY_TMPDIR). Each run: a Ray vector of 3 Gymnasium CartPole envs on 3 actors (one per node), reset,
3 steps; then a node other than the driver's is broken (its raylet SIGKILLed, or it and every process
under it SIGSTOPped), and the rollout steps on until a replacement reports itself (at most 60 s),
then 20 steps more. A run passes when the replacement landed on a surviving node and the rollout
completed; under elastic it also counts the steps taken with the lost rows masked. The broken node is
then removed and a fresh one added. The last lines, one per fault and policy, are for scripts:
``node_loss: <fault> <policy> runs=<n> survivor=<k> completed=<k> median_s=<s>``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import tempfile
import time

import gymnasium
import numpy as np
import psutil

NODE_CPUS = 2


def make_cartpole():
    return gymnasium.make("CartPole-v1")


class Nodes:
    """The simulated cluster, its worker nodes by id, and how to break and renew them."""

    def __init__(self, Cluster):
        self.cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": NODE_CPUS, "include_dashboard": False})
        self.nodes = {}
        for _ in range(2):
            self.add()
        self.head_id = self.cluster.head_node.node_id

    def add(self):
        node = self.cluster.add_node(num_cpus=NODE_CPUS)
        self.nodes[node.node_id] = node
        self.cluster.wait_for_nodes()

    def raylet(self, node_id) -> psutil.Process:
        return psutil.Process(self.nodes[node_id].all_processes["raylet"][0].process.pid)

    def break_node(self, node_id, fault: str) -> list:
        raylet = self.raylet(node_id)
        if fault == "SIGKILL":
            raylet.send_signal(signal.SIGKILL)
            return []
        frozen = [raylet, *raylet.children(recursive=True)]
        for process in frozen:
            process.send_signal(signal.SIGSTOP)
        return frozen

    def renew(self, node_id, frozen) -> None:
        for process in frozen:
            try:
                process.send_signal(signal.SIGCONT)
            except psutil.NoSuchProcess:
                pass
        self.cluster.remove_node(self.nodes.pop(node_id), allow_graceful=False)
        self.add()


def one_run(nodes: Nodes, fault: str, policy: str, graphs: bool) -> dict:
    from shoal.vector import make

    vecenv = make(
        make_cartpole, backend="Ray", num_envs=3, num_workers=3, on_worker_failure=policy, compiled_graphs=graphs
    )
    actions = np.zeros(vecenv.num_agents, dtype=np.int64)
    result = {"survivor": False, "completed": False, "seconds": float("nan"), "masked": 0}
    victim = lost = None
    frozen = []
    try:
        vecenv.reset(seed=1)
        for _ in range(3):
            vecenv.step(actions)
        victim, lost = next((w, n.node_id) for w, n in enumerate(vecenv.worker_nodes) if n.node_id != nodes.head_id)
        frozen = nodes.break_node(lost, fault)
        start, deadline, restarted = time.monotonic(), time.monotonic() + 60, False
        while not restarted and time.monotonic() < deadline:
            *_, infos = vecenv.step(actions)
            restarted = any("worker_restart" in i for i in infos)
            result["masked"] += any("worker_lost" in i for i in infos)
        result["seconds"] = time.monotonic() - start
        for _ in range(20):
            vecenv.step(actions)
        result["survivor"] = restarted and vecenv.worker_nodes[victim].node_id not in (lost, "")
        result["completed"] = restarted
    except Exception as exc:  # a failed run is counted, and said
        result["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0]}"
    finally:
        vecenv.close()
        if lost is not None:
            nodes.renew(lost, frozen)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--faults", default="SIGKILL,SIGSTOP")
    parser.add_argument("--policies", default="restart")
    parser.add_argument("--no-graphs", action="store_true", help="compiled_graphs=False (plain actor calls)")
    args = parser.parse_args()
    home, tmp = tempfile.mkdtemp(prefix="home"), tempfile.mkdtemp(prefix="ray")
    os.environ.update(HOME=home, RAY_TMPDIR=tmp)
    import ray
    from ray.cluster_utils import Cluster

    nodes = Nodes(Cluster)
    ray.init(address=nodes.cluster.address, logging_level="ERROR")
    results = {}  # (fault, policy) -> runs so far: a cluster that dies mid-way still reports them
    try:
        for policy in args.policies.split(","):
            for fault in args.faults.split(","):
                runs = results[fault, policy] = []
                for i in range(args.runs):
                    run = one_run(nodes, fault, policy, not args.no_graphs)
                    runs.append(run)
                    print(f"{fault} {policy} run {i + 1}: {run}", flush=True)
    finally:
        for (fault, policy), runs in results.items():
            print(summary(fault, policy, runs))
        ray.shutdown()
        nodes.cluster.shutdown()
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(tmp, ignore_errors=True)


def summary(fault: str, policy: str, runs: list) -> str:
    seconds = [r["seconds"] for r in runs if r["completed"]]
    line = (
        f"node_loss: {fault} {policy} runs={len(runs)} survivor={sum(r['survivor'] for r in runs)} "
        f"completed={sum(r['completed'] for r in runs)} "
        f"median_s={statistics.median(seconds) if seconds else float('nan'):.1f}"
    )
    if policy == "elastic" and runs:
        line += f" masked_steps_median={statistics.median(r['masked'] for r in runs):.0f}"
    return line


if __name__ == "__main__":
    main()
