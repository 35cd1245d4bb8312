"""`shoal bench` and `shoal autotune`: the configured env measured across backends and settings."""

from __future__ import annotations

import functools
import re
import sys
import time
from pathlib import Path

from . import _native, benchmark
from .backends.registry import backend_options
from .benchmark import Case
from .config import VEC_KEYS, Config, load, resolve_env
from .native import is_native_env
from .optional import optional_module
from .vector import make


def _builder(creator, env_kwargs: dict, backend: str, num_envs: int, seed: int, **options):
    if backend == "PufferEnv":
        return functools.partial(creator, num_envs=num_envs, seed=seed, **env_kwargs)
    return functools.partial(
        make, creator, env_kwargs=env_kwargs, backend=backend, num_envs=num_envs, seed=seed, **options
    )


def candidate_configs(config: Config, thorough: bool) -> list[tuple[str, dict]]:
    """(label, [vec] settings) pairs applicable to the configured env."""
    creator = resolve_env(config)
    cores = _native.physical_cores()
    num_envs = config.vec.get("num_envs", 1)
    out = []
    sizes = sorted({max(1, num_envs // 2), num_envs, num_envs * 2}) if thorough else [num_envs]
    if is_native_env(creator):
        for n in sizes:
            for threads in range(0, cores + 1):
                out.append(
                    (
                        f"Multithreading n={n} T={threads}",
                        dict(backend="Multithreading", num_envs=n, max_num_threads=threads),
                    )
                )
        out.append((f"PufferEnv n={num_envs}", dict(backend="PufferEnv", num_envs=num_envs)))
    for n in sizes:
        out.append((f"Serial n={n}", dict(backend="Serial", num_envs=n)))
    for n in sizes:
        for workers in range(1, cores + 1):
            if n % workers:
                continue
            out.append(
                (
                    f"Multiprocessing n={n} workers={workers}",
                    dict(backend="Multiprocessing", num_envs=n, num_workers=workers, batch_size=n),
                )
            )
            half = n // 2
            if workers > 1 and half and half % (n // workers) == 0 and n % half == 0:
                out.append(
                    (
                        f"Multiprocessing n={n} workers={workers} batch={half}",
                        dict(
                            backend="Multiprocessing", num_envs=n, num_workers=workers, batch_size=half, zero_copy=True
                        ),
                    )
                )
    return out


def _calibrated_case(label: str, build, seconds: float) -> Case:
    """A case whose agent-step budget makes one sample take about ``seconds``."""
    vecenv = build()
    try:
        sps = benchmark.time_vecenv(vecenv, vecenv.agents_per_batch * 5, warmup_steps=3)
    finally:
        vecenv.close()
    return Case(label, build, max(1, int(sps * seconds)))


def cases_for(config: Config, settings: list[tuple[str, dict]], seconds: float) -> list[Case]:
    creator = resolve_env(config)
    seed = config.vec.get("seed", 0)
    cases = []
    for label, vec in settings:
        vec = dict(vec)
        backend, n = vec.pop("backend"), vec.pop("num_envs")
        cases.append(_calibrated_case(label, _builder(creator, config.env_kwargs, backend, n, seed, **vec), seconds))
    return cases


def peer_cases(config: Config, seconds: float) -> list[Case]:
    """Other libraries on the same env, when installed: gymnasium's vector envs, EnvPool."""
    peers = []
    n = config.vec.get("num_envs", 1)
    creator = resolve_env(config)
    if not is_native_env(creator):
        import gymnasium

        if n <= 256:
            peers.append(
                ("gymnasium SyncVectorEnv", lambda: _GymnasiumAdapter(gymnasium.vector.SyncVectorEnv([creator] * n)))
            )
    elif config.env_name == "cartpole" and optional_module("envpool") is not None:
        peers.append(("EnvPool CartPole-v1", lambda: _EnvPoolAdapter(n)))
    return [_calibrated_case(label, build, seconds) for label, build in peers]


class _GymnasiumAdapter:
    """Just enough of the shoal API around a gymnasium VectorEnv to time it the same way."""

    def __init__(self, env):
        self.env = env
        self.single_action_space = env.single_action_space
        self.agents_per_batch = env.num_envs

    def async_reset(self, seed):
        self.out = self.env.reset(seed=seed)

    def send(self, actions):
        self.out = self.env.step(actions)

    def recv(self):
        return self.out

    def close(self):
        self.env.close()


class _EnvPoolAdapter(_GymnasiumAdapter):
    def __init__(self, num_envs: int):
        import envpool

        threads = _native.physical_cores()
        super().__init__(
            envpool.make(
                "CartPole-v1", env_type="gymnasium", num_envs=num_envs, batch_size=num_envs, num_threads=threads, seed=0
            )
        )
        self.agents_per_batch = num_envs


def write_plot(cases: list[Case], path: Path) -> bool:
    matplotlib = optional_module("matplotlib")
    if matplotlib is None:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 0.45 * len(cases) + 1.5))
    names = [c.name for c in cases]
    medians = [c.median for c in cases]
    errors = [[c.median - min(c.samples) for c in cases], [max(c.samples) - c.median for c in cases]]
    ax.barh(names, medians, xerr=errors, color="#3a7ca5")
    ax.set_xlabel("agent steps per second (median, min-max bars)")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def cmd_bench(args, overrides) -> int:
    config = load(args.config, overrides)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = candidate_configs(config, thorough=False)
    print(f"shoal bench: {config.env_name}, {len(settings)} configurations, {args.repeats} repeats")
    cases = cases_for(config, settings, args.seconds) + peer_cases(config, args.seconds)
    benchmark.run_cases(cases, args.repeats, log=(print if args.verbose else lambda *_: None))
    baseline = max(cases, key=lambda c: c.name.startswith("Serial"))
    rows = [benchmark.case_row(c, baseline) for c in sorted(cases, key=lambda c: -c.median)]
    info = benchmark.system_info(
        {
            "env": config.env_name,
            "config": args.config or "the embedded default config.ini",
            "repeats": args.repeats,
            "what is timed": "send+recv, random actions generated in advance, after "
            f"reset and warm-up; ~{args.seconds:.1f} s per sample",
        }
    )
    table = benchmark.format_markdown(
        f"shoal bench: {config.env_name}",
        info,
        rows,
        ["configuration", "median SPS", "spread", "samples", f"vs {baseline.name}"],
        ["spread = (max - min) / median over the repeats."],
    )
    (out / "bench.md").write_text(table)
    plotted = write_plot(sorted(cases, key=lambda c: -c.median), out / "bench.png")
    print(table)
    print(
        f"wrote {out / 'bench.md'}"
        + (f" and {out / 'bench.png'}" if plotted else " (no plot: pip install 'shoal[plot]' for matplotlib)")
    )
    return 0


def update_config_text(text: str, section: str, values: dict, drop: set[str] = frozenset()) -> str:
    """Sets ``key = value`` lines of one section in place, keeping comments, order and other sections;
    lines of the keys in ``drop`` are commented out."""
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


def cmd_autotune(args, overrides) -> int:
    config = load(args.config, overrides)
    settings = candidate_configs(config, thorough=True)
    per_case = max(0.2, args.budget / (2 * len(settings)))
    print(f"shoal autotune: {len(settings)} configurations, ~{per_case:.2f} s each, budget {args.budget:.0f} s")
    started = time.perf_counter()
    cases = []
    for label, vec in settings:
        if time.perf_counter() - started > args.budget:
            print(f"  budget spent; skipping the remaining {len(settings) - len(cases)} configurations")
            break
        try:
            case = cases_for(config, [(label, vec)], per_case)[0]
            benchmark.run_cases([case], 1, log=lambda *_: None)
        except Exception as error:  # a configuration that cannot run is reported, not fatal
            print(f"  {label}: skipped ({type(error).__name__}: {error})")
            continue
        case.vec = vec
        cases.append(case)
        print(f"  {label:<48} {case.median:>14,.0f} SPS")
    if not cases:
        print("shoal autotune: no configuration could run", file=sys.stderr)
        return 1
    ranking = sorted(cases, key=lambda c: -c.median)
    print("\nranking:")
    for i, case in enumerate(ranking[:10], 1):
        print(f"  {i:>2}. {case.name:<48} {case.median:>14,.0f} SPS")
    best = dict(ranking[0].vec)
    print(f"\nrecommended [vec]: {best}")
    if args.write:
        path = Path(config.path)
        takes = {"backend", "num_envs", "seed", *backend_options(best["backend"])}
        unused = set(VEC_KEYS) - takes  # the old backend's keys, which the new one refuses
        path.write_text(update_config_text(path.read_text(), "vec", {k: _ini(v) for k, v in best.items()}, unused))
        load(path)  # the written file must load
        print(f"updated {path}")
    return 0


def _ini(value) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def add_commands(sub) -> None:
    bench = sub.add_parser("bench", help="the configured env under every applicable backend and thread count")
    bench.add_argument("--config")
    bench.add_argument("--repeats", type=int, default=3)
    bench.add_argument("--seconds", type=float, default=1.0, help="approximate duration of one sample")
    bench.add_argument("--out", default="bench/results", help="directory for bench.md and bench.png")
    bench.add_argument("--verbose", action="store_true")
    bench.set_defaults(func=cmd_bench)
    tune = sub.add_parser("autotune", help="search backend x threads/workers x num_envs x batch_size")
    tune.add_argument("--config")
    tune.add_argument("--budget", type=float, default=60.0, help="seconds to spend measuring")
    tune.add_argument("--write", action="store_true", help="write the best [vec] settings into the config")
    tune.set_defaults(func=cmd_autotune)
