"""Ocean envs' Logs in infos: every key my_log writes, PufferLib's vec_log values, the class's cadence.

The reference for values is PufferLib's own arithmetic: the C harness runs vec_log as the sdist's
env_binding.h does (every env's Log summed in float and cleared, divided by n, passed to my_log) after
every log_interval-th step, over the same envs, seeds and actions as shoal.
"""

import re

import numpy as np
import pytest
from test_ocean import ENVS, TEST_TREE, env_class, ocean_tree  # noqa: F401 (fixtures)

from shoal.ocean import harness
from shoal.vector import make

from rollouts import action_batches

SHOAL_KEYS = {"n", "episodes"}
# my_init keywords that make an episode end within the test (terraform's run 8,192 steps by default)
SHORT_EPISODES = {
    "terraform": {"reset_frequency": 300}
}  # n: vec_log's own; episodes: shoal's count of env steps that ended some


def my_log_keys(binding_source: str) -> set:
    """The keys of every assign_to_dict call in the body of my_log (read here on its own, not with
    shoal's reader)."""
    start = binding_source.index("my_log(PyObject")
    body = binding_source[start : binding_source.index("\n}", start)]
    return set(re.findall(r'assign_to_dict\(\s*dict\s*,\s*"(\w+)"', body))


def reports_by_step(cls, num_envs: int, steps: int, seed: int, threads: int, schedule: str = "static", **kw):
    with make(
        cls, backend="Multithreading", num_envs=num_envs, max_num_threads=threads, schedule=schedule, seed=seed, **kw
    ) as vecenv:
        actions = action_batches(vecenv, steps, seed + 1)
        vecenv.reset(seed)
        reports = {}
        for t in range(steps):
            infos = vecenv.step(actions[t])[4]
            if infos:
                (reports[t],) = infos
    return actions, reports


@pytest.mark.parametrize("name", sorted(ENVS))
def test_infos_carry_every_key_of_my_log(env_class, ocean_tree, name):  # noqa: F811
    expected = my_log_keys((ocean_tree / name / "binding.c").read_text()) | SHOAL_KEYS
    cls = env_class(name)
    with make(
        cls, backend="Multithreading", num_envs=16, max_num_threads=2, seed=1, env_kwargs=SHORT_EPISODES.get(name, {})
    ) as vecenv:
        actions = action_batches(vecenv, 256, 2)
        vecenv.reset(1)
        for t in range(8000):
            infos = vecenv.step(actions[t % 256])[4]
            if infos:
                break
    assert infos, f"{name}: no report in 8000 steps"
    assert set(infos[0]) == expected, f"{name}: infos keys differ from my_log's"


@pytest.mark.parametrize(
    "name, kwargs, num_envs, steps",
    [("enduro", {"log_interval": 500}, 16, 6000), ("snake", {"report_interval": 40}, 4, 1000)],
)
def test_reports_are_pufferlib_vec_log_on_every_thread_count(env_class, tmp_path, name, kwargs, num_envs, steps):  # noqa: F811
    """enduro (14 keys) and snake (multi-agent): the reports come at the class's cadence, at the steps
    where PufferLib's vec_log reports, with its values (shoal sums in double, PufferLib in float: equal
    to float rounding), and are bit-identical on every thread count and schedule."""
    import shoal.ocean as ocean

    cls = ocean.env_class(name, **ENVS[name], **kwargs)
    interval = next(iter(kwargs.values()))
    actions, reference = reports_by_step(cls, num_envs, steps, seed=5, threads=0)
    assert len(reference) >= 3, f"{name}: too few reports to compare"
    assert all((t + 1) % interval == 0 for t in reference)
    pufferlib = harness.trace(cls, num_envs, 5, actions, tmp_path, log_interval=interval)["logs"]
    assert sorted(reference) == sorted(pufferlib)
    for t, report in reference.items():
        assert set(report) - {"episodes"} == set(pufferlib[t]), f"step {t}"
        for key, value in pufferlib[t].items():
            assert report[key] == pytest.approx(value, rel=2e-6, abs=1e-6), f"{name} step {t}: {key}"
    for threads, schedule in ((1, "static"), (2, "static"), (2, "dynamic"), (3, "dynamic")):
        assert reports_by_step(cls, num_envs, steps, 5, threads, schedule)[1] == reference, (threads, schedule)


def test_log_interval_is_the_class_cadence(env_class):  # noqa: F811
    """squared's log_interval: a report after every 3rd step since reset in which an episode ended
    since the previous one, averaging exactly those episodes; none in between."""
    cls = env_class("squared")
    num_envs = 16
    with make(cls, backend="Multithreading", num_envs=num_envs, seed=2, env_kwargs={"log_interval": 3}) as vecenv:
        assert vecenv.driver_env.log_interval == 3
        actions = action_batches(vecenv, 300, seed=2)
        vecenv.reset(2)
        length = np.zeros(num_envs, dtype=np.int64)
        window, reports = [], 0
        for t in range(300):
            _, _, terminals, _, infos = vecenv.step(actions[t])
            length += 1
            window += [int(n) for n in length[terminals]]
            length[terminals] = 0
            if (t + 1) % 3 or not window:
                assert infos == [], f"step {t}"
                continue
            (report,) = infos
            assert report["n"] == len(window) and report["episode_length"] == pytest.approx(np.mean(window))
            window, reports = [], reports + 1
    assert reports >= 20


def test_default_cadence_is_the_class_default(env_class):  # noqa: F811
    """Without a keyword, the class's default cadence: squared's log_interval=128."""
    _, reports = reports_by_step(env_class("squared"), 16, 600, seed=3, threads=0)
    assert sorted(reports) == [127, 255, 383, 511]


def test_a_log_of_more_keys_than_the_sdk_stats_slots_reaches_infos(ocean_tree):  # noqa: F811
    """A test env whose my_log writes 40 keys (the SDK keeps 16 stats per env; an env that keeps its
    own log may have up to 64): every key reaches infos with vec_log's value, mean(j * length)."""
    import shoal.ocean as ocean

    cls = ocean.env_class("manykeys", TEST_TREE)
    assert len(cls.describe()["stats"]) == 41
    num_envs = 3
    with make(cls, backend="Multithreading", num_envs=num_envs, max_num_threads=2, seed=0) as vecenv:
        vecenv.reset(0)
        rng = np.random.default_rng(0)
        length = np.zeros(num_envs, dtype=np.int64)
        window, reports = [], 0
        for t in range(200):
            actions = (rng.random(num_envs) < 0.3).astype(np.int32)
            infos = vecenv.step(actions)[4]
            length += 1
            window += [int(n) for n in length[actions == 1]]
            length[actions == 1] = 0
            if infos:
                (report,) = infos
                assert (t + 1) % 4 == 0 and report["n"] == len(window)
                for j in range(40):
                    assert report[f"k{j}"] == pytest.approx(j * np.mean(window), rel=1e-6), (t, j)
                window, reports = [], reports + 1
    assert reports >= 40


def test_my_init_reads_doubles_bools_and_ints_as_pufferlib_passes_them(ocean_tree):  # noqa: F811
    """PufferLib's unpack() reads a Python float as a double, a bool and an int as ints: the test env
    keeps `scale` as a double and shows (scale - 0.1) * 1e9, 0 only if 0.1 arrived as a double."""
    import shoal.ocean as ocean
    from shoal.errors import APIUsageError

    cls = ocean.env_class("paramtypes", TEST_TREE)
    kinds = dict(cls.ocean["params"])
    assert kinds == {"scale": "double", "flag": "bool", "count": "int"}
    env = cls(num_envs=3, env_params=[{}, {"flag": True, "count": -7}, {"scale": 0.1 + 1e-9}])
    try:
        obs, _ = env.reset(0)
        np.testing.assert_array_equal(
            obs, np.array([[0, 0, 3], [0, 1, -7], [np.float32((0.1 + 1e-9 - 0.1) * 1e9), 0, 3]], np.float32)
        )
    finally:
        env.close()
    with pytest.raises(APIUsageError, match="flag must be a bool"):
        cls(num_envs=1, flag=2.5)
