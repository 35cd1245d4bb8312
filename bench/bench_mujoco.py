"""Gymnasium's MuJoCo tasks on shoal against their limits and peers — in one run, methodology of seed 001.

    python bench/bench_mujoco.py [--tasks HalfCheetah-v5 Hopper-v5] [--num-envs 64] [--repeats 3]

Rows per task (env steps per second, random actions in the ctrlrange generated in advance, medians of
interleaved repeats, warm-up excluded, construction and reset excluded, no policy):
  (a) the task's own C code in a bare C loop (bench/native/mujoco_limit.c): the limit
  (a2) two such loops at once, half the envs each, in two threads: the two-thread limit, the one (c) meets
  (b) shoal Multithreading T=0 (the caller steps every env)   (c) T=2   (d) default threads
  (e) mujoco.rollout, physics only (frame_skip mj_steps per env step; no observation, reward or reset),
      1 and 2 threads
  (f) EnvPool 1 and 2 threads (where installed and the task exists)
  (g) gymnasium SyncVectorEnv and AsyncVectorEnv (--async-envs processes)
  (h) shoal Multiprocessing (2 workers) and Serial with the gymnasium env
  (h2) two plain loops over gymnasium envs at once, half the envs each, in two processes: what two
      cores give the Python path with no shoal (no hand-off, no caller process), the limit of (h)
Memory per env: what mj_makeData allocates, and the resident growth (fresh processes, 1 vs n + 1 envs).
MuJoCo's warnings (a deprecated MJCF attribute in Gymnasium's assets) are printed once per run.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import ctypes
import importlib.metadata
import multiprocessing
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import gymnasium
import numpy as np

import shoal.mujoco
from shoal import benchmark
from shoal.mujoco.build import CSRC, build_cache_dir, compile_command, installed_mujoco
from shoal.native import builds
from shoal.vector import make

ROOT = Path(__file__).resolve().parent
LIMIT_SOURCE = ROOT / "native" / "mujoco_limit.c"


def limit_function(task_id: str):
    """bench/native/mujoco_limit.c compiled around the task's C file, cached like the task itself."""
    task = shoal.mujoco.tasks.all_tasks()[task_id]
    mujoco = installed_mujoco()
    source = CSRC / "tasks" / task.source
    key = builds.digest([LIMIT_SOURCE.read_bytes(), source.read_bytes(), *(p.read_bytes() for p in CSRC.glob("*.h"))])
    name = f"limit_{task.symbol}"

    def build(stage: Path) -> None:
        command = compile_command(LIMIT_SOURCE, stage / f"{name}.so", mujoco, extra_includes=(source.parent,))
        command[1:1] = [f'-DSHOAL_LIMIT_SOURCE="{source.name}"', f"-DSHOAL_LIMIT_NAME={task.symbol}"]
        builds.run_compiler(command, stage, f"the C loop of {task_id}", RuntimeError)

    library = ctypes.CDLL(
        str(builds.cached_build(build_cache_dir(), name, key, f"{name}.so", build, RuntimeError) / f"{name}.so")
    )
    function = library.shoal_mujoco_limit_sps
    function.restype = ctypes.c_double
    function.argtypes = [ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint64]
    xml = shoal.mujoco.env.expand_model_path(
        next(p["default"] for p in task_params(task_id) if p["name"] == "xml_file")
    )
    return lambda num_envs, steps: function(xml.encode(), num_envs, steps)


_shown_warnings: set[str] = set()


def show_mujoco_warning_once(message: str) -> None:
    if message not in _shown_warnings:
        _shown_warnings.add(message)
        print(f"MuJoCo warning (shown once): {message}", file=sys.stderr, flush=True)


def route_mujoco_warnings() -> None:
    """MuJoCo prints a warning (and appends it to MUJOCO_LOG.TXT) at every model load: Gymnasium's
    assets load with a deprecation warning, hundreds of times over the Python rows. Each is shown once;
    forked workers inherit what the bench has shown (every task's model is loaded here first)."""
    import mujoco

    mujoco.set_mju_user_warning(show_mujoco_warning_once)


def gymnasium_env(task_id: str):
    route_mujoco_warnings()  # a spawned worker's own MuJoCo
    return gymnasium.make(task_id)


def task_params(task_id):
    return shoal.mujoco.env_class(task_id).spec.describe()["params"]


def time_step_loop(step, actions, steps: int, warmup: int = 20) -> float:
    for t in range(warmup):
        step(actions[t % len(actions)])
    start = time.perf_counter()
    for t in range(steps):
        step(actions[t % len(actions)])
    return steps / (time.perf_counter() - start)


def two_loops_case(limit, num_envs: int, steps: int):
    """Two bare C loops at once, half the envs each, in two threads (ctypes lets go of the GIL): the
    two-thread limit, what the machine gives two cores stepping this task with no shoal at all."""

    halves = (num_envs // 2, num_envs - num_envs // 2)

    def measure():
        rates = [0.0, 0.0]

        def run(k: int) -> None:
            rates[k] = limit(halves[k], steps)

        threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return sum(rates)

    return measure


def shoal_case(cls, num_envs: int, steps: int, **options):
    def measure():
        with make(cls, backend="Multithreading", num_envs=num_envs, seed=0, **options) as vecenv:
            return benchmark.time_vecenv(vecenv, steps * num_envs)

    return measure


def python_case(task_id: str, backend: str, num_envs: int, steps: int, **options):
    def measure():
        creator = lambda: gymnasium_env(task_id)  # noqa: E731  (pickled by value)
        with make(creator, backend=backend, num_envs=num_envs, seed=0, **options) as vecenv:
            return benchmark.time_vecenv(vecenv, steps * num_envs)

    return measure


def plain_gymnasium_loop(task_id: str, num_envs: int, steps: int, start, durations) -> None:
    """One process of (h2): steps its envs one by one (resetting ended ones) after ``start`` lets go."""
    envs = [gymnasium_env(task_id) for _ in range(num_envs)]
    for i, env in enumerate(envs):
        env.reset(seed=i)
    envs[0].action_space.seed(0)
    actions = [envs[0].action_space.sample() for _ in range(16)]

    def run(count: int) -> None:
        for t in range(count):
            action = actions[t % len(actions)]
            for env in envs:
                if any(env.step(action)[2:4]):
                    env.reset()

    run(20)
    start.wait()
    begin = time.perf_counter()
    run(steps)
    durations.put(time.perf_counter() - begin)


def two_processes_case(task_id: str, num_envs: int, steps: int):
    """(h2): two plain loops at once in two spawned processes, timed from a common start to the later end."""

    def measure():
        context = multiprocessing.get_context("spawn")
        start, durations = context.Barrier(2), context.Queue()
        halves = (num_envs // 2, num_envs - num_envs // 2)
        processes = [
            context.Process(target=plain_gymnasium_loop, args=(task_id, half, steps, start, durations))
            for half in halves
        ]
        for process in processes:
            process.start()
        elapsed = max(durations.get(timeout=600) for _ in processes)
        for process in processes:
            process.join()
        return num_envs * steps / elapsed

    return measure


def gymnasium_case(task_id: str, vector: str, num_envs: int, steps: int):
    def measure():
        cls = gymnasium.vector.SyncVectorEnv if vector == "sync" else gymnasium.vector.AsyncVectorEnv
        envs = cls([lambda: gymnasium_env(task_id)] * num_envs)
        envs.reset(seed=0)
        envs.action_space.seed(0)
        actions = [envs.action_space.sample() for _ in range(16)]
        try:
            return num_envs * time_step_loop(envs.step, actions, steps)
        finally:
            envs.close()

    return measure


def rollout_case(task_id: str, num_envs: int, steps: int, threads: int):
    import mujoco
    import mujoco.rollout

    env = gymnasium.make(task_id).unwrapped
    model, frame_skip = env.model, env.frame_skip
    nstep = steps * frame_skip
    state = np.zeros((num_envs, mujoco.mj_stateSize(model, mujoco.mjtState.mjSTATE_FULLPHYSICS)))
    data = mujoco.MjData(model)
    mujoco.mj_getState(model, data, state[0], mujoco.mjtState.mjSTATE_FULLPHYSICS)
    state[:] = state[0]
    low, high = model.actuator_ctrlrange.T
    control = np.random.default_rng(0).uniform(low, high, (num_envs, nstep, model.nu))
    datas = [mujoco.MjData(model) for _ in range(threads)]

    def measure():
        start = time.perf_counter()
        mujoco.rollout.rollout(model, datas if threads > 1 else datas[0], state, control, nstep=nstep)
        return steps * num_envs / (time.perf_counter() - start)

    return measure


def envpool_case(task_id: str, num_envs: int, steps: int, threads: int):
    import envpool

    def measure():
        envs = envpool.make(task_id, env_type="gymnasium", num_envs=num_envs, batch_size=num_envs, num_threads=threads)
        envs.reset()
        space = envs.action_space
        rng = np.random.default_rng(0)
        actions = [rng.uniform(space.low, space.high, (num_envs, *space.shape)).astype(np.float32) for _ in range(16)]
        try:
            return num_envs * time_step_loop(envs.step, actions, steps)
        finally:
            envs.close()

    return measure


def resident_growth(task_id: str, num_envs: int) -> int:
    """VmRSS growth (bytes) of THIS process from before a vector of ``num_envs`` envs is made to after its
    reset and 20 steps. Run in a fresh process: in the bench's own, freed vectors leave pages behind that
    the next one reuses, so its growth reads 0."""
    cls = shoal.mujoco.env_class(task_id)
    before = vm_bytes("VmRSS")
    with make(cls, backend="Multithreading", num_envs=num_envs, max_num_threads=0, seed=0) as vecenv:
        vecenv.reset()
        actions = benchmark.random_actions(vecenv)
        for t in range(20):
            vecenv.step(actions[t % len(actions)])
        return vm_bytes("VmRSS") - before


def vm_bytes(field: str) -> int:
    """A field of /proc/self/status (kB there), in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def in_fresh_process(function, *args):
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return pool.submit(function, *args).result()


def memory_rows(task_id: str, num_envs: int) -> list[list[str]]:
    """Bytes per env: what mj_makeData allocates (nbuffer + narena, reserved whole) and the resident
    growth per env of a fresh process (the pages stepping touches), from vectors of 1 and num_envs + 1 envs
    (the model and the vector's own memory cancel out)."""
    import mujoco

    model = gymnasium.make(task_id).unwrapped.model
    data = mujoco.MjData(model)
    allocated = data.nbuffer + data.narena
    resident = (
        in_fresh_process(resident_growth, task_id, num_envs + 1) - in_fresh_process(resident_growth, task_id, 1)
    ) / num_envs
    return [
        [task_id, "memory per env: mjData allocated", f"{allocated:,} bytes ({allocated / 1024:,.1f} KiB)", "", ""],
        [
            task_id,
            "memory per env: resident (RSS growth)",
            f"{resident:,.0f} bytes ({resident / 1024:,.1f} KiB)",
            "",
            "",
        ],
    ]


def cases_for(task_id: str, args) -> list[tuple[str, object]]:
    n, steps = args.num_envs, args.steps
    cls = shoal.mujoco.env_class(task_id)
    limit = limit_function(task_id)
    cases = [
        ("(a) bare C loop (limit)", lambda: limit(n, steps)),
        ("(a2) two bare C loops at once (2-thread limit)", two_loops_case(limit, n, steps)),
        ("(b) shoal T=0", shoal_case(cls, n, steps, max_num_threads=0)),
        ("(c) shoal T=2", shoal_case(cls, n, steps, max_num_threads=2)),
        ("(d) shoal default", shoal_case(cls, n, steps)),
        ("(e) mujoco.rollout 1 thread", rollout_case(task_id, n, steps, 1)),
        ("(e) mujoco.rollout 2 threads", rollout_case(task_id, n, steps, 2)),
    ]
    envpool = importlib.util.find_spec("envpool")
    if envpool is not None:
        cases += [(f"(f) EnvPool {t} thread(s)", envpool_case(task_id, n, steps, t)) for t in (1, 2)]
    python_steps = max(1, steps // args.python_divisor)
    cases += [
        ("(g) gymnasium SyncVectorEnv", gymnasium_case(task_id, "sync", n, python_steps)),
        (
            f"(g) gymnasium AsyncVectorEnv x{args.async_envs}",
            gymnasium_case(task_id, "async", args.async_envs, python_steps),
        ),
        ("(h) shoal Serial, gymnasium env", python_case(task_id, "Serial", n, python_steps)),
        (
            "(h) shoal Multiprocessing 2 workers",
            python_case(task_id, "Multiprocessing", n, python_steps, num_workers=2),
        ),
        ("(h2) two plain gymnasium loops at once (2-process limit)", two_processes_case(task_id, n, python_steps)),
    ]
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=["HalfCheetah-v5", "Hopper-v5", "Ant-v5", "Humanoid-v5"])
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=500, help="timed steps per env of the native rows")
    parser.add_argument("--python-divisor", type=int, default=5, help="the Python rows time steps / this")
    parser.add_argument("--async-envs", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--markdown", help="also write the report here")
    args = parser.parse_args()
    route_mujoco_warnings()
    available = set(shoal.mujoco.available())
    tasks = [t for t in args.tasks if t in available]
    versions = {d: importlib.metadata.version(d) for d in ("mujoco", "gymnasium")}
    if importlib.util.find_spec("envpool"):
        versions["envpool"] = importlib.metadata.version("envpool")
    info = benchmark.system_info(
        {
            **versions,
            "num_envs": args.num_envs,
            "steps per env": args.steps,
            "repeats": args.repeats,
            "skipped (not in shoal.mujoco yet)": sorted(set(args.tasks) - set(tasks)) or "none",
        }
    )
    rows = []
    for task_id in tasks:
        cases = cases_for(task_id, args)
        samples = {name: [] for name, _ in cases}
        for r in range(args.repeats):  # interleaved: every case once per round
            for name, measure in cases:
                samples[name].append(measure())
                print(f"  {task_id} repeat {r + 1}/{args.repeats}  {name:<40} {samples[name][-1]:>12,.0f}", flush=True)
        limit = statistics.median(samples["(a) bare C loop (limit)"])
        for name, values in samples.items():
            median = statistics.median(values)
            spread = (max(values) - min(values)) / median
            rows.append([task_id, name, f"{median:,.0f}", f"{100 * spread:.0f}%", f"{median / limit:.2f}x"])
        rows += memory_rows(task_id, args.num_envs)
    headers = ["task", "configuration", "env steps/s (median)", "spread", "vs (a)"]
    notes = [f"pid {os.getpid()}; Python rows time {args.steps // args.python_divisor} steps per env."]
    benchmark.publish(benchmark.format_markdown("shoal.mujoco", info, rows, headers, notes), args.markdown)


if __name__ == "__main__":
    main()
