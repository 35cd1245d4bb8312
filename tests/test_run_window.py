"""`shoal run` times a window long enough to agree with `shoal bench` (at least [run] seconds, and says
how long it timed), and long commands print progress lines where stderr is not a terminal."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest

from shoal import benchmark, cli
from shoal.benchmark import Progress
from shoal.envs import CartPole
from shoal.vector import make


class FakeClock:
    """Advances ``step`` seconds at every read (a loop that reads it once per update)."""

    def __init__(self, step: float):
        self.now, self.step, self.reads = 0.0, step, 0

    def __call__(self):
        self.now += self.step
        self.reads += 1
        return self.now


def shoal(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "shoal", *map(str, args)], capture_output=True, text=True, timeout=timeout
    )


# -- the timed window ---------------------------------------------------------------------------


class SteppedClock:
    """A clock that only moves when the vector steps: ``per_step`` seconds a batch step."""

    def __init__(self, vecenv, per_step: float):
        self.now, self.reads = 0.0, 0
        send = vecenv.send

        def timed_send(actions):
            self.now += per_step
            send(actions)

        vecenv.send = timed_send

    def __call__(self):
        self.reads += 1
        return self.now


def test_a_window_lasts_at_least_min_seconds_beyond_its_steps():
    with make(CartPole, backend="Serial", num_envs=4) as vecenv:
        clock = SteppedClock(vecenv, 0.001)
        result = cli.run_steps(vecenv, 4, warmup=0, progress=False, min_seconds=0.5, clock=clock)
    (window,) = result["windows"]
    assert 0.5 <= window["seconds"] <= 0.5 + 2 * cli.CHUNK_SECONDS and result["seconds"] == window["seconds"]
    assert result["agent_steps"] == 4 * round(window["seconds"] / 0.001)  # past the one batch asked for
    assert result["sps"] == pytest.approx(result["agent_steps"] / result["seconds"])
    # The clock is read once per chunk of batch steps (about CHUNK_SECONDS), not once per step.
    assert clock.reads < 0.5 / cli.CHUNK_SECONDS + 10


def test_a_window_takes_at_least_its_steps_however_short_min_seconds():
    with make(CartPole, backend="Serial", num_envs=4) as vecenv:
        clock = SteppedClock(vecenv, 0.001)
        result = cli.run_steps(vecenv, 4000, warmup=0, progress=False, min_seconds=0.0, clock=clock)
    assert result["agent_steps"] == 4000  # whole batches, not a chunk past the count
    assert result["seconds"] == pytest.approx(1.0)


def test_without_steps_a_window_lasts_its_seconds_and_its_progress_says_what_is_left():
    out = io.StringIO()
    with make(CartPole, backend="Serial", num_envs=4) as vecenv:
        clock = SteppedClock(vecenv, 0.001)
        bar = Progress("shoal run: timed", None, "agent step", file=out, interval=0.0, clock=clock)
        stats = {"episodes": 0, "returns": 0.0, "lengths": 0.0}
        steps, seconds = cli._timed_window(vecenv, benchmark.warm_up(vecenv, 0), 1, 2.0, bar, clock, stats)
    assert 2.0 <= seconds <= 2.0 + 2 * cli.CHUNK_SECONDS and steps == 4 * round(seconds / 0.001)
    left = [int(n) for n in re.findall(r"SPS so far, ETA (\d+) s$", out.getvalue(), re.M)]
    assert left[0] == 2 and left[-1] == 0 and left == sorted(left, reverse=True), left  # counts down to 0


def test_a_warm_up_ends_after_warmup_seconds_of_slow_batches():
    with make(CartPole, backend="Serial", num_envs=4) as vecenv:
        clock = SteppedClock(vecenv, 0.4)  # a batch of slow envs: 100 of them would take 40 s
        result = cli.run_steps(vecenv, None, warmup=100, progress=False, min_seconds=0.0, clock=clock)
    assert result["warmup"] == 3  # 1.2 s >= WARMUP_SECONDS
    assert cli.WARMUP_SECONDS == 1.0


def test_repeated_windows_report_the_median():
    with make(CartPole, backend="Serial", num_envs=4) as vecenv:
        result = cli.run_steps(vecenv, 400, warmup=2, progress=False, min_seconds=0.0, repeats=3)
    rates = sorted(w["sps"] for w in result["windows"])
    assert len(rates) == 3 and result["sps"] == rates[1]
    assert result["agent_steps"] == 3 * 400


def test_shoal_run_times_the_default_window_and_says_how_long():
    # The embedded config's 40,000,000 steps took ~0.4 s on a fast machine and read twice shoal
    # bench's figure, and 18 hours on Atari; the window is now [run] seconds (5 s) long.
    result = shoal("run", "--vec.num_envs", 256)
    assert result.returncode == 0, result.stderr
    timed = re.search(
        r"^  timed: 1 window of 5 s after 20 warm-up batch steps: ([\d.]+) s$",
        result.stdout,
        re.MULTILINE,
    )
    assert timed, result.stdout
    assert 5.0 <= float(timed.group(1)) < 6.0
    seconds = float(re.search(r"^  agent steps: [\d,]+ in ([\d.]+) s$", result.stdout, re.MULTILINE).group(1))
    assert seconds >= 5.0 and "note: a " not in result.stdout


def test_shoal_run_seconds_and_repeats_from_the_command_line():
    result = shoal("run", "--vec.num_envs", 64, "--steps", 64, "--seconds", 0.3, "--run.repeats", 3)
    assert result.returncode == 0, result.stderr
    timed = re.search(r"^  timed: 3 windows of at least 64 agent steps and 0.3 s .*: (.*)$", result.stdout, re.M)
    assert timed, result.stdout
    assert all(float(s.rstrip(" s")) >= 0.3 for s in timed.group(1).split(", "))
    per_window = re.search(r"^  SPS per window: (.*) \(spread \d+ %; SPS below is their median\)$", result.stdout, re.M)
    rates = sorted(float(r.replace(",", "")) for r in per_window.group(1).split(", "))
    assert len(rates) == 3 and f"\nSPS: {rates[1]:,.0f}\n" in result.stdout


def test_a_short_window_is_pointed_out():
    result = shoal("run", "--vec.num_envs", 64, "--steps", 64, "--seconds", 0)
    assert result.returncode == 0, result.stderr
    assert re.search(r"^  note: a [\d.]+ s window; short windows can read faster than shoal bench", result.stdout, re.M)


@pytest.mark.parametrize("value", ["-1", "nan", "100000"])
def test_bad_seconds_on_the_command_line(value):
    result = shoal("run", "--seconds", value)
    assert result.returncode == 2 and "argument --seconds: seconds must be a number of seconds in [0, 86400]" in (
        result.stderr
    )


# -- progress lines off a terminal --------------------------------------------------------------


def test_progress_writes_a_line_every_interval_off_a_terminal():
    out, clock = io.StringIO(), FakeClock(1.0)
    progress = Progress("shoal run: warm-up", 100, "batch step", file=out, interval=10.0, clock=clock)
    for _ in range(100):
        progress.update(1)
    progress.close()
    lines = out.getvalue().splitlines()
    # the clock advances 1 s per read: one line per 10 s, each with the count, the share and the time
    assert len(lines) == 10
    assert lines[0] == "shoal run: warm-up: 10 of 100 batch steps (10 %), 10 s"
    assert lines[-1] == "shoal run: warm-up: 100 of 100 batch steps (100 %), 100 s"


def test_progress_lines_past_the_total_or_without_one_count_only():
    out = io.StringIO()
    progress = Progress("shoal autotune: measuring", None, "sample", file=out, interval=0.0)
    progress.describe("Serial n=64")
    progress.update(3)
    assert re.fullmatch(r"shoal autotune: measuring: 3 samples, \d+ s: Serial n=64\n", out.getvalue())


def test_progress_on_a_terminal_is_a_bar_and_can_be_off():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal = Terminal()
    progress = Progress("x", 10, "step", file=terminal, interval=0.0)
    progress.update(10)
    progress.close()
    assert "\r" in terminal.getvalue() and "100%|" in terminal.getvalue()  # tqdm's bar, not lines
    quiet = io.StringIO()
    progress = Progress("x", 10, "step", mode=False, file=quiet, interval=0.0)
    progress.update(10)
    assert quiet.getvalue() == ""


def test_shoal_run_prints_progress_lines_off_a_terminal(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(benchmark, "PROGRESS_INTERVAL", 0.0)
    path = tmp_path / "config.ini"
    path.write_text("[env]\nname = cartpole\n[vec]\nbackend = Serial\nnum_envs = 8\n[run]\nwarmup = 30\n")
    assert cli.main(["run", "--config", str(path), "--steps", "80", "--seconds", "0"]) == 0
    err = capsys.readouterr().err
    assert "shoal run: warm-up: 30 of 30 batch steps (100 %)" in err
    assert re.search(
        r"^shoal run: timed: 80 of 80 agent steps \(100 %\), \d+ s: [\d,]+ SPS so far, ETA 0 s$", err, re.M
    ), err


def test_shoal_bench_prints_progress_lines_off_a_terminal(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(benchmark, "PROGRESS_INTERVAL", 0.0)
    path = tmp_path / "config.ini"
    path.write_text("[env]\nname = cartpole\n[vec]\nbackend = Multithreading\nnum_envs = 16\n")
    args = ["bench", "--config", str(path), "--no-peers", "--repeats", "1", "--seconds", "0.02"]
    assert cli.main([*args, "--out", str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert re.search(
        r"^shoal bench: calibrating: 1 of \d+ configurations \(\d+ %\), \d+ s: Multithreading n=16 T=0$", err, re.M
    ), err
    assert re.search(r"^shoal bench: measuring: (\d+) of \1 samples \(100 %\), \d+ s: ", err, re.M), err


def test_shoal_autotune_prints_progress_lines_off_a_terminal(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(benchmark, "PROGRESS_INTERVAL", 0.0)
    path = tmp_path / "config.ini"
    path.write_text("[env]\nname = cartpole\n[vec]\nbackend = Multithreading\nnum_envs = 16\n")
    assert cli.main(["autotune", "--config", str(path), "--budget", "0.5"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"^shoal autotune: measuring: 1 sample, \d+ s: Multithreading n=16 T=0$", err, re.M), err


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pins processes with os.sched_setaffinity (Linux)")
def test_shoal_bench_names_a_busy_machine_in_its_table(tmp_path):
    one_cpu = {min(os.sched_getaffinity(0))}  # the command and a competing process share it
    path = tmp_path / "config.ini"
    path.write_text("[env]\nname = cartpole\n[vec]\nbackend = Multithreading\nnum_envs = 16\n")
    args = ["bench", "--config", path, "--no-peers", "--repeats", 1, "--seconds", 0.2, "--out", tmp_path / "out"]
    with benchmark.competing_process(one_cpu):  # its CPU kept busy for the whole run
        result = subprocess.run(
            [sys.executable, "-m", "shoal", *map(str, args)],
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=lambda: os.sched_setaffinity(0, one_cpu),
        )
    assert result.returncode == 0, result.stderr
    table = (tmp_path / "out" / "bench.md").read_text()
    assert re.search(
        r"^Warning: the machine was busy while measuring \(other processes kept [\d.]+ of the 1 CPU this "
        r"process may use busy while measuring[^)]*\): the figures are the load's too\.$",
        table,
        re.M,
    ), table
