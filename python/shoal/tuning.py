"""`shoal autotune`: the configured env measured over backends and threads/workers (num_envs too when
asked: it is the user's training hyperparameter), in interleaved rounds until the budget is spent;
configurations within the noise of the best are ties, and the simplest of them is recommended, with a
warning when the machine was too busy for the verdict.

With ``--policy-us`` the trainer's loop is measured instead of the envs alone: a GPU stand-in policy
(policy_standin.py) between each recv and send, and pipelined candidates beside the synchronous ones:
two buffers of the configured batch (num_envs doubled, batch_size kept), so that one buffer's envs step
while the policy runs on the other and the policy still sees as many rows a call."""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import benchmark, cpus
from .arguments import bounded_float
from .backends.registry import backend_options
from .config import VEC_KEYS, Config, load, resolve_env
from .errors import APIUsageError
from .native import is_native_env
from .policy_standin import PolicyStandIn
from .quiet import third_party_warnings_kept_out
from .sample_deadline import sample_deadline
from .validation import is_integer
from .vector import make

#: a budget over a day is a typo; a policy call over a second leaves no budget a sample
MAX_BUDGET, MAX_POLICY_US = 86_400.0, 1e6
#: a sample still running this long after the budget (a share of it, at least MIN_GRACE s) is cut: a
#: sample's expected time is a guess, and a guess a little short should not cost its configuration
GRACE_SHARE, MIN_GRACE = 0.1, 1.0
#: policy calls of a candidate's first sample: its calibration's batch steps and at least one timed one
FIRST_SAMPLE_CALLS = 6
#: simpler first: fewer moving parts (no threads, then threads, then processes, then a cluster)
BACKEND_SIMPLICITY = {"Serial": 0, "PufferEnv": 1, "Multithreading": 2, "Multiprocessing": 3, "Ray": 4}


def num_envs_sweep(num_envs: int, sizes: int = 5) -> list[int]:
    """Powers of two around the configured num_envs (at least ``sizes`` of them, however small it is)."""
    low = max(1, num_envs // 4)
    return sorted({num_envs, *(low * 2**i for i in range(sizes))})


def candidate_configs(
    config: Config, sizes: list[int] | None = None, pipelined: bool = False
) -> list[tuple[str, dict]]:
    """(label, [vec] settings) pairs applicable to the configured env. Each size is a batch: the rows a
    recv returns. ``pipelined`` adds, per size n, two buffers of n (num_envs = 2n, batch_size = n)."""
    creator = resolve_env(config)
    cores = cpus.physical_cores()
    sizes = sizes or [rows_per_call(config.vec) if pipelined else config.vec.get("num_envs", 1)]
    out = []
    if is_native_env(creator):
        for n in sizes:
            for threads in range(0, cores + 1):
                out.append(
                    (
                        f"Multithreading n={n} T={threads}",
                        dict(backend="Multithreading", num_envs=n, max_num_threads=threads),
                    )
                )
            if pipelined:
                for threads in range(1, cores + 1):  # the driver thread counts: 1 = the driver alone
                    out.append(
                        (
                            f"Multithreading n={2 * n} batch={n} T={threads}",
                            dict(backend="Multithreading", num_envs=2 * n, batch_size=n, max_num_threads=threads),
                        )
                    )
    for n in sizes:
        out.append((f"Serial n={n}", dict(backend="Serial", num_envs=n)))
        for workers in range(2, cores + 1):
            if n % workers == 0:
                out.append(
                    (
                        f"Multiprocessing n={n} workers={workers}",
                        dict(backend="Multiprocessing", num_envs=n, num_workers=workers, batch_size=n),
                    )
                )
            # A batch of whole workers' envs: half the workers step while the policy runs on the others.
            if pipelined and workers % 2 == 0 and (2 * n) % workers == 0:
                out.append(
                    (
                        f"Multiprocessing n={2 * n} batch={n} workers={workers}",
                        dict(backend="Multiprocessing", num_envs=2 * n, num_workers=workers, batch_size=n),
                    )
                )
    return out


def rows_per_call(vec: dict) -> int:
    """The rows one recv returns (what a policy sees per call): batch_size where it is set below
    num_envs, else num_envs."""
    num_envs = vec.get("num_envs", 1)
    batch = vec.get("batch_size")
    return batch if is_integer(batch) and 0 < batch < num_envs else num_envs


def is_pipelined(vec: dict) -> bool:
    return rows_per_call(vec) < vec["num_envs"]


def simplicity(vec: dict, configured_rows: int) -> tuple:
    """Sort key: simpler backend, not pipelined, fewer threads/workers, a batch nearer the configured one."""
    helpers = vec.get("max_num_threads", vec.get("num_workers", 0))
    return (
        BACKEND_SIMPLICITY.get(vec["backend"], 9),
        is_pipelined(vec),
        helpers,
        abs(math.log2(rows_per_call(vec) / configured_rows)),
    )


@dataclass
class Candidate:
    label: str
    vec: dict
    samples: list[float] = field(default_factory=list)

    @property
    def family(self) -> tuple:
        """The settings other than num_envs: one curve over the num_envs sweep (pipelined or not)."""
        settings = tuple(sorted((k, v) for k, v in self.vec.items() if k not in ("num_envs", "batch_size")))
        return (*settings, ("pipelined", is_pipelined(self.vec)))

    @property
    def median(self) -> float:
        ordered = sorted(self.samples)
        mid = len(ordered) // 2
        return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2

    @property
    def low(self) -> float:
        return min(self.samples)

    @property
    def high(self) -> float:
        return max(self.samples)


def measure_rounds(
    candidates: list[Candidate], measure: Callable, budget: float, clock=time.monotonic, log=print
) -> int:
    """Samples every candidate once per round, interleaved, while ``budget`` seconds of ``clock`` last,
    and returns the rounds measured. A sample starts only when it can end inside the budget: its
    expected time is the candidate's last sample's (build and close included), or for a first sample
    (calibration included) the longest first sample so far. When the budget cannot afford another full
    round before MIN_ROUNDS, the next rounds measure only the leaders (see ``leaders``), so that they get
    a spread if any candidates do. A candidate that cannot run, or that the budget left unmeasured, is
    dropped from ``candidates`` with its reason."""
    started, rounds, active = clock(), 0, list(candidates)
    last: dict[int, float] = {}  # id(candidate) -> seconds its last sample took
    first_samples: list[float] = []
    unmeasured: list[str] = []
    note = ""  # said when the round it announces measures a sample

    def drop(cand: Candidate, why: str) -> None:
        log(f"  {cand.label}: skipped ({why})")
        active.remove(cand)
        candidates.remove(cand)

    while active:
        round_started, measured = clock(), 0
        for cand in list(active):
            if rounds == 0 and _stopped_growing(cand, active):
                drop(cand, "SPS stopped growing with num_envs in its family")
                continue
            expected = last.get(id(cand), max(first_samples, default=0.0))
            if clock() - started + expected > budget:
                active.remove(cand)  # its samples so far stay
                if not cand.samples:
                    unmeasured.append(cand.label)
                    candidates.remove(cand)
                continue
            if note:
                log(note)
                note = ""
            sample_started = clock()
            try:
                cand.samples.append(measure(cand))
            except Exception as error:  # a configuration that cannot run is reported, not fatal
                drop(cand, f"{type(error).__name__}: {error}")
                continue
            last[id(cand)] = clock() - sample_started
            measured += 1
            if len(cand.samples) == 1:
                first_samples.append(last[id(cand)])
        rounds += measured > 0
        spent, took = clock() - started, clock() - round_started
        if not active or spent + took <= budget:
            continue
        if rounds >= MIN_ROUNDS:
            break
        kept = leaders(active)
        if len(kept) < len(active):
            leaders_text = f"{len(kept)} leaders" if len(kept) > 1 else "leader"
            note = f"  round {rounds} used the budget: the next rounds measure the {leaders_text} only"
        active = kept
    if unmeasured:
        log(
            f"  not measured, the {budget:g} s budget spent before their first sample could end: "
            f"{', '.join(unmeasured)} (a larger --budget measures them)"
        )
    return rounds


#: a larger num_envs is worth measuring only if the family's last step up gained at least this much
GROWTH = 1.10


def _stopped_growing(cand: Candidate, measured: list[Candidate]) -> bool:
    """True when the same backend and threads/workers at the two next smaller num_envs were measured
    and the larger of them was not GROWTH times faster: per-env cost dominates, and bigger batches
    only cost construction time (Serial and Multiprocessing of 16,384 envs take 20 s a sample)."""
    smaller = sorted(
        (c for c in measured if c.family == cand.family and c.samples and c.vec["num_envs"] < cand.vec["num_envs"]),
        key=lambda c: c.vec["num_envs"],
    )
    return len(smaller) >= 2 and smaller[-1].samples[0] < GROWTH * smaller[-2].samples[0]


#: rounds before autotune stops measuring (each leader then has a spread of 3 samples)
MIN_ROUNDS = 3
#: a leader's median is at least this share of the best median; at most MAX_LEADERS of them
LEADER_SHARE, MAX_LEADERS = 0.75, 6


def leaders(candidates: list[Candidate]) -> list[Candidate]:
    """The candidates worth more samples when the budget is short: the best and those whose median
    is within LEADER_SHARE of it, fastest first, at most MAX_LEADERS."""
    ranked = sorted(candidates, key=lambda c: -c.median)
    best = ranked[0].median
    return [c for c in ranked if c.median >= LEADER_SHARE * best][:MAX_LEADERS]


def ties(candidates: list[Candidate]) -> list[Candidate]:
    """The best median's candidate and every one whose samples reach its lowest sample (the noise)."""
    best = max(candidates, key=lambda c: c.median)
    return [c for c in candidates if c.high >= best.low]


def recommend(candidates: list[Candidate], configured_envs: int) -> Candidate:
    return min(ties(candidates), key=lambda c: simplicity(c.vec, configured_envs))


def ini_lines(vec: dict) -> str:
    return "[vec]\n" + "".join(f"{k} = {_ini(v)}\n" for k, v in vec.items())


def _ini(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _measure_with(config: Config, seconds: float, policy: PolicyTime | None = None) -> Callable:
    """A sample of a candidate: build it, time about ``seconds`` of stepping (of the loop with a
    stand-in for the policy when given), close it."""
    creator, seed = resolve_env(config), config.vec.get("seed", 0)
    steps: dict[str, int] = {}

    def measure(cand: Candidate) -> float:
        vec = dict(cand.vec)
        backend, n = vec.pop("backend"), vec.pop("num_envs")
        with make(creator, env_kwargs=config.env_kwargs, backend=backend, num_envs=n, seed=seed, **vec) as vecenv:
            stand_in = None
            if policy is not None:
                # A pipelined Multithreading vector takes the waiting caller's help, as with a GPU.
                wait = getattr(vecenv, "step_while_waiting", None)
                stand_in = PolicyStandIn(policy.latency_s, policy.cpu_s, wait=wait)
            if cand.label not in steps:  # calibrate once, so later samples take about ``seconds``
                sps = benchmark.time_vecenv(vecenv, vecenv.agents_per_batch * 5, warmup_steps=3, policy=stand_in)
                steps[cand.label] = max(vecenv.agents_per_batch, int(sps * seconds))
            return benchmark.time_vecenv(vecenv, steps[cand.label], warmup_steps=3, policy=stand_in)

    return measure


@dataclass(frozen=True)
class PolicyTime:
    """A trainer's policy per call: ``latency_s`` in all, ``cpu_s`` of it on the caller's CPU."""

    latency_s: float
    cpu_s: float

    @classmethod
    def from_args(cls, policy_us: float | None, cpu_share: float) -> PolicyTime | None:
        if policy_us is None:
            return None
        if not (math.isfinite(policy_us) and policy_us > 0):
            raise APIUsageError(f"--policy-us must be a positive number of microseconds, got {policy_us:g}")
        if not (0 <= cpu_share <= 1):
            raise APIUsageError(f"--policy-cpu-share must be a share between 0 and 1, got {cpu_share:g}")
        return cls(latency_s=policy_us * 1e-6 * (1 - cpu_share), cpu_s=policy_us * 1e-6 * cpu_share)


#: the fastest configuration's samples spreading more than this share of its median (lowest to
#: highest) say the timings moved more than the ranking can tell apart
SPREAD_SHARE = 0.25


def load_warnings(before, after, candidates: list[Candidate]) -> list[str]:
    """Why this machine was too busy for a verdict: others' CPU use or steal over the measurement
    (benchmark.busy_reasons), and the spread of the fastest configuration's repeated samples."""
    reasons = benchmark.busy_reasons(before, after)
    best = max(candidates, key=lambda c: c.median)
    if len(best.samples) > 1 and (best.high - best.low) / best.median > SPREAD_SHARE:
        reasons.append(
            f"the fastest configuration's {len(best.samples)} samples spread "
            f"{100 * (best.high - best.low) / best.median:.0f} % (lowest to highest)"
        )
    return reasons


def verdict_warnings(reasons: list[str], tied: list[Candidate]) -> list[str]:
    """The warning lines printed with the recommendation: the load's reasons, and ties on a busy machine."""
    if not reasons:
        return []
    lines = [
        "warning: the machine was too busy for a reliable verdict: "
        + "; ".join(reasons)
        + ". Rerun on a quiet machine, or with a larger --budget."
    ]
    if len(tied) > 1:
        lines.append(
            f"warning: {len(tied)} configurations tie on a busy machine: the load may have evened them out, "
            "so the simplest of them, recommended below, may not be the fastest on a quiet one."
        )
    return lines


def cmd_autotune(args, overrides) -> int:
    config = load(args.config, overrides)
    policy = PolicyTime.from_args(args.policy_us, args.policy_cpu_share)
    if policy is not None and FIRST_SAMPLE_CALLS * args.policy_us * 1e-6 > args.budget:
        raise APIUsageError(
            f"--policy-us {args.policy_us:g}: a first sample calls the policy at least {FIRST_SAMPLE_CALLS} times "
            f"({FIRST_SAMPLE_CALLS * args.policy_us * 1e-6:g} s), past --budget {args.budget:g} s; raise the budget"
        )
    # With a policy in the loop the batch a call sees is the hyperparameter kept (a pipelined config's
    # num_envs holds several batches); without one, num_envs as configured.
    configured = rows_per_call(config.vec) if policy is not None else config.vec.get("num_envs", 1)
    sizes = num_envs_sweep(configured) if args.search_num_envs else [configured]
    settings = candidate_configs(config, sizes, pipelined=policy is not None)
    candidates = [Candidate(label, vec) for label, vec in settings]
    per_sample = max(0.05, args.budget / (4 * len(candidates)))
    print(
        f"shoal autotune: {len(candidates)} configurations, interleaved rounds of ~{per_sample:.2f} s samples, budget {args.budget:.0f} s"
    )
    if args.search_num_envs:
        print(
            f"  num_envs searched over {sizes}: a different num_envs changes your trainer's batch (what it "
            "learns from), not only its speed"
        )
    elif configured < config.vec.get("num_envs", 1):
        print(f"  the batch kept at {configured} rows a call: it is your training hyperparameter")
    else:
        print(
            f"  num_envs kept at {configured}: it is your training hyperparameter (--search-num-envs also searches it)"
        )
    if policy is not None:
        print(
            f"  the loop measured with a stand-in for your policy: {args.policy_us:g} us a call, "
            f"{policy.cpu_s * 1e6:g} us of it on the caller's CPU and the rest waited for without a core, "
            f"as for a GPU; pipelined candidates step two buffers of the batch (num_envs doubled, batch_size "
            "kept: your policy sees as many rows a call)"
        )
    sys.stdout.flush()  # before progress lines on stderr, so that a log keeps the order
    progress = benchmark.Progress("shoal autotune: measuring", None, "sample")
    measure = _measure_with(config, per_sample, policy)
    hard_end = time.monotonic() + args.budget + max(MIN_GRACE, GRACE_SHARE * args.budget)

    def measured(cand: Candidate) -> float:
        progress.describe(cand.label)
        try:
            with sample_deadline(hard_end - time.monotonic(), args.budget):
                return measure(cand)
        finally:
            progress.update(1)

    before = benchmark.machine_times()
    with third_party_warnings_kept_out() as kept_out:
        rounds = measure_rounds(candidates, measured, args.budget)
    after = benchmark.machine_times()
    progress.close()
    if not candidates:
        print("shoal autotune: no configuration could run", file=sys.stderr)
        return 1
    best = recommend(candidates, configured)
    tied = ties(candidates)
    print(
        f"\n{rounds} round{'s' if rounds != 1 else ''}; median SPS [lowest, highest sample] (samples); = marks a tie with the best (within its noise):"
    )
    for cand in sorted(candidates, key=lambda c: -c.median)[:12]:
        mark = "=" if cand in tied else " "
        spread = f"[{cand.low:,.0f}, {cand.high:,.0f}] ({len(cand.samples)})"
        print(f"  {mark} {cand.label:<40} {cand.median:>13,.0f}  {spread}")
    if kept_out:
        print(f"({kept_out} third-party warnings kept out of this output)")
    warnings = verdict_warnings(load_warnings(before, after, candidates), tied)
    if warnings:
        print()
    for line in warnings:
        print(line)
    print(
        f"\nrecommended [vec] ({'simplest of ' + str(len(tied)) + ' ties' if len(tied) > 1 else 'fastest'}): {best.label}"
    )
    print(ini_lines(best.vec), end="")
    rows = rows_per_call(best.vec)
    if is_pipelined(best.vec) and rows == configured:
        print(
            f"(num_envs {best.vec['num_envs']} in {best.vec['num_envs'] // rows} buffers of batch_size {rows}: "
            f"your policy still sees {rows} rows a call, while the other buffer's envs step)"
        )
    elif rows != configured:
        print(f"(num_envs {configured} -> {rows}: retune what depends on it in your trainer)")
    if args.write:
        path = Path(config.path)
        takes = {"backend", "num_envs", "seed", *backend_options(best.vec["backend"])}
        unused = set(VEC_KEYS) - takes  # the old backend's keys, which the new one refuses
        if "batch_size" not in best.vec:
            unused.add("batch_size")  # a pipelined file's batch_size would pipeline the recommendation
        text = update_config_text(path.read_text(), "vec", {k: _ini(v) for k, v in best.vec.items()}, unused)
        path.write_text(text)
        load(path)  # the written file must load
        print(f"updated {path}")
    return 0


def update_config_text(text: str, section: str, values: dict, drop=frozenset()) -> str:
    """Sets ``key = value`` lines of one section in place, keeping comments, order and other sections;
    lines of the keys in ``drop`` are commented out."""
    import re

    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip() == f"[{section}]"), None)
    if start is None:
        return text.rstrip("\n") + f"\n\n[{section}]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())
    end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    pending = dict(values)
    for i in range(start + 1, end):
        match = re.match(r"^(\s*)([A-Za-z_][\w.]*)(\s*=\s*)([^;#\n]*?)(\s*[;#].*)?(\n?)$", lines[i])
        if match and match.group(2) in drop and match.group(2) not in pending:
            lines[i] = "; " + lines[i]
        elif match and match.group(2) in pending:
            value = pending.pop(match.group(2))
            comment = match.group(5) or ""
            lines[i] = f"{match.group(1)}{match.group(2)}{match.group(3)}{value}{comment}{match.group(6)}"
    insert_at = end
    while insert_at > start + 1 and not lines[insert_at - 1].strip():
        insert_at -= 1
    lines[insert_at:insert_at] = [f"{k} = {v}\n" for k, v in pending.items()]
    return "".join(lines)


def add_commands(sub) -> None:
    tune = sub.add_parser(
        "autotune", help="search backend x threads/workers (x num_envs if asked), recommend the simplest of the fastest"
    )
    tune.add_argument("--config")
    tune.add_argument(
        "--budget",
        type=bounded_float("budget", 0, MAX_BUDGET, "a number of seconds", "a budget over a day", above_minimum=True),
        default=60.0,
        help="seconds to spend measuring (default 60): no sample starts that cannot end inside it",
    )
    tune.add_argument("--write", action="store_true", help="write the recommended [vec] settings into the config")
    tune.add_argument(
        "--search-num-envs",
        action="store_true",
        help="also search num_envs (powers of two around the configured one); without it num_envs, your "
        "training hyperparameter, is kept",
    )
    tune.add_argument(
        "--policy-us",
        type=bounded_float(
            "policy-us", 0, MAX_POLICY_US, "a number of microseconds", "a policy call over a second", above_minimum=True
        ),
        help="measure the trainer's loop: your policy's time per call in microseconds (a GPU forward with "
        "its copies), taken by a stand-in between each recv and send; adds pipelined candidates",
    )
    tune.add_argument(
        "--policy-cpu-share",
        type=bounded_float("policy-cpu-share", 0, 1, "a share", "a share is at most 1"),
        default=0.2,
        help="share of --policy-us spent on the caller's CPU (kernel launches); the rest is waited for "
        "without a core, as for a GPU (default 0.2)",
    )
    tune.set_defaults(func=cmd_autotune)
