"""`shoal bench`'s figure: a title naming env, batch and machine; each bar's value written; peers marked."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

import matplotlib

matplotlib.use("Agg")

from shoal.bench_command import bench_figure, is_peer
from shoal.benchmark import Case


def case(name, *samples):
    return Case(name, build=None, agent_steps=1, samples=list(samples))


def test_figure_has_title_values_log_scale_and_marked_peers():
    cases = [
        case("Multithreading n=64 T=2", 2.1e7, 2.2e7, 2.0e7),
        case("EnvPool CartPole-v1 T=2", 5.0e6, 5.1e6, 4.9e6),
        case("Serial n=64", 9.0e5, 9.1e5, 8.9e5),
        case("gymnasium SyncVectorEnv CartPole-v1", 4.0e4, 4.2e4, 3.9e4),
    ]
    fig = bench_figure(cases, "shoal bench: cartpole, 64 envs per batch\nSome CPU, 2 physical cores, load 1.00")
    ax = fig.axes[0]
    assert (
        ax.get_title().startswith("shoal bench: cartpole, 64 envs per batch") and "2 physical cores" in ax.get_title()
    )
    assert ax.get_xscale() == "log"
    values = [t.get_text() for t in ax.texts]
    assert values == ["21M", "5M", "900K", "40K"]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[1] == "EnvPool CartPole-v1 T=2  (peer)" and labels[0] == "Multithreading n=64 T=2"
    hatched = [bool(p.get_hatch()) for p in ax.patches[: len(cases)]]
    assert hatched == [is_peer(c) for c in cases] == [False, True, False, True]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["shoal", "peer"]
