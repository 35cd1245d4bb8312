"""`shoal bench`'s figure: a title naming env, batch and machine; each bar's value written; peers marked;
bars on a linear axis from zero (their lengths compare as the speeds do); a legend without empty entries."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

import matplotlib

matplotlib.use("Agg")

from shoal.bench_command import bench_figure, is_peer, write_plot
from shoal.benchmark import Case


def case(name, *samples):
    return Case(name, build=None, agent_steps=1, samples=list(samples))


def test_figure_has_title_values_a_linear_axis_from_zero_and_marked_peers():
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
    assert ax.get_xscale() == "linear" and ax.get_xlim()[0] == 0
    assert all(bar.get_x() == 0 for bar in ax.patches[: len(cases)])  # every bar starts at zero
    assert [bar.get_width() for bar in ax.patches[: len(cases)]] == [c.median for c in cases]
    assert "log" not in ax.get_xlabel()
    values = [t.get_text() for t in ax.texts]
    assert values == ["21M", "5M", "900K", "40K"]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[1] == "EnvPool CartPole-v1 T=2  (peer)" and labels[0] == "Multithreading n=64 T=2"
    hatched = [bool(p.get_hatch()) for p in ax.patches[: len(cases)]]
    assert hatched == [is_peer(c) for c in cases] == [False, True, False, True]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["shoal", "peer"]


@pytest.mark.parametrize(
    "names, legend",
    [
        (["Multithreading n=16 T=2", "Serial n=16"], ["shoal"]),  # `shoal bench --no-peers`, or none installed
        (
            ["Multithreading n=16 T=2", "ale-py AtariVectorEnv pong T=2 (its defaults: preset ale_vector)"],
            ["shoal", "peer"],
        ),
    ],
)
def test_a_rendered_figure_has_no_empty_legend_entry(tmp_path, names, legend):
    cases = [case(name, 3.0e4 * (i + 1), 3.1e4 * (i + 1)) for i, name in enumerate(names)]
    fig = bench_figure(cases, "shoal bench: atari:pong, 16 envs per batch")
    fig.canvas.draw()  # rendered, as savefig does
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == legend
    assert ax.get_xlim()[0] == 0 and ax.get_xlim()[1] > max(max(c.samples) for c in cases)
    assert write_plot(cases, tmp_path / "bench.png", "t") and (tmp_path / "bench.png").read_bytes()[:4] == b"\x89PNG"
