"""`shoal autotune`: the configured env measured over backends and threads/workers (num_envs too when
asked: it is the user's training hyperparameter), in interleaved rounds until the budget is spent;
configurations within the noise of the best are ties, and the simplest of them is recommended, with a
warning when the machine was too busy for the verdict.

With ``--policy-us`` the trainer's loop is measured instead of the envs alone: a GPU stand-in policy
(policy_standin.py) between each recv and send, and pipelined candidates beside the synchronous ones:
two buffers of the configured batch (num_envs doubled, batch_size kept), so that one buffer's envs step
while the policy runs on the other and the policy still sees as many rows a call.

The command is here; its parts are autotune_candidates.py (what is measured), autotune_rounds.py (the
measuring) and autotune_verdict.py (the report), whose names this module re-exports."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from ..backends.registry import backend_options
from ..errors import APIUsageError
from . import benchmark
from .arguments import bounded_float

# The parts, re-exported: shoal.tuning's names stay where they were.
from .autotune_candidates import (  # noqa: F401
    BACKEND_SIMPLICITY,
    Candidate,
    candidate_configs,
    is_pipelined,
    num_envs_sweep,
    rows_per_call,
    simplicity,
)
from .autotune_rounds import (  # noqa: F401
    GROWTH,
    LEADER_SHARE,
    MAX_LEADERS,
    MIN_ROUNDS,
    PolicyTime,
    _measure_with,
    _stopped_growing,
    leaders,
    measure_rounds,
)
from .autotune_verdict import (  # noqa: F401
    SPREAD_SHARE,
    _ini,
    ini_lines,
    load_warnings,
    recommend,
    ties,
    update_config_text,
    verdict_warnings,
)
from .config import VEC_KEYS, load
from .quiet import third_party_warnings_kept_out
from .sample_deadline import sample_deadline

#: a budget over a day is a typo; a policy call over a second leaves no budget a sample
MAX_BUDGET, MAX_POLICY_US = 86_400.0, 1e6
#: a sample still running this long after the budget (a share of it, at least MIN_GRACE s) is cut: a
#: sample's expected time is a guess, and a guess a little short should not cost its configuration
GRACE_SHARE, MIN_GRACE = 0.1, 1.0
#: policy calls of a candidate's first sample: its calibration's batch steps and at least one timed one
FIRST_SAMPLE_CALLS = 6


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
