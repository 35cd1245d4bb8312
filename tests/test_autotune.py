"""autotune: interleaved rounds until the budget is spent, ties within the noise, the simplest wins."""

from __future__ import annotations

import numpy as np
import pytest

from shoal.tuning import Candidate, ini_lines, measure_rounds, num_envs_sweep, recommend, ties

# True speeds of a made-up machine: Multithreading T=1 and T=2 are equal within noise, Serial slower.
TRUE_SPS = {
    "Serial n=64": 4.0e6,
    "Multithreading n=64 T=1": 9.0e6,
    "Multithreading n=64 T=2": 9.2e6,
    "Multiprocessing n=64 workers=2": 3.0e6,
    "Multithreading n=128 T=2": 8.8e6,
}


def candidates():
    def vec(label):
        parts = dict(p.split("=") for p in label.split()[1:])
        out = {"backend": label.split()[0], "num_envs": int(parts["n"])}
        if "T" in parts:
            out["max_num_threads"] = int(parts["T"])
        if "workers" in parts:
            out["num_workers"] = int(parts["workers"])
        return out

    return [Candidate(label, vec(label)) for label in TRUE_SPS]


class FakeClock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def run(seed: int, budget: float = 30.0):
    """One autotune run on the made-up machine: each sample takes 1 fake second, noise is +-8%."""
    rng, clock = np.random.default_rng(seed), FakeClock()

    def measure(cand):
        clock.now += 1.0
        return TRUE_SPS[cand.label] * (1 + rng.uniform(-0.08, 0.08))

    cands = candidates()
    rounds = measure_rounds(cands, measure, budget, clock, log=lambda *_: None)
    return cands, rounds, clock.now


def test_rounds_use_the_budget_and_interleave():
    cands, rounds, spent = run(seed=1, budget=30.0)
    assert rounds == 6 and 25 <= spent <= 30  # 5 samples a round; a 7th round would overrun 30 s
    assert all(len(c.samples) == rounds for c in cands)


def test_two_runs_recommend_configurations_within_each_others_spread():
    for seed in range(20):
        first, _, _ = run(seed)
        second, _, _ = run(seed + 1000)
        a, b = recommend(first, 64), recommend(second, 64)
        a_in_second = next(c for c in second if c.label == a.label)
        b_in_first = next(c for c in first if c.label == b.label)
        assert a_in_second in ties(second) and b_in_first in ties(first), (seed, a.label, b.label)


def test_ties_go_to_the_simplest():
    cands, _, _ = run(seed=3)
    tied = {c.label for c in ties(cands)}
    assert {"Multithreading n=64 T=1", "Multithreading n=64 T=2"} <= tied and "Serial n=64" not in tied
    assert recommend(cands, 64).label == "Multithreading n=64 T=1"  # fewer threads, configured num_envs


def test_a_failing_configuration_is_dropped_with_its_reason():
    logged, clock = [], FakeClock()

    def measure(cand):
        clock.now += 1.0
        if cand.label.startswith("Multiprocessing"):
            raise RuntimeError("no fork here")
        return 1.0

    cands = candidates()
    measure_rounds(cands, measure, 0.0, clock, log=logged.append)
    assert all(not c.label.startswith("Multiprocessing") for c in cands)
    assert logged == ["  Multiprocessing n=64 workers=2: skipped (RuntimeError: no fork here)"]


def test_ini_lines_and_the_num_envs_sweep():
    assert ini_lines({"backend": "Multithreading", "num_envs": 64, "pin_threads": False}) == (
        "[vec]\nbackend = Multithreading\nnum_envs = 64\npin_threads = false\n"
    )
    assert num_envs_sweep(1) == [1, 2, 4, 8, 16]
    assert num_envs_sweep(4096) == [1024, 2048, 4096, 8192, 16384]


@pytest.mark.parametrize("seed", [0, 1])
def test_min_rounds_even_when_a_round_is_slow(seed):
    cands, rounds, _ = run(seed, budget=6.0)  # one round takes 5 s: still three rounds for a spread
    assert rounds == 3


def test_when_one_round_costs_more_than_the_budget_the_leaders_still_get_three_samples():
    # The real run that motivated this: 25 configurations whose first round (construction and
    # calibration included) took longer than the whole 60 s budget, leaving one sample each.
    rng, clock, logged = np.random.default_rng(7), FakeClock(), []

    def measure(cand):
        clock.now += 15.0
        return TRUE_SPS[cand.label] * (1 + rng.uniform(-0.08, 0.08))

    cands = candidates()
    rounds = measure_rounds(cands, measure, 60.0, clock, log=logged.append)
    leading = {"Multithreading n=64 T=1", "Multithreading n=64 T=2", "Multithreading n=128 T=2"}
    assert rounds == 3 and {c.label for c in cands if len(c.samples) == 3} == leading
    assert all(len(c.samples) == 1 for c in cands if c.label not in leading)
    assert clock.now <= 3 * 60.0
    assert logged == ["  round 1 used the budget: the next rounds measure the 3 leaders only"]
    assert recommend(cands, 64).label in leading


def test_a_family_whose_sps_stopped_growing_with_num_envs_skips_the_larger_sizes():
    # Serial's SPS is flat in num_envs (and a sample of 16,384 envs takes 20 s to build); the
    # native pool's grows: only the flat family stops early.
    speed = {"Serial": lambda n: 3.0e6, "Multithreading": lambda n: 1.0e6 * n / 1024}
    sizes = num_envs_sweep(4096)
    cands = [Candidate(f"{b} n={n}", {"backend": b, "num_envs": n}) for n in sizes for b in speed]
    clock, logged = FakeClock(), []

    def measure(cand):
        clock.now += 1.0
        return speed[cand.vec["backend"]](cand.vec["num_envs"])

    measure_rounds(cands, measure, 100.0, clock, log=logged.append)
    assert sorted(c.vec["num_envs"] for c in cands if c.vec["backend"] == "Serial") == [1024, 2048]
    assert sorted(c.vec["num_envs"] for c in cands if c.vec["backend"] == "Multithreading") == sizes
    assert logged == [
        f"  Serial n={n}: skipped (SPS stopped growing with num_envs in its family)" for n in (4096, 8192, 16384)
    ]
