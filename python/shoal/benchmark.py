"""Throughput measurement with the methodology of seed 001, shared by bench/ and `shoal bench`.

What is timed: send + recv of a built, reset and warmed-up vector env, over a fixed number of batch
steps, with valid random actions generated in advance (no policy unless ``pause_us`` asks for a
stand-in: a busy wait between steps). Construction, reset and warm-up are not timed. Each case runs
``repeats`` times, cases interleaved round-robin so machine noise hits them alike; we report every
sample, the median and the spread (max - min) / median.
"""

from __future__ import annotations

import contextlib
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class Case:
    """One configuration to measure: ``build()`` returns a fresh vector env."""

    name: str
    build: Callable
    agent_steps: int
    warmup_steps: int = 20
    pause_us: float = 0.0
    exclude_pause: bool = False  # time only send+recv, not the stand-in policy between steps
    samples: list = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        return (max(self.samples) - min(self.samples)) / self.median if self.samples else float("nan")


def busy_wait(microseconds: float) -> None:
    end = time.perf_counter() + microseconds * 1e-6
    while time.perf_counter() < end:
        pass


def random_actions(vecenv, batches: int = 16, seed: int = 0) -> list:
    space = vecenv.single_action_space
    rng = np.random.default_rng(seed)
    n = vecenv.agents_per_batch
    if hasattr(space, "nvec"):
        return [(rng.random((n, *space.shape)) * space.nvec).astype(np.int32) for _ in range(batches)]
    if hasattr(space, "n"):
        return [rng.integers(0, space.n, size=n, dtype=np.int32) for _ in range(batches)]
    return [rng.uniform(space.low, space.high, (n, *space.shape)).astype(np.float32) for _ in range(batches)]


def warm_up(vecenv, warmup_steps: int = 20) -> list:
    """What every timed loop here does first: reset with seed 0 and step the rows of random_actions(vecenv)
    in turn ``warmup_steps`` times; returns the rows, which the timed steps then take from row 0 again."""
    actions = random_actions(vecenv)
    vecenv.async_reset(0)
    vecenv.recv()
    for i in range(warmup_steps):
        vecenv.send(actions[i % len(actions)])
        vecenv.recv()
    return actions


def time_vecenv(
    vecenv, agent_steps: int, warmup_steps: int = 20, pause_us: float = 0.0, exclude_pause: bool = False
) -> float:
    """Agent steps per second of send/recv (async API when the backend batches). With ``pause_us``,
    a busy wait stands in for a policy between steps; ``exclude_pause`` leaves it out of the time."""
    actions = warm_up(vecenv, warmup_steps)
    batches = max(1, agent_steps // vecenv.agents_per_batch)
    paused = 0.0
    start = time.perf_counter()
    for i in range(batches):
        if pause_us:
            pause_start = time.perf_counter()
            busy_wait(pause_us)
            paused += time.perf_counter() - pause_start
        vecenv.send(actions[i % 16])
        vecenv.recv()
    elapsed = time.perf_counter() - start - (paused if exclude_pause else 0.0)
    return batches * vecenv.agents_per_batch / elapsed


def run_cases(cases: list[Case], repeats: int = 3, log=print, progress: bool = False) -> list[Case]:
    """Measures every case ``repeats`` times, interleaved (a tqdm bar on stderr with ``progress``)."""
    from tqdm import tqdm

    bar = tqdm(total=repeats * len(cases), unit="sample", disable=not progress, file=sys.stderr)
    for r in range(repeats):
        for case in cases:
            bar.set_description(f"{case.name[:40]:<40}")
            bar.update(0)
            vecenv = case.build()
            try:
                sps = time_vecenv(vecenv, case.agent_steps, case.warmup_steps, case.pause_us, case.exclude_pause)
            finally:
                vecenv.close()
            case.samples.append(sps)
            bar.update(1)
            log(f"  repeat {r + 1}/{repeats}  {case.name:<48} {sps:>14,.0f} SPS")
    bar.close()
    return cases


@contextlib.contextmanager
def competing_process():
    """One CPU-bound process running for the duration (a busy neighbour on the machine)."""
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    time.sleep(0.2)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def system_info(extra: dict | None = None) -> dict:
    import gymnasium

    import shoal
    from shoal import _native

    info = {
        "shoal": shoal.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "gymnasium": gymnasium.__version__,
        "os": f"{platform.system()} {platform.release()}",
        "cpu": cpu_model(),
        "physical cores": _native.physical_cores(),
        "logical cpus": os.cpu_count(),
        "load average (1 min) at start": f"{os.getloadavg()[0]:.2f}",
    }
    info.update(extra or {})
    return info


def format_markdown(title: str, info: dict, rows: list[list], headers: list[str], notes: list[str]) -> str:
    lines = [f"## {title}", ""]
    lines += [f"- {k}: {v}" for k, v in info.items()]
    lines += ["", "| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    lines += [""] + [f"{n}" for n in notes]
    return "\n".join(lines) + "\n"


def publish(report: str, markdown_path: str | None) -> None:
    """Prints a report and, if a path is given, writes it there (creating the folder)."""
    print(report)
    if markdown_path:
        path = Path(markdown_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(report)


def case_row(case: Case, baseline: Case | None = None) -> list:
    samples = ", ".join(f"{s / 1e6:.3f}M" if s >= 1e6 else f"{s / 1e3:.1f}K" for s in case.samples)
    ratio = f"{case.median / baseline.median:.2f}x" if baseline is not None else ""
    return [case.name, f"{case.median:,.0f}", f"{100 * case.spread:.0f}%", samples, ratio]
