"""The trainer's loop: env -> policy -> env, end to end, against its two halves (seed-001 methodology).

    python bench/bench_trainer.py [--envs cartpole,halfcheetah] [--repeats 3] [--markdown PATH]

Per env, each case in a fresh process, repeats interleaved, medians reported:
  (a) env steps only: Multithreading, N envs, the default threads, fixed actions;
  (b) policy only: copy in, forward, copy out, on N observations;
  (c) the loop as users write it today: numpy batches, ``torch.from_numpy(obs).to(device)``, forward,
      ``.cpu().numpy()``, ``step``;
  (d) the loop through shoal's hand-off: ``make(..., num_envs=2N, batch_size=N, device=...)``, recv,
      forward, send: the policy sees N rows per call while the other N envs step.
The limit of the loop is the slower of (a) and (b): overlapped, the loop cannot beat either half.
Diagnostic rows of (d) on request: other thread counts (--d-threads), the hand-off's copies through
torch instead of the CUDA driver (--d-torch-copies), the N envs of (a) in two buffers of N/2 rows
(--d-halves: no more envs than (a), twice the policy's calls).

With CUDA the policy is a real torch MLP (obs -> 256 -> 256 -> actions, fp32) on the GPU. Elsewhere
it is a GPU stand-in: a call that spends ``--cpu-share`` of the latency as caller CPU work (what
kernel launches cost) and then waits for the latency with the GIL released, using no core; its
latency is (a)'s step time, measured first in this run, so that the two halves are equal (or
``--latency-share`` of it: an env-bound loop, as HalfCheetah's on a GPU). In (d) it
waits as the hand-off waits for a GPU's results (stepping envs of the buffer in flight meanwhile,
``step_while_waiting``); ``--no-help`` makes it sleep instead.

Timed: the steady loop after warm-up (construction, reset, warm-up and CUDA start are not timed).
After each timed sample of (c) and (d), untimed calls split a call's time into its stages (recv,
policy, send), reported in microseconds below each table: a diagnostic of where the time goes.
The last lines, one per env, are for scripts: ``trainer: <env> d/limit=<x> d/c=<y>``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ENVS = {
    # name: (env, envs on a machine with CUDA, envs otherwise)
    "cartpole": ("cartpole", 16384, 4096),
    "halfcheetah": ("HalfCheetah-v5", 512, 64),
}
CASES = ("a", "b", "c", "d")
CASE_NAMES = {
    "a": "(a) env steps only",
    "b": "(b) policy only (copy in, forward, copy out)",
    "c": "(c) the loop as users write it",
    "d": "(d) the loop through shoal's hand-off (2 buffers of N)",
}


# -- what one case process runs ------------------------------------------------------------------


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity where the OS tells it)."""
    import psutil

    if hasattr(psutil.Process, "cpu_affinity"):
        return len(psutil.Process().cpu_affinity())
    return os.cpu_count() or 1


def env_class(name: str):
    if name == "cartpole":
        from shoal.envs import CartPole

        return CartPole
    import warnings

    import shoal.mujoco

    warnings.filterwarnings("ignore", category=shoal.mujoco.MujocoWarning)
    return shoal.mujoco.env_class(name)


class MLP:
    """obs -> 256 -> 256 -> actions on a torch device: argmax of logits (Discrete) or tanh (Box)."""

    def __init__(self, torch, obs_size: int, space, device):
        from gymnasium import spaces

        self.torch = torch
        self.discrete = isinstance(space, spaces.Discrete)
        out = space.n if self.discrete else int(space.shape[0])
        torch.manual_seed(0)
        nn = torch.nn
        self.net = nn.Sequential(
            nn.Linear(obs_size, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, out)
        )
        self.net.to(device).eval()

    def __call__(self, obs):
        with self.torch.inference_mode():
            out = self.net(obs.float())  # MuJoCo's observations are float64
            return out.argmax(-1) if self.discrete else self.torch.tanh(out)


def fixed_actions(space, rows: int):
    import numpy as np
    from gymnasium import spaces

    if isinstance(space, spaces.Discrete):
        return np.arange(rows, dtype=np.int32) % space.n
    return np.zeros((rows, *space.shape), dtype=np.float32)


def timed(loop_step, steps: int, warmup: int) -> float:
    """Seconds per call of ``loop_step`` over ``steps`` calls after ``warmup``."""
    for _ in range(warmup):
        loop_step()
    start = time.perf_counter()
    for _ in range(steps):
        loop_step()
    return (time.perf_counter() - start) / steps


def per_call_split(stages: dict, seconds_per_call: float, inner: dict | None = None) -> dict:
    """Mean microseconds of each stage of one loop call, over about 0.2 s of calls made after the timed
    ones (the timed loop carries no timers). A diagnostic: where a call's time goes. ``inner``: name ->
    a one-item list that a wrapped function inside a stage adds its seconds to (reported per call too)."""
    calls = max(20, int(0.2 / max(seconds_per_call, 1e-6)))
    totals = dict.fromkeys(stages, 0.0)
    clock = time.perf_counter
    for _ in range(calls):
        for name, stage in stages.items():
            start = clock()
            stage()
            totals[name] += clock() - start
    totals.update({name: seconds[0] for name, seconds in (inner or {}).items()})
    return {name: round(total / calls * 1e6, 1) for name, total in totals.items()}


def timing_waits(copies) -> dict:
    """On CUDA: wraps the hand-off's wait for the policy's results (stepping envs meanwhile) so that the
    per-call split can tell it from the rest of send()."""
    waited = [0.0]
    wait = copies.step_while_waiting
    if wait is None:
        return {}

    def timed(ready):
        start = time.perf_counter()
        try:
            return wait(ready)
        finally:
            waited[0] += time.perf_counter() - start

    copies.step_while_waiting = timed
    return {"send's wait for the GPU, stepping envs": waited}


def run_case(spec: dict) -> dict:
    import numpy as np

    import shoal.vector
    from shoal.policy_standin import PolicyStandIn

    cls = env_class(spec["env"])
    n, case, device = spec["num_envs"], spec["case"], spec["device"]
    threads = spec.get("threads")
    seconds = spec["seconds"]
    if spec.get("torch_copies"):
        os.environ["SHOAL_CUDA_COPIES"] = "torch"  # read when the hand-off is made
    torch = None
    if device != "standin":
        import torch

        torch.set_num_threads(1)  # the trainer's intra-op threads would take the pool's cores
    info = cls.describe()
    from shoal.native.spec import action_space, observation_space

    obs_space, act_space = observation_space(info), action_space(info)
    obs_size = int(np.prod(obs_space.shape))
    host_actions = fixed_actions(act_space, n)

    def policy_for(torch_device):
        if device == "standin":
            return PolicyStandIn(spec["latency_s"], spec["cpu_s"], host_actions)
        return MLP(torch, obs_size, act_space, torch_device)

    def measure(step) -> float:
        # about `seconds` of timed calls, counted from a short probe
        probe = timed(step, 5, 5)
        steps = max(20, int(seconds / max(probe, 1e-6)))
        return timed(step, steps, min(200, steps // 5))

    result = {}
    if threads is None and case in ("a", "c"):
        threads = usable_cpus()  # env stepping at its best: every CPU
    options = {} if threads is None else {"max_num_threads": threads}
    if case == "a":
        with shoal.vector.make(cls, backend="Multithreading", num_envs=n, seed=0, **options) as v:
            v.reset()
            result["threads"] = v.max_num_threads
            result["seconds"] = measure(lambda: v.step(host_actions))
    elif case == "b":
        obs = np.zeros((n, *obs_space.shape), obs_space.dtype)
        if device == "standin":
            policy = policy_for(None)
            result["seconds"] = measure(lambda: policy(obs))
        else:
            policy = policy_for(device)

            def step():
                return policy(torch.from_numpy(obs).to(device)).cpu().numpy()

            result["seconds"] = measure(step)
    elif case == "c":
        with shoal.vector.make(cls, backend="Multithreading", num_envs=n, seed=0, **options) as v:
            state = {"obs": v.reset()[0]}
            result["threads"] = v.max_num_threads
            if device == "standin":
                policy = policy_for(None)

                def step():
                    state["obs"] = v.step(policy(state["obs"]))[0]

                def act():
                    state["actions"] = policy(state["obs"])
            else:
                policy = policy_for(device)

                def step():
                    actions = policy(torch.from_numpy(state["obs"]).to(device)).cpu().numpy()
                    state["obs"] = v.step(actions)[0]

                def act():
                    state["actions"] = policy(torch.from_numpy(state["obs"]).to(device)).cpu().numpy()

            def env_step():
                state["obs"] = v.step(state["actions"])[0]

            result["seconds"] = measure(step)
            result["split"] = per_call_split({"policy": act, "step": env_step}, result["seconds"])
    else:
        handoff = "cpu" if device == "standin" else device
        # 2 buffers of N rows (2N envs), or with "halves" the N envs of (a) in 2 buffers of N/2 rows
        rows = n // 2 if spec.get("halves") else n
        with shoal.vector.make(
            cls, backend="Multithreading", num_envs=2 * rows, batch_size=rows, seed=0, device=handoff, **options
        ) as v:
            v.async_reset()
            result["threads"] = v.max_num_threads
            if device == "standin":
                wait = None if spec.get("no_help") else v.step_while_waiting
                actions = torch_free_actions(host_actions[:rows])
                policy = PolicyStandIn(spec["latency_s"], spec["cpu_s"], actions, wait)
            else:
                policy = policy_for(device)
                if spec.get("no_help"):
                    v._copies.step_while_waiting = None  # diagnostic only: the caller sleeps while the GPU works

            def step():
                obs = v.recv()[0]
                v.send(policy(obs))

            state = {}

            def receive():
                state["obs"] = v.recv()[0]

            def act():
                state["actions"] = policy(state["obs"])

            def send():
                v.send(state["actions"])

            result["seconds"] = measure(step)
            inner = timing_waits(v._copies) if device != "standin" else None
            result["split"] = per_call_split({"recv": receive, "policy": act, "send": send}, result["seconds"], inner)
            result["pool"] = {k: v.pool_stats()[k] for k in ("chunks_by_caller", "chunks_by_workers", "parks")}
            result["rows"] = rows
    result["sps"] = result.get("rows", n) / result["seconds"]  # rows a call steps
    return result


def torch_free_actions(actions):
    """The stand-in's actions for the hand-off: a CPU tensor where torch is installed, else numpy."""
    try:
        import torch
    except ModuleNotFoundError:
        return actions
    return torch.from_numpy(actions)


# -- the parent: calibrate, interleave, report -----------------------------------------------------


def in_process(spec: dict) -> dict:
    out = subprocess.run(
        [sys.executable, __file__, "--case-json", json.dumps(spec)], capture_output=True, text=True, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"case {spec} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def versions(device: str) -> dict:
    import platform

    import gymnasium
    import numpy

    import shoal
    from shoal import _native
    from shoal.benchmark import cpu_model

    info = {
        "shoal": shoal.__version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "gymnasium": gymnasium.__version__,
        "cpu": cpu_model(),
        "logical cpus": os.cpu_count(),
        "physical cores (shoal)": _native.physical_cores(),
        "load average (1 min) at start": f"{os.getloadavg()[0]:.2f}",
    }
    try:
        import torch

        info["torch"] = torch.__version__
        if device not in ("standin", "cpu"):
            info["gpu"] = torch.cuda.get_device_name(0)
    except ModuleNotFoundError:
        info["torch"] = "not installed"
    return info


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", default="cartpole,halfcheetah")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.0, help="timed seconds per sample")
    parser.add_argument("--device", default="auto", help="cuda, standin (the GPU stand-in), or auto")
    parser.add_argument("--cpu-share", type=float, default=0.2, help="stand-in caller CPU, share of its latency")
    parser.add_argument(
        "--latency-share",
        type=float,
        default=1.0,
        help="stand-in latency, share of (a)'s step time (below 1: an env-bound loop, as HalfCheetah's on a GPU)",
    )
    parser.add_argument("--num-envs", type=int, help="N (default: per env, larger with CUDA)")
    parser.add_argument("--threads", type=int, help="max_num_threads of (a) and (c) (default: shoal's)")
    parser.add_argument(
        "--d-threads",
        type=lambda text: [int(t) for t in text.split(",")],
        default=[],
        help="diagnostic: also run (d) with these max_num_threads (comma-separated)",
    )
    parser.add_argument(
        "--d-torch-copies",
        action="store_true",
        help="diagnostic (CUDA): also run (d) with its copies and events through torch (SHOAL_CUDA_COPIES=torch)",
    )
    parser.add_argument(
        "--d-halves",
        action="store_true",
        help="diagnostic: also run (d) over N envs in 2 buffers of N/2 (the policy sees N/2 rows a call)",
    )
    parser.add_argument("--cases", default="abcd", help="which cases to run (a diagnostic run of (d) alone: d)")
    parser.add_argument(
        "--no-help", action="store_true", help="diagnostic: (d) without the caller stepping envs while the GPU works"
    )
    parser.add_argument("--markdown", help="also write the report there")
    parser.add_argument("--case-json", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case_json:
        print(json.dumps(run_case(json.loads(args.case_json))))
        return
    device = args.device
    if device == "auto":
        try:
            import torch

            device = "cuda" if torch.cuda.is_available() else "standin"
        except ModuleNotFoundError:
            device = "standin"
    info = versions(device)
    info["policy"] = (
        "torch MLP obs->256->256->actions, fp32, on the GPU"
        if device != "standin"
        else f"GPU stand-in: latency = {args.latency_share:g} x (a)'s step time, caller CPU {args.cpu_share:.0%} of it"
    )
    info["timed"] = f"about {args.seconds} s of steady loop per sample, after warm-up; each case its own process"
    lines, summary = [], []
    for name in args.envs.split(","):
        env, cuda_envs, other_envs = ENVS[name]
        n = args.num_envs or (cuda_envs if device != "standin" else other_envs)
        base = {"env": env, "num_envs": n, "device": device, "seconds": args.seconds, "threads": args.threads}
        if device == "standin":
            a = in_process({**base, "case": "a"})
            latency = args.latency_share * a["seconds"]
            base["latency_s"], base["cpu_s"] = latency, args.cpu_share * latency
        # (key, row label, case, max_num_threads): (d) once with shoal's default threads, and again
        # for each count of --d-threads (a diagnostic of the thread budget).
        rows = [(c, CASE_NAMES[c], c, args.threads if c in "ac" else None) for c in CASES if c in args.cases]
        for t in args.d_threads:
            rows.append((f"d{t}", f"{CASE_NAMES['d']}, max_num_threads={t}", "d", t))
        if args.d_torch_copies:
            rows.append(("d-torch", f"{CASE_NAMES['d']}, copies through torch", "d", None))
        if args.d_halves:
            rows.append(("d-halves", "(d) with the N envs of (a) in 2 buffers of N/2", "d", None))
        base["no_help"] = args.no_help
        samples = {key: [] for key, *_ in rows}
        extra = {}
        for r in range(args.repeats):
            for key, label, case, threads in rows:
                flags = {"torch_copies": key == "d-torch", "halves": key == "d-halves"}
                result = in_process({**base, "case": case, "threads": threads, **flags})
                samples[key].append(result["sps"])
                extra[key] = result
                print(f"  {name} repeat {r + 1}/{args.repeats} {label}: {result['sps']:,.0f} steps/s", flush=True)
        med = {key: statistics.median(s) for key, s in samples.items()}
        if not {"a", "b"} <= set(med):
            lines.append(f"### {env}, N = {n}: " + ", ".join(f"({k}) {med[k]:,.0f}/s {extra[k]}" for k in med))
            continue
        limit = min(med["a"], med["b"])
        lines.append(f"### {env}, N = {n}")
        lines.append("")
        lines.append("| case | median steps/s | samples | threads | vs limit |")
        lines.append("|---|---:|---|---:|---:|")
        for key, label, _, _ in rows:
            cells = ", ".join(f"{s / 1e3:,.1f}K" for s in samples[key])
            threads = extra[key].get("threads", "")
            lines.append(f"| {label} | {med[key]:,.0f} | {cells} | {threads} | {med[key] / limit:.2f} |")
        if "d" in extra and "pool" in extra["d"]:
            lines.append("")
            lines.append(f"(d)'s pool counters, last sample: {extra['d']['pool']}")
        splits = [f"({key}) {extra[key]['split']}" for key, *_ in rows if "split" in extra[key]]
        if splits:
            lines.append("")
            lines.append("Per call, µs (after the last sample's timed calls, untimed there): " + "; ".join(splits))
        lines.append("")
        if {"c", "d"} <= set(med):
            summary.append(f"trainer: {name} d/limit={med['d'] / limit:.2f} d/c={med['d'] / med['c']:.2f}")
    report = "## The trainer's loop\n\n" + "\n".join(f"- {k}: {v}" for k, v in info.items()) + "\n\n" + "\n".join(lines)
    print(report)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report + "\n" + "\n".join(summary) + "\n")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
