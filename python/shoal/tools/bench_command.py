"""`shoal bench`: the configured env under shoal's backends beside its peers, as a table and a plot."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from .. import _native, cpus
from ..optional import optional_module
from ..vector import make
from . import benchmark
from .arguments import bounded_float, bounded_int
from .benchmark import Case
from .config import MAX_REPEATS, load, resolve_env
from .peers import peer_builders
from .quiet import third_party_warnings_kept_out
from .tuning import candidate_configs

PEER_PREFIXES = ("EnvPool", "gymnasium", "ale-py")
#: a sample longer than this, times every configuration and repeat, runs for hours
MAX_SAMPLE_SECONDS = 600.0


def is_peer(case: Case) -> bool:
    return case.name.startswith(PEER_PREFIXES)


def _calibrated(label: str, build, seconds: float) -> Case:
    """A case whose agent-step budget makes one sample take about ``seconds``."""
    vecenv = build()
    try:
        sps = benchmark.time_vecenv(vecenv, vecenv.agents_per_batch * 5, warmup_steps=3)
    finally:
        vecenv.close()
    return Case(label, build, max(1, int(sps * seconds)))


def _shoal_build(creator, config, vec: dict):
    vec = dict(vec)
    backend, n = vec.pop("backend"), vec.pop("num_envs")
    return functools.partial(
        make, creator, env_kwargs=config.env_kwargs, backend=backend, num_envs=n, seed=config.vec.get("seed", 0), **vec
    )


def _peers(config, creator, n: int):
    """peer_builders for the configured env: an Atari game's peers come with shoal rows on their presets."""
    preset = config.env_kwargs.get("preset", "gymnasium")
    threads = cpus.physical_cores()

    def shoal_row(peer_preset: str):
        vec = dict(backend="Multithreading", num_envs=n, max_num_threads=threads)
        kwargs = {**config.env_kwargs, "preset": peer_preset}
        build = functools.partial(make, creator, env_kwargs=kwargs, seed=config.vec.get("seed", 0), **vec)
        return f"Multithreading n={n} T={threads} preset={peer_preset}", build

    return peer_builders(config.env_name, creator, n, preset, shoal_row)


def write_plot(cases: list[Case], path: Path, title: str) -> bool:
    """bench_figure() saved as a PNG; False when matplotlib is not installed."""
    matplotlib = optional_module("matplotlib")
    if matplotlib is None:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = bench_figure(cases, title)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def bench_figure(cases: list[Case], title: str):
    """Horizontal bars on a linear axis from zero (lengths compare as the speeds do), the median's value
    written on each, peers hatched grey; the legend names only the kinds of row the figure has."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    fig, ax = plt.subplots(figsize=(10, 0.42 * len(cases) + 1.8))
    names = [c.name + ("  (peer)" if is_peer(c) else "") for c in cases]
    medians = [c.median for c in cases]
    errors = [[c.median - min(c.samples) for c in cases], [max(c.samples) - c.median for c in cases]]
    colors = ["#b0b0b0" if is_peer(c) else "#3a7ca5" for c in cases]
    bars = ax.barh(names, medians, xerr=errors, color=colors, capsize=2)
    for bar, case in zip(bars, cases):
        if is_peer(case):
            bar.set_hatch("//")
    ax.bar_label(bars, labels=[_si(m) for m in medians], padding=4, fontsize=8)
    ax.set_xlim(0, max(max(c.samples) for c in cases) * 1.15)  # room for the values written
    ax.set_xlabel("agent steps per second (median; whiskers: lowest..highest sample)")
    ax.set_title(title, fontsize=10)
    ax.invert_yaxis()
    handles = []
    if not all(is_peer(c) for c in cases):
        handles.append(Patch(color="#3a7ca5", label="shoal"))
    if any(is_peer(c) for c in cases):
        handles.append(Patch(facecolor="#b0b0b0", hatch="//", label="peer"))
    ax.legend(handles=handles, loc="lower right")
    fig.tight_layout()
    return fig


def _si(value: float) -> str:
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "K")):
        if value >= scale:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.3g}"


def cmd_bench(args, overrides) -> int:
    config = load(args.config, overrides)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    creator, n = resolve_env(config), config.vec.get("num_envs", 1)
    settings = candidate_configs(config)
    peers, left_out = ([], []) if args.no_peers else _peers(config, creator, n)
    peer_count = sum(label.startswith(PEER_PREFIXES) for label, _ in peers)
    print(
        f"shoal bench: {config.env_name}, num_envs {n}: {len(settings)} shoal configurations, {peer_count} peers, {args.repeats} repeats"
    )
    for why in left_out:
        print(f"  peer left out: {why}")
    sys.stdout.flush()  # before progress lines on stderr, so that a log keeps the order
    progress = True if args.progress else None  # None: a bar on a terminal, a line every 10 s elsewhere
    before = benchmark.machine_times()
    with third_party_warnings_kept_out() as kept_out:
        calibrating = benchmark.Progress(
            "shoal bench: calibrating", len(settings) + len(peers), "configuration", mode=progress
        )
        cases = []
        for label, vec in settings:
            calibrating.describe(label)
            cases.append(_calibrated(label, _shoal_build(creator, config, vec), args.seconds))
            calibrating.update(1)
        for label, build in peers:
            calibrating.describe(label)
            try:
                cases.append(_calibrated(label, build, args.seconds))
            except Exception as error:  # a peer that cannot run this env is named, not fatal
                left_out.append(f"{label}: {type(error).__name__}: {error}")
            calibrating.update(1)
        calibrating.close()
        benchmark.run_cases(
            cases,
            args.repeats,
            log=(print if args.verbose else lambda *_: None),
            progress=progress,
            what="shoal bench: measuring",
        )
    baseline = max(cases, key=lambda c: c.name.startswith("Serial"))
    ranked = sorted(cases, key=lambda c: -c.median)
    rows = [benchmark.case_row(c, baseline) + ["peer" if is_peer(c) else "shoal"] for c in ranked]
    info = benchmark.system_info(
        {
            "env": config.env_name,
            "num_envs (batch)": n,
            "config": args.config or "the embedded default config.ini",
            "repeats": args.repeats,
            "what is timed": "send+recv, random actions generated in advance, after "
            f"reset and warm-up; ~{args.seconds:.1f} s per sample, cases interleaved",
        }
    )
    busy = benchmark.busy_reasons(before, benchmark.machine_times())
    notes = ["spread = (max - min) / median over the repeats."] + [f"Left out: {why}." for why in left_out]
    if busy:
        notes.append(
            f"Warning: the machine was busy while measuring ({'; '.join(busy)}): the figures are the load's too."
        )
    if kept_out:
        notes.append(f"{kept_out} third-party warnings were kept out of the output.")
    table = benchmark.format_markdown(
        f"shoal bench: {config.env_name}",
        info,
        rows,
        ["configuration", "median SPS", "spread", "samples", f"vs {baseline.name}", "library"],
        notes,
    )
    (out / "bench.md").write_text(table)
    title = (
        f"shoal bench: {config.env_name}, {n} envs per batch\n{info['cpu']}, {_native.physical_cores()} physical cores, "
        f"{info['usable cpus (affinity and cgroup quota)']} usable CPUs, "
        f"load {info['load average (1 min) at start']}"
    )
    plotted = write_plot(ranked, out / "bench.png", title)
    print(table)
    print(
        f"wrote {out / 'bench.md'}" + (f" and {out / 'bench.png'}" if plotted else " (no plot: pip install matplotlib)")
    )
    return 0


def add_commands(sub) -> None:
    bench = sub.add_parser(
        "bench", help="the configured env under every applicable backend and thread count, beside peers"
    )
    bench.add_argument("--config")
    bench.add_argument(
        "--repeats",
        type=bounded_int("repeats", 1, MAX_REPEATS, "more samples than a spread needs"),
        default=3,
        help="samples of each configuration (default 3)",
    )
    bench.add_argument(
        "--seconds",
        type=bounded_float(
            "seconds", 0, MAX_SAMPLE_SECONDS, "a number of seconds", "a sample that long", above_minimum=True
        ),
        default=1.0,
        help="approximate duration of one sample (default 1)",
    )
    bench.add_argument("--out", default="bench/results", help="directory for bench.md and bench.png")
    bench.add_argument(
        "--no-peers",
        action="store_true",
        help="leave out the peers (EnvPool, gymnasium's vector envs, ale-py's AtariVectorEnv)",
    )
    bench.add_argument("--verbose", action="store_true")
    bench.add_argument(
        "--progress",
        action="store_true",
        help="a progress bar even when stderr is not a terminal (else a line every 10 s there)",
    )
    bench.set_defaults(func=cmd_bench)
