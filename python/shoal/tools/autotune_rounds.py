"""What `shoal autotune` measures: every candidate sampled in interleaved rounds while the budget
lasts (the leaders only once a round no longer fits), and one sample: the candidate built, its
stepping timed (with a stand-in for the trainer's policy when asked), closed."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import APIUsageError
from ..vector import make
from . import benchmark
from .autotune_candidates import Candidate
from .config import Config, resolve_env
from .policy_standin import PolicyStandIn


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
