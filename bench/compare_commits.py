"""An interleaved A/B of two commits of shoal on the native and Ocean paths (seed 001's methodology).

    python bench/compare_commits.py BASE [HEAD] [--repeats 9]

Each commit (HEAD: the current commit by default) is exported with `git archive` and pip-installed into
build/compare/<commit>/; every sample is one fresh process importing that install only, and the commits
alternate within each repeat, case by case. Timed: send+recv of pre-generated random actions after reset
and warm-up (shoal.benchmark.run_cases). The result is the ratio HEAD / BASE per case: medians of the
samples and the median of the paired ratios, with each side's spread.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "compare"
# name -> (make() expression over `envs`, agent steps per sample)
CASES = {
    "cartpole 4096 T=0": ("make(envs.CartPole, backend='Multithreading', num_envs=4096, max_num_threads=0)", 30e6),
    "cartpole 4096 T=2": ("make(envs.CartPole, backend='Multithreading', num_envs=4096, max_num_threads=2)", 40e6),
    "squared 4096 T=2": ("make(envs.Squared, backend='Multithreading', num_envs=4096, max_num_threads=2)", 40e6),
    "cartpole 4096 T=2 pipelined": (
        "make(envs.CartPole, backend='Multithreading', num_envs=4096, max_num_threads=2, batch_size=2048)",
        40e6,
    ),
    "ocean breakout 1024 T=0": (
        "make(ocean.env_class('breakout'), backend='Multithreading', num_envs=1024, max_num_threads=0)",
        5e6,
    ),
    "mujoco HalfCheetah-v5 64 T=2": (
        "make(mujoco.env_class('HalfCheetah-v5'), backend='Multithreading', num_envs=64, max_num_threads=2)",
        0.3e6,
    ),
    "atari pong 16 T=2": (
        "make(atari.env_class('pong'), backend='Multithreading', num_envs=16, max_num_threads=2)",
        0.05e6,
    ),
    "torch hand-off cpu cartpole 4096 T=2": (
        "make(envs.CartPole, backend='Multithreading', num_envs=4096, max_num_threads=2, device='cpu')",
        20e6,
    ),
    "gymnasium CartPole-v1 8 Multiprocessing 2 workers": (
        "make(lambda: gymnasium.make('CartPole-v1'), backend='Multiprocessing', num_envs=8, num_workers=2)",
        0.4e6,
    ),
}
# One sample of one case on one install, in a fresh process: the install goes first on sys.path, and an
# editable install's import hook (which would take precedence over sys.path) is dropped.
SAMPLE = """
import sys
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "ScikitBuildRedirectingFinder"]
sys.path.insert(0, sys.argv[1])
import shoal
import gymnasium
from shoal import atari, benchmark, envs, mujoco, ocean
from shoal.vector import make
assert shoal.__file__.startswith(sys.argv[1]), shoal.__file__
case = benchmark.Case(sys.argv[2], lambda: eval(sys.argv[3]), int(float(sys.argv[4])))
benchmark.run_cases([case], 1, log=lambda line: None)
print(case.samples[0])
"""


def commit_of(rev: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", rev], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def install(commit: str) -> Path:
    """shoal at ``commit``, pip-installed into its own folder (once)."""
    target = BUILD / commit[:12] / "lib"
    if (target / "shoal").is_dir():
        return target
    with tempfile.TemporaryDirectory() as folder:
        archive = Path(folder) / "source.tar"
        subprocess.run(["git", "archive", "-o", str(archive), commit], cwd=ROOT, check=True)
        with tarfile.open(archive) as tar:
            tar.extractall(Path(folder) / "source", filter="data")
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target),
             str(Path(folder) / "source"), f"-Cbuild-dir={BUILD / commit[:12] / 'build'}"],
            check=True,
        )  # fmt: skip
    return target


def sample(target: Path, name: str) -> float:
    expression, steps = CASES[name]
    result = subprocess.run(
        [sys.executable, "-c", SAMPLE, str(target), name, expression, str(steps)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": ""},
    )
    return float(result.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base")
    parser.add_argument("head", nargs="?", default="HEAD")
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--cases", help="comma-separated subset of: " + ", ".join(CASES))
    args = parser.parse_args()
    names = [n.strip() for n in args.cases.split(",")] if args.cases else list(CASES)
    commits = {"base": commit_of(args.base), "head": commit_of(args.head)}
    targets = {side: install(commit) for side, commit in commits.items()}
    print(f"base {commits['base'][:12]}  head {commits['head'][:12]}  repeats {args.repeats}  load {os.getloadavg()}")
    samples = {name: {"base": [], "head": []} for name in names}
    for r in range(args.repeats):
        for name in names:
            order = ("base", "head") if r % 2 == 0 else ("head", "base")
            for side in order:
                samples[name][side].append(sample(targets[side], name))
            print(f"  repeat {r + 1}/{args.repeats}  {name:<26} base {samples[name]['base'][-1]:>14,.0f}"
                  f"  head {samples[name]['head'][-1]:>14,.0f}")  # fmt: skip
    print("\n| case | base median SPS (spread) | head median SPS (spread) | head/base medians | paired median |")
    print("|---|---:|---:|---:|---:|")
    for name, sides in samples.items():
        medians = {side: statistics.median(values) for side, values in sides.items()}
        spreads = {side: (max(v) - min(v)) / medians[side] for side, v in sides.items()}
        paired = statistics.median(h / b for h, b in zip(sides["head"], sides["base"]))
        print(
            f"| {name} | {medians['base']:,.0f} ({spreads['base']:.0%}) | {medians['head']:,.0f} "
            f"({spreads['head']:.0%}) | {medians['head'] / medians['base']:.3f} | {paired:.3f} |"
        )
    print(f"\nload at end {os.getloadavg()}")


if __name__ == "__main__":
    main()
