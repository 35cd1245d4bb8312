"""Async pipelining for Multithreading: env stepping overlapped with a policy (seed-001 methodology).

    python bench/bench_pipelining.py [--repeats 5] [--markdown bench/results/pipelining.md]

The stand-in policy is a numpy matmul (single-threaded BLAS, it releases the GIL) sized so that its
cost on one batch of observations about equals one synchronous batch step of the envs on one core.
Timed: the whole loop (recv, policy, send), end to end. Compared in the same run: the synchronous
mode (batch = all envs, pool of max_num_threads) against 2 buffers (batch = half the envs).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy: the policy must be one thread
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import statistics
import time

import numpy as np

from shoal import benchmark
from shoal.envs import CartPole
from shoal.vector import make

NUM_ENVS = 4096


class Policy:
    """One (batch x width) @ (width x outputs) matmul per call into preallocated memory; the
    observations fill the first columns. BLAS releases the GIL; cost is linear in the batch."""

    def __init__(self, width: int, outputs: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        self.weights = rng.standard_normal((width, outputs)).astype(np.float32) / np.sqrt(width)
        self.shape = (width, outputs)
        self.inputs = {}
        self.outputs = {}

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        n = len(obs)
        if n not in self.inputs:
            self.inputs[n] = np.ones((n, self.shape[0]), np.float32)
            self.outputs[n] = np.empty((n, self.shape[1]), np.float32)
        x, y = self.inputs[n], self.outputs[n]
        x[:, : obs.shape[1]] = obs
        np.matmul(x, self.weights, out=y)
        return (y[:, 0] > 0).astype(np.int32)


def time_once(fn, repeats=20) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def calibrate_policy(env_step_seconds: float) -> Policy:
    """The policy whose cost on all envs is closest to one single-thread env step: shapes grow
    (w, w) -> (w, w + 1) -> (w + 1, w + 1), about 6% of cost per step."""
    obs = np.random.default_rng(0).standard_normal((NUM_ENVS, 4)).astype(np.float32)

    def cost(policy: Policy) -> float:
        return min(time_once(lambda: policy(obs)) for _ in range(3))

    previous = None
    for width in range(8, 4096):
        for outputs in (width, width + 1):
            policy = Policy(width, outputs)
            current = cost(policy)
            if current >= env_step_seconds:
                if previous is not None and env_step_seconds - previous[1] < current - env_step_seconds:
                    return previous[0]
                return policy
            previous = (policy, current)
    return previous[0]


def run(policy: Policy, batch_size: int, threads: int, batches: int) -> tuple[float, float]:
    """End-to-end agent steps per second and the fraction of loop time spent in recv (waiting for
    the buffer, or stepping the rest of it alongside the driver)."""
    options = {} if threads is None else {"max_num_threads": threads}
    with make(
        CartPole, backend="Multithreading", num_envs=NUM_ENVS, batch_size=batch_size, seed=0, **options
    ) as vecenv:
        vecenv.async_reset()
        for _ in range(20):
            obs = vecenv.recv()[0]
            vecenv.send(policy(obs))
        waiting = 0.0
        start = time.perf_counter()
        for _ in range(batches):
            t = time.perf_counter()
            obs = vecenv.recv()[0]
            waiting += time.perf_counter() - t
            vecenv.send(policy(obs))
        elapsed = time.perf_counter() - start
    return batches * vecenv.agents_per_batch / elapsed, waiting / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batches", type=int, default=2000, help="full-vector batches per sample")
    parser.add_argument("--markdown")
    args = parser.parse_args()

    with make(CartPole, backend="Multithreading", num_envs=NUM_ENVS, max_num_threads=1) as probe:
        probe.reset()
        # Random actions like a policy's: all-zero actions would end episodes (costly resets) constantly.
        actions = np.random.default_rng(2).integers(0, 2, NUM_ENVS).astype(np.int32)
        env_step = min(time_once(lambda: probe.step(actions), 200) for _ in range(5))
    policy = calibrate_policy(env_step)
    width, outputs = policy.shape
    obs = np.random.default_rng(1).standard_normal((NUM_ENVS, 4)).astype(np.float32)
    policy_cost = min(time_once(lambda: policy(obs), 50) for _ in range(5))

    configs = [
        ("sync, default threads (T=2: all 4096 envs per batch)", NUM_ENVS, None),
        ("2 buffers, default threads (T=1: the driver steps, the caller runs the policy)", NUM_ENVS // 2, None),
        ("2 buffers, T=2 (driver + 1 pool worker, which stays parked: both cores are taken)", NUM_ENVS // 2, 2),
    ]
    samples = {name: [] for name, _, _ in configs}
    waits = {name: [] for name, _, _ in configs}
    for r in range(args.repeats):
        for name, batch, threads in configs:
            sps, wait = run(policy, batch, threads, args.batches * NUM_ENVS // batch)
            samples[name].append(sps)
            waits[name].append(wait)
            print(f"  repeat {r + 1}  {name:<62} {sps:>12,.0f} SPS  in recv {100 * wait:.0f}%")
    base = statistics.median(samples[configs[0][0]])
    rows = []
    for name, _, _ in configs:
        med = statistics.median(samples[name])
        spread = (max(samples[name]) - min(samples[name])) / med
        rows.append(
            [
                name,
                f"{med:,.0f}",
                f"{100 * spread:.0f}%",
                ", ".join(f"{s / 1e6:.2f}M" for s in samples[name]),
                f"{med / base:.2f}x",
                f"{100 * statistics.median(waits[name]):.0f}%",
            ]
        )
    info = benchmark.system_info(
        {
            "env": f"shoal CartPole, {NUM_ENVS} envs",
            "env step, one thread, all envs": f"{env_step * 1e6:.0f} us",
            "policy": f"numpy matmul (batch x {width}) @ ({width} x {outputs}), one BLAS thread, "
            f"{policy_cost * 1e6:.0f} us per "
            f"{NUM_ENVS} observations",
            "timed": "recv + policy + send, end to end, after 20 warm-up batches",
            "repeats": args.repeats,
        }
    )
    table = benchmark.format_markdown(
        "Multithreading: synchronous vs pipelined (2 buffers)",
        info,
        rows,
        ["configuration", "median SPS", "spread", "samples", "vs sync", "time in recv (waiting or stepping)"],
        [
            "Bound on 2 cores: with policy cost P equal to the single-thread env cost E, perfect overlap takes "
            "max(E, P) = E per batch and the synchronous loop E/s + P, where s is what 2 threads make of the "
            "env step inside this loop (the pool's worker may sleep through the policy and must be woken). "
            "The ceiling is 1 + 1/s: 1.5x if s = 2."
        ],
    )
    benchmark.publish(table, args.markdown)


if __name__ == "__main__":
    main()
