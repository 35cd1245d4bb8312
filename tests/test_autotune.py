"""autotune: interleaved rounds until the budget is spent, ties within the noise, the simplest wins;
num_envs is kept unless asked for, and a machine too busy for the verdict is named."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from shoal import benchmark
from shoal.benchmark import MachineTimes, busy_reasons
from shoal.tuning import (
    Candidate,
    ini_lines,
    load_warnings,
    measure_rounds,
    num_envs_sweep,
    recommend,
    ties,
    verdict_warnings,
)

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
    measure_rounds(cands, measure, 10.0, clock, log=logged.append)
    assert all(not c.label.startswith("Multiprocessing") for c in cands) and len(cands) == 4
    assert logged == ["  Multiprocessing n=64 workers=2: skipped (RuntimeError: no fork here)"]


def test_ini_lines_and_the_num_envs_sweep():
    assert ini_lines({"backend": "Multithreading", "num_envs": 64, "pin_threads": False}) == (
        "[vec]\nbackend = Multithreading\nnum_envs = 64\npin_threads = false\n"
    )
    assert num_envs_sweep(1) == [1, 2, 4, 8, 16]
    assert num_envs_sweep(4096) == [1024, 2048, 4096, 8192, 16384]


@pytest.mark.parametrize("seed", [0, 1])
def test_when_a_round_is_slow_the_leaders_get_what_is_left_of_the_budget(seed):
    cands, rounds, spent = run(seed, budget=8.0)  # a round takes 5 s: a second one only for leaders
    assert spent <= 8.0 and rounds == 2
    leading = {"Multithreading n=64 T=1", "Multithreading n=64 T=2", "Multithreading n=128 T=2"}
    assert sum(len(c.samples) for c in cands) == 8 and {c.label for c in cands if len(c.samples) == 2} <= leading


def test_no_sample_starts_that_cannot_end_inside_the_budget():
    # The real runs that motivated this: `autotune --budget 60` took 155 s (three rounds were
    # guaranteed, up to 3 x the budget). Samples here cost 15 s each (construction and calibration
    # included) against a 40 s budget: two fit, and the others are named as not measured.
    clock, logged = FakeClock(), []

    def measure(cand):
        clock.now += 15.0
        return TRUE_SPS[cand.label]

    cands = candidates()
    rounds = measure_rounds(cands, measure, 40.0, clock, log=logged.append)
    assert clock.now == 30.0 and rounds == 1
    assert [c.label for c in cands] == ["Serial n=64", "Multithreading n=64 T=1"]
    assert logged == [
        "  not measured, the 40 s budget spent before their first sample could end: Multithreading n=64 T=2, "
        "Multiprocessing n=64 workers=2, Multithreading n=128 T=2 (a larger --budget measures them)"
    ]


def test_a_candidate_slower_to_sample_than_the_others_is_expected_to_take_its_own_time():
    slow = "Multithreading n=128 T=2"  # a leader whose sample costs 6 s where the others' cost 1 s
    costs = {label: 1.0 for label in TRUE_SPS} | {slow: 6.0}
    clock = FakeClock()

    def measure(cand):
        clock.now += costs[cand.label]
        return TRUE_SPS[cand.label]

    cands = candidates()
    measure_rounds(cands, measure, 14.0, clock, log=lambda *_: None)
    samples = {c.label: len(c.samples) for c in cands}
    assert clock.now == 14.0
    assert samples[slow] == 1  # at 12 s its next 6 s sample could not end inside the budget ...
    assert samples["Multithreading n=64 T=1"] == samples["Multithreading n=64 T=2"] == 3  # ... the others' could


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


# -- num_envs is the user's; a busy machine is named -----------------------------------------------


def autotune(*args, cpus=None):
    """The command in a child process, on ``cpus`` only when given."""
    pin = (lambda: os.sched_setaffinity(0, cpus)) if cpus else None
    return subprocess.run(
        [sys.executable, "-m", "shoal", "autotune", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=pin,
    )


#: one CPU this process may use: the command and a competing process share it, so the competition is
#: the same on a 2-core laptop and a 64-core CI runner
ONE_CPU = {min(os.sched_getaffinity(0))} if hasattr(os, "sched_getaffinity") else None
needs_affinity = pytest.mark.skipif(ONE_CPU is None, reason="pins processes with os.sched_setaffinity (Linux)")


def test_autotune_twice_on_a_64_env_config_keeps_num_envs_64(tmp_path):
    # A run that recommended num_envs = 32 for a 64-env config changed the user's training batch.
    path = tmp_path / "config.ini"
    path.write_text("[env]\nname = cartpole\n[vec]\nbackend = Multithreading\nnum_envs = 64\n")
    for _ in range(2):
        result = autotune("--config", path, "--budget", 2, "--write")
        assert result.returncode == 0, result.stderr
        assert "num_envs kept at 64: it is your training hyperparameter" in result.stdout
        assert set(re.findall(r" n=(\d+)", result.stdout)) == {"64"}, result.stdout  # no other size measured
        recommended = result.stdout.split("recommended [vec]")[1]
        assert "\nnum_envs = 64\n" in recommended
        assert re.search(r"^num_envs = 64$", path.read_text(), re.M)


def test_search_num_envs_is_asked_for_and_said():
    from shoal.config import load
    from shoal.tuning import candidate_configs

    config = load(None, {"vec.num_envs": "64"})
    assert {vec["num_envs"] for _, vec in candidate_configs(config, num_envs_sweep(64))} == {16, 32, 64, 128, 256}
    result = autotune("--vec.num_envs", 64, "--budget", 1, "--search-num-envs")
    assert result.returncode == 0, result.stderr
    assert "num_envs searched over [16, 32, 64, 128, 256]: a different num_envs changes your trainer's batch" in (
        result.stdout
    )


def times(wall, own, busy, steal=0.0, total=None, cpus=2, load=None):
    return MachineTimes(
        wall=wall,
        own_cpu=own,
        busy=busy,
        steal=steal,
        total=cpus * wall if total is None else total,
        cpus=cpus,
        load=load,
    )


def test_busy_reasons_name_other_processes_steal_or_the_load():
    quiet = busy_reasons(times(0, 0, 0), times(10, 19, 19.5))  # the run used its 2 CPUs, others 0.05 of one
    assert quiet == []
    others = busy_reasons(times(0, 0, 0), times(10, 10, 25))  # 15 CPU-seconds in 10 s that were not ours
    assert others == ["other processes kept 1.5 of the 2 CPUs this process may use busy while measuring"]
    stolen = busy_reasons(times(0, 0, 0, steal=0), times(10, 10, 10, steal=2))
    assert stolen == ["the hypervisor took 10 % of CPU time (steal)"]
    # Without /proc/stat (macOS): the load average when measuring began.
    no_stat = MachineTimes(wall=0, own_cpu=0, cpus=4, load=3.5)
    assert busy_reasons(no_stat, MachineTimes(wall=10, own_cpu=10, cpus=4)) == [
        "the load average was 3.50 on 4 CPUs when measuring began"
    ]
    assert (
        busy_reasons(MachineTimes(wall=0, own_cpu=0, cpus=4, load=1.0), MachineTimes(wall=10, own_cpu=10, cpus=4)) == []
    )


def test_a_wide_spread_of_the_fastest_and_ties_on_a_busy_machine_are_warned_about():
    cands = candidates()
    for cand in cands:
        cand.samples = [TRUE_SPS[cand.label]] * 3
    quiet = times(0, 0, 0), times(10, 19, 19)
    assert load_warnings(*quiet, cands) == [] and verdict_warnings([], ties(cands)) == []
    best = max(cands, key=lambda c: TRUE_SPS[c.label])
    best.samples = [0.7 * TRUE_SPS[best.label], TRUE_SPS[best.label], 1.0 * TRUE_SPS[best.label]]
    reasons = load_warnings(*quiet, cands)
    assert reasons == ["the fastest configuration's 3 samples spread 30 % (lowest to highest)"]
    tied = ties(cands)
    assert len(tied) > 1
    lines = verdict_warnings(reasons, tied)
    assert lines[0] == (
        "warning: the machine was too busy for a reliable verdict: the fastest configuration's 3 samples spread "
        "30 % (lowest to highest). Rerun on a quiet machine, or with a larger --budget."
    )
    assert lines[1].startswith(f"warning: {len(tied)} configurations tie on a busy machine: ")
    assert verdict_warnings(reasons, tied[:1]) == lines[:1]  # no tie: no tie warning


@needs_affinity
def test_autotune_warns_when_another_process_competes(tmp_path):
    path = tmp_path / "config.ini"
    path.write_text("[env]\nname = cartpole\n[vec]\nbackend = Multithreading\nnum_envs = 64\n")
    with benchmark.competing_process(ONE_CPU):  # its CPU kept busy for the whole run
        result = autotune("--config", path, "--budget", 2, cpus=ONE_CPU)
    assert result.returncode == 0, result.stderr
    assert re.search(
        r"^warning: the machine was too busy for a reliable verdict: other processes kept [\d.]+ of the "
        r"1 CPU this process may use busy while measuring",
        result.stdout,
        re.M,
    ), result.stdout


@needs_affinity
def test_the_busy_measure_counts_only_the_cpus_this_process_may_use():
    from shoal.benchmark import _allowed_cpus

    assert _allowed_cpus() == os.sched_getaffinity(0)
    pinned = subprocess.run(
        [sys.executable, "-c", "from shoal.benchmark import machine_times; print(machine_times().cpus)"],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.sched_setaffinity(0, ONE_CPU),
    )
    assert pinned.stdout.strip() == "1", pinned.stderr


# -- a policy in the loop ---------------------------------------------------------------------------


def test_with_a_policy_each_batch_gets_two_buffers_of_it_and_the_simpler_tie_wins():
    from shoal.config import load
    from shoal.tuning import candidate_configs, rows_per_call

    config = load(None, {"vec.num_envs": "64"})
    plain = candidate_configs(config)
    with_policy = candidate_configs(config, pipelined=True)
    added = [vec for _, vec in with_policy if vec not in [v for _, v in plain]]
    assert added and all(vec["num_envs"] == 128 and rows_per_call(vec) == 64 for vec in added)
    threaded = [vec for vec in added if vec["backend"] == "Multithreading"]
    assert [vec["max_num_threads"] for vec in threaded] == list(range(1, len(threaded) + 1))
    for vec in threaded:  # each candidate is a vector make() accepts, with the batch it names
        settings = dict(vec)
        with make_vector(settings) as vecenv:
            assert vecenv.agents_per_batch == 64 and vecenv.num_envs == 128
    # Tied within the noise, the synchronous vector is the simpler recommendation.
    sync = Candidate("Multithreading n=64 T=2", dict(backend="Multithreading", num_envs=64, max_num_threads=2))
    piped = Candidate("Multithreading n=128 batch=64 T=2", threaded[-1] | {"max_num_threads": 2})
    sync.samples, piped.samples = [1.00e6, 1.02e6, 0.98e6], [1.01e6, 1.03e6, 0.99e6]
    assert recommend([piped, sync], 64) is sync
    piped.samples = [1.5e6, 1.52e6, 1.49e6]
    assert recommend([piped, sync], 64) is piped


def make_vector(vec: dict):
    from shoal.envs import CartPole
    from shoal.vector import make

    backend, num_envs = vec.pop("backend"), vec.pop("num_envs")
    return make(CartPole, backend=backend, num_envs=num_envs, seed=0, **vec)


def test_autotune_with_a_policy_times_the_loop_and_keeps_the_batch_a_call_sees(tmp_path):
    # A pipelined config: 64 envs in 2 batches of 32. With a 1 ms policy no candidate can pass 32 rows
    # per ms; without the policy in the loop cartpole steps millions of rows a second.
    path = tmp_path / "config.ini"
    path.write_text("[env]\nname = cartpole\n[vec]\nbackend = Multithreading\nnum_envs = 64\nbatch_size = 32\n")
    result = autotune("--config", path, "--budget", 2, "--policy-us", 1000, "--write")
    assert result.returncode == 0, result.stderr
    assert "the batch kept at 32 rows a call" in result.stdout
    assert "the loop measured with a stand-in for your policy: 1000 us a call, 200 us of it" in result.stdout
    medians = [
        float(m.replace(",", "")) for m in re.findall(r"^\s+=?\s+\S+ [^\n]*?\s([\d,]+)\s+\[", result.stdout, re.M)
    ]
    assert medians and max(medians) <= 32 / 1e-3, result.stdout
    assert "Multithreading n=64 batch=32 T=1" in result.stdout and "Multithreading n=32 T=0" in result.stdout
    from shoal.config import load
    from shoal.tuning import rows_per_call

    written = load(path).vec
    assert rows_per_call(written) == 32, path.read_text()  # synchronous 32, or 2 buffers of 32


@pytest.mark.parametrize(
    "args, message",
    [
        (("--policy-us", -5), "policy-us must be a number of microseconds in (0, 1,000,000], got -5"),
        (("--policy-us", "nan"), "policy-us must be a number of microseconds in (0, 1,000,000], got nan"),
        (("--policy-us", 100, "--policy-cpu-share", 1.5), "policy-cpu-share must be a share in [0, 1], got 1.5"),
    ],
)
def test_a_policy_time_that_cannot_be_is_refused_before_measuring(args, message):
    result = autotune("--budget", 1, *args)
    assert result.returncode == 2
    assert message in result.stderr and result.stderr.count("\n") == 1
    assert "configurations" not in result.stdout  # nothing measured


# -- the budget holds on a real machine ------------------------------------------------------------


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="samples are cut by a timer signal (Unix)")
def test_a_sample_past_the_budget_is_cut_and_one_inside_it_is_not():
    from shoal.sample_deadline import BudgetSpent, sample_deadline

    started = time.monotonic()
    with pytest.raises(BudgetSpent, match="cut at the end of the 30 s budget"), sample_deadline(0.2, 30.0):
        while True:  # a build that would not end (Serial's 4,096 native envs took 34 s on a busy guest)
            pass
    assert 0.2 <= time.monotonic() - started < 2.0
    with sample_deadline(0.2, 30.0):
        pass
    time.sleep(0.3)  # no timer is left behind to fire later
    with pytest.raises(BudgetSpent, match="spent before it began"), sample_deadline(0.0, 30.0):
        pass


def test_autotune_on_the_default_config_keeps_its_budget():
    # `shoal autotune --budget 60` took 155 s before; the acceptance: --budget 30 within 40 s.
    started = time.monotonic()
    result = autotune("--budget", 30)
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    assert "recommended [vec]" in result.stdout and took < 40, (took, result.stdout)
