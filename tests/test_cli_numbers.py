"""The `shoal` command's numbers: a value that cannot be, or that would run far past any budget, is one
line naming the option and its bounds (exit status 2), before anything is built or measured."""

from __future__ import annotations

import pytest

from shoal import cli


def run_cli(capsys, *args) -> tuple[int, str]:
    """(exit status, stderr) of ``shoal *args`` in this process."""
    try:
        status = cli.main([str(a) for a in args])
    except SystemExit as stop:  # argparse's errors
        status = stop.code
    captured = capsys.readouterr()
    assert "configurations" not in captured.out and "SPS" not in captured.out  # nothing measured
    return status, captured.err


@pytest.mark.parametrize(
    "args, expected",
    [
        (("bench", "--repeats", 0), "argument --repeats: must be an integer >= 1, got '0'"),
        (("bench", "--repeats", 10**6), "got 1,000,000 (more samples than a spread needs: a typo?)"),
        (("bench", "--seconds", "nan"), "argument --seconds: seconds must be a number of seconds in (0, 600], got nan"),
        (("bench", "--seconds", "inf"), "seconds must be a number of seconds in (0, 600], got inf"),
        (("bench", "--seconds", -1), "seconds must be a number of seconds in (0, 600], got -1"),
        (("bench", "--seconds", 1e6), "got 1000000.0 (a sample that long)"),
        (("run", "--seconds", "nan"), "argument --seconds: seconds must be a number of seconds in [0, 86400], got nan"),
        (("run", "--seconds", "inf"), "seconds must be a number of seconds in [0, 86400], got inf"),
        (("run", "--seconds", -1), "seconds must be a number of seconds in [0, 86400], got -1"),
        (("run", "--steps", 0), "argument --steps: must be an integer >= 1, got '0'"),
        (("run", "--steps", 10**20), "(more agent steps than a day of stepping at any speed: a typo?)"),
        (
            ("autotune", "--budget", "1e300"),
            "budget must be a number of seconds in (0, 86,400], got 1e300 (a budget over",
        ),
        (("autotune", "--budget", "nan"), "budget must be a number of seconds in (0, 86,400], got nan"),
        (("autotune", "--budget", 0), "budget must be a number of seconds in (0, 86,400], got 0"),
        (("autotune", "--policy-us", "1e9"), "policy-us must be a number of microseconds in (0, 1,000,000], got 1e9"),
        (("autotune", "--policy-us", "inf"), "policy-us must be a number of microseconds in (0, 1,000,000], got inf"),
        (("autotune", "--policy-us", 5, "--policy-cpu-share", "nan"), "policy-cpu-share must be a share in [0, 1]"),
        (("check", "--steps", -5), "argument --steps: must be an integer >= 1, got '-5'"),
        (("check", "--num-envs", 0), "argument --num-envs: must be an integer >= 1, got '0'"),
    ],
)
def test_a_number_out_of_bounds_is_one_line_naming_the_option(capsys, args, expected):
    status, err = run_cli(capsys, *args)
    assert status == 2
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert expected in err, err


def test_a_policy_slower_than_the_budget_allows_is_refused_before_measuring(capsys):
    status, err = run_cli(capsys, "autotune", "--budget", 2, "--policy-us", 5e5)
    assert status == 2 and err.count("\n") == 1, err
    assert "--policy-us 500000: a first sample calls the policy at least 6 times (3 s), past --budget 2 s" in err
