"""Throughput measurement, shared by bench/ and `shoal bench`: medians of repeated runs, each beside
its baseline measured in the same run.

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
import re
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
    vecenv,
    agent_steps: int,
    warmup_steps: int = 20,
    pause_us: float = 0.0,
    exclude_pause: bool = False,
    policy: Callable | None = None,
) -> float:
    """Agent steps per second of send/recv (async API when the backend batches). With ``pause_us``,
    a busy wait stands in for a policy between steps; ``exclude_pause`` leaves it out of the time.
    ``policy`` (a PolicyStandIn, say) is called between each recv and the next send, and timed: the
    trainer's loop rather than the envs alone."""
    actions = warm_up(vecenv, warmup_steps)
    batches = max(1, agent_steps // vecenv.agents_per_batch)
    paused = 0.0
    start = time.perf_counter()
    for i in range(batches):
        if pause_us:
            pause_start = time.perf_counter()
            busy_wait(pause_us)
            paused += time.perf_counter() - pause_start
        if policy is not None:
            policy()
        vecenv.send(actions[i % 16])
        vecenv.recv()
    elapsed = time.perf_counter() - start - (paused if exclude_pause else 0.0)
    return batches * vecenv.agents_per_batch / elapsed


def run_cases(
    cases: list[Case], repeats: int = 3, log=print, progress: bool | None = False, what: str = "samples"
) -> list[Case]:
    """Measures every case ``repeats`` times, interleaved. ``progress``: True, a bar on stderr; None,
    a bar on a terminal and a line every PROGRESS_INTERVAL seconds elsewhere (see Progress); False, none."""
    bar = Progress(what, repeats * len(cases), "sample", mode=progress)
    for r in range(repeats):
        for case in cases:
            bar.describe(case.name)
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


#: seconds between two progress lines where the output is not a terminal (a log file, CI): often
#: enough to show a run is alive, rarely enough to keep a log readable
PROGRESS_INTERVAL = 10.0


class Progress:
    """Progress of a long loop on stderr. On a terminal a tqdm bar; elsewhere (``mode=None`` and stderr
    not a terminal) a plain line every ``interval`` seconds, "<what>: 1,234 of 5,678 <unit>s (22 %),
    12 s", since a bar's carriage returns make no lines in a log and a silent minute reads as a hang.
    ``mode``: None, decide by stderr; True, always a bar; False, nothing."""

    def __init__(
        self,
        what: str,
        total: int | None,
        unit: str,
        mode: bool | None = None,
        file=None,
        interval: float | None = None,
        clock=time.monotonic,
    ):
        self.file = file if file is not None else sys.stderr
        self.what, self.total, self.unit, self.clock = what, total, unit, clock
        self.interval = PROGRESS_INTERVAL if interval is None else interval
        self.done, self.note = 0, ""
        self.started = self.last = clock()
        is_tty = _isatty(self.file)
        self.bar = None
        self.lines = mode is None and not is_tty
        if mode is True or (mode is None and is_tty):
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit=unit, unit_scale=True, file=self.file, mininterval=0.5)

    def describe(self, note: str) -> None:
        """What the loop is doing now (a bar's description, the tail of a line)."""
        self.note = note
        if self.bar is not None:
            self.bar.set_description(f"{note[:40]:<40}", refresh=False)  # drawn at tqdm's own pace
            self.bar.update(0)

    def update(self, n: int) -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
        elif self.lines:
            now = self.clock()
            if now - self.last >= self.interval:
                self.last = now
                self.line(now)

    def line(self, now: float | None = None) -> None:
        """Writes the plain progress line now."""
        now = self.clock() if now is None else now
        if self.total and self.done <= self.total:
            units = self.unit + ("s" if self.total != 1 else "")
            count = f"{self.done:,} of {self.total:,} {units} ({100 * self.done / self.total:.0f} %)"
        else:  # no total, or a loop that runs past its count (a timed window's minimum seconds)
            count = f"{self.done:,} {self.unit}" + ("s" if self.done != 1 else "")
        note = f": {self.note}" if self.note else ""
        print(f"{self.what}: {count}, {now - self.started:.0f} s{note}", file=self.file, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _isatty(file) -> bool:
    try:
        return file.isatty()
    except (AttributeError, ValueError):  # a closed or file-like object without a terminal
        return False


@contextlib.contextmanager
def competing_process(cpus: set[int] | None = None):
    """One CPU-bound process running for the duration (a busy neighbour on the machine), on ``cpus``
    only when given (Linux)."""
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    proc = subprocess.Popen([sys.executable, "-c", "while True: pass"], preexec_fn=pin)
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
    from shoal import _native, cpus

    info = {
        "shoal": shoal.__version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "gymnasium": gymnasium.__version__,
        "os": f"{platform.system()} {platform.release()}",
        "cpu": cpu_model(),
        "physical cores": _native.physical_cores(),
        "usable cpus (affinity and cgroup quota)": cpus.usable_cpus(),
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


@dataclass(frozen=True)
class MachineTimes:
    """What the CPUs this process may use had done by a moment: /proc/stat's counters (Linux; None
    elsewhere) and this process's own CPU time, its reaped children's (Multiprocessing workers) included."""

    wall: float
    own_cpu: float
    busy: float | None = None  # CPU-seconds of work on every CPU (user, nice, system, irq, softirq)
    steal: float | None = None  # CPU-seconds a hypervisor gave to other guests
    total: float | None = None  # CPU-seconds elapsed on every CPU, idle included
    cpus: int = 1
    load: float | None = None  # 1-minute load average


def machine_times() -> MachineTimes:
    times = os.times()
    own = times.user + times.system + times.children_user + times.children_system
    load = None
    with contextlib.suppress(OSError, AttributeError):
        load = os.getloadavg()[0]
    base = dict(wall=time.monotonic(), own_cpu=own, cpus=os.cpu_count() or 1, load=load)
    try:
        with open("/proc/stat") as f:
            lines = f.read().splitlines()
    except OSError:
        return MachineTimes(**base)
    per_cpu = {}
    for line in lines:
        match = re.match(r"cpu(\d+) (.*)", line)
        if match:
            per_cpu[int(match.group(1))] = [int(x) for x in match.group(2).split()]
    allowed = _allowed_cpus()
    if not allowed or not allowed <= per_cpu.keys():  # CPUs /proc/stat does not list: the machine's total
        allowed = set(per_cpu)
    # Only the CPUs this process may run on: others busy elsewhere do not compete with it.
    fields = [sum(column) for column in zip(*(per_cpu[cpu] for cpu in allowed))] if allowed else []
    if not fields:
        fields = [int(x) for x in lines[0].split()[1:]]  # the "cpu" line: every CPU summed
    fields += [0] * (8 - len(fields))
    user, nice, system, idle, iowait, irq, softirq, steal = fields[:8]  # clock ticks
    tick = os.sysconf("SC_CLK_TCK")
    base["cpus"] = len(allowed) or base["cpus"]
    return MachineTimes(
        **base,
        busy=(user + nice + system + irq + softirq) / tick,
        steal=steal / tick,
        total=sum(fields[:8]) / tick,
    )


def _allowed_cpus() -> set[int]:
    """The CPUs this process may run on, from /proc/self/status (read beside /proc/stat, whose per-CPU
    lines it selects); empty where the file does not say."""
    try:
        with open("/proc/self/status") as f:
            text = next((line.split(":", 1)[1] for line in f if line.startswith("Cpus_allowed_list:")), "")
    except OSError:
        return set()
    cpus: set[int] = set()
    for part in text.strip().split(","):
        first, _, last = part.partition("-")
        if first.isdigit():
            cpus.update(range(int(first), int(last or first) + 1) if (last or first).isdigit() else ())
    return cpus


#: other processes using more than this share of the machine's CPUs while we measure compete with
#: the configurations measured (a thread count that ties may be one the load evened out)
OTHERS_SHARE = 0.25
#: a hypervisor taking more than this share of CPU time (steal) makes timings the host's, not ours
STEAL_SHARE = 0.05
#: a 1-minute load average above this share of the CPUs (where /proc/stat cannot say more)
LOAD_SHARE = 0.5


def busy_reasons(before: MachineTimes, after: MachineTimes) -> list[str]:
    """Why the machine was too busy between two snapshots for timings to rank configurations: each
    reason names its measure and its value; empty when nothing says so."""
    reasons = []
    wall = after.wall - before.wall
    if before.busy is not None and after.busy is not None and wall > 0:
        others = (after.busy - before.busy) - (after.own_cpu - before.own_cpu)
        others_cpus = max(0.0, others / wall)
        if others_cpus > OTHERS_SHARE * after.cpus:
            reasons.append(
                f"other processes kept {others_cpus:.1f} of the {after.cpus} CPU{'s' if after.cpus != 1 else ''} "
                "this process may use busy while measuring"
            )
        elapsed = after.total - before.total
        stolen = (after.steal - before.steal) / elapsed if elapsed > 0 else 0.0
        if stolen > STEAL_SHARE:
            reasons.append(f"the hypervisor took {100 * stolen:.0f} % of CPU time (steal)")
    elif before.load is not None and before.load > LOAD_SHARE * before.cpus:
        reasons.append(f"the load average was {before.load:.2f} on {before.cpus} CPUs when measuring began")
    return reasons
