"""Async pipelining for Multithreading: env stepping overlapped with a policy (seed-001 methodology).

    python bench/bench_pipelining.py [--repeats 5] [--markdown bench/results/pipelining.md]
    python bench/bench_pipelining.py --sweep [--markdown bench/results/pipelining_crossover.md]

The stand-in policy is a numpy matmul (single-threaded BLAS, it releases the GIL) sized so that its
cost on one batch of observations about equals one synchronous batch step of the envs on one core.
Timed: the whole loop (recv, policy, send), end to end. Compared in the same run: the synchronous
mode (batch = all envs, pool of max_num_threads) against 2 buffers (batch = half the envs).

--sweep: where pipelining starts to pay. The policy's cost on all envs is swept from none to 4x one
single-thread env step (the numpy policy, one thread), plus a torch policy that uses every core
itself (a CPU policy as torch runs it by default), each timed synchronous and with 2 buffers.
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


class NoPolicy:
    """Actions computed in advance: the loop's cost is the envs' alone."""

    shape = (0, 0)

    def __init__(self):
        self.actions = {}

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        n = len(obs)
        if n not in self.actions:
            self.actions[n] = np.random.default_rng(2).integers(0, 2, n).astype(np.int32)
        return self.actions[n]


class TorchPolicy:
    """A torch MLP (4 -> width -> width -> 2) on as many threads as torch takes by default (every core)."""

    def __init__(self, width: int):
        import torch

        torch.manual_seed(0)
        torch.set_num_threads(os.cpu_count() or 1)
        self.torch = torch
        self.shape = (width, width)
        self.net = torch.nn.Sequential(
            torch.nn.Linear(4, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, width),
            torch.nn.ReLU(),
            torch.nn.Linear(width, 2),
        )

    def __call__(self, obs: np.ndarray) -> np.ndarray:
        with self.torch.inference_mode():
            return self.net(self.torch.from_numpy(obs)).argmax(1).to(self.torch.int32).numpy()


def policy_cost(policy) -> float:
    obs = np.random.default_rng(1).standard_normal((NUM_ENVS, 4)).astype(np.float32)
    return min(time_once(lambda: policy(obs), 20) for _ in range(3))


def sweep(env_step: float, repeats: int, batches: int, markdown: str | None) -> None:
    """Synchronous vs 2 buffers as the policy's cost grows against the env step's."""
    cases = [("none", NoPolicy())]
    for ratio in (0.25, 0.5, 1.0, 2.0, 4.0):
        cases.append((f"numpy, one thread, calibrated to {ratio:g} E", calibrate_policy(env_step * ratio)))
    try:
        cases.append(("torch MLP 4-64-64-2, every core", TorchPolicy(64)))
    except ImportError:
        print("torch not installed: its row is left out")
    rows = []
    for name, policy in cases:
        cost = policy_cost(policy)
        sync, piped = [], []
        for _ in range(repeats):
            sync.append(run(policy, NUM_ENVS, None, batches)[0])
            piped.append(run(policy, NUM_ENVS // 2, None, 2 * batches)[0])
        # Each pair ran back to back: the median of the pairs' ratios shrugs off load that came and went.
        ratio = statistics.median(b / a for a, b in zip(sync, piped))
        print(
            f"  {name:<40} policy {cost * 1e6:7.0f} us  sync {statistics.median(sync):>12,.0f}  "
            f"2 buffers {statistics.median(piped):>12,.0f}  {ratio:.2f}x"
        )
        rows.append(
            [
                name,
                f"{cost * 1e6:.0f}",
                f"{cost / env_step:.2f}",
                f"{statistics.median(sync):,.0f}",
                f"{statistics.median(piped):,.0f}",
                f"{ratio:.2f}x",
                ", ".join(f"{a / 1e6:.2f}M/{b / 1e6:.2f}M" for a, b in zip(sync, piped)),
            ]
        )
    info = benchmark.system_info(
        {
            "env": f"shoal CartPole, {NUM_ENVS} envs, default threads",
            "env step, one thread, all envs (E)": f"{env_step * 1e6:.0f} us",
            "timed": f"recv + policy + send, end to end, {batches} full-vector batches a sample after 20 warm-up batches",
            "repeats": f"{repeats} pairs, synchronous then 2 buffers, back to back",
        }
    )
    table = benchmark.format_markdown(
        "Multithreading: when pipelining pays (policy cost P against env step E)",
        info,
        rows,
        [
            "policy",
            "P (us, all envs)",
            "P / E",
            "sync SPS",
            "2 buffers SPS",
            "2 buffers / sync",
            "samples (sync/2 buffers)",
        ],
        [
            "2 buffers let one buffer's envs step while the policy runs on the other, so the loop takes about "
            "max(E, P) a batch where the synchronous one takes E/s + P (s: what the pool's threads make of E). "
            "That needs a core for each: a policy that itself runs on every core, or other processes on the "
            "machine, leave none. P and P / E are measured in this run (a busy machine's calibration misses)."
        ],
    )
    benchmark.publish(table, markdown)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batches", type=int, default=2000, help="full-vector batches per sample")
    parser.add_argument("--markdown")
    parser.add_argument("--sweep", action="store_true", help="sweep the policy's cost against the env step's")
    args = parser.parse_args()

    with make(CartPole, backend="Multithreading", num_envs=NUM_ENVS, max_num_threads=1) as probe:
        probe.reset()
        # Random actions like a policy's: all-zero actions would end episodes (costly resets) constantly.
        actions = np.random.default_rng(2).integers(0, 2, NUM_ENVS).astype(np.int32)
        env_step = min(time_once(lambda: probe.step(actions), 200) for _ in range(5))
    if args.sweep:
        sweep(env_step, args.repeats, args.batches, args.markdown)
        return
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
