"""PufferLib Ocean envs from the pinned pufferlib 3.0.0 sdist, compiled unmodified, on shoal.

Each env is compiled once per session into a temporary build cache (the sdist itself is fetched
once into the user's cache). Parity: Serial == Multithreading T=0..3 (static and dynamic) ==
PufferEnv, bit for bit over 2,000 random steps. Dynamics: shoal's trajectories equal those of
the env's own C code driven directly by a C harness (PufferLib's vec_step loop), step for step.
"""

import os
import shutil
import time

import numpy as np
import pytest

import shoal.ocean as ocean
from shoal import benchmark
from shoal.errors import APIUsageError, EnvError
from shoal.native.manifest import file_sha256
from shoal.ocean import build, harness, source
from shoal.ocean.check import check
from shoal.ocean.errors import OceanError
from shoal.vector import make

from rollouts import action_batches, assert_same, rollout

HERE = os.path.dirname(os.path.abspath(__file__))
TEST_TREE = os.path.join(HERE, "ocean_tree")  # Ocean-layout envs written for these tests

# Ocean class keyword arguments per env; heavy multi-agent envs get fewer agents to stay quick.
ENVS = {
    "blastar": {},
    "boids": {"num_boids": 8},
    "breakout": {},
    "cartpole": {},
    "checkers": {},
    "connect4": {},
    "convert": {"num_agents": 32},
    "cpr": {},
    "drone": {},
    "enduro": {},
    "go": {},
    "grid": {"num_maps": 64},  # MY_SHARED: the mazes are built once per vector
    "nmmo3": {
        "width": [64],
        "height": [64],
        "num_players": 8,
        "num_enemies": 16,
        "num_resources": 16,
        "num_weapons": 8,
        "num_gems": 4,
        "tiers": 2,
        "levels": 7,
    },
    "pacman": {},
    "pong": {},
    "rware": {},
    "school": {
        "num_agents": 32,
        "num_armies": 4,
        "size_x": 3.0,
        "size_z": 3.0,
    },  # the class default 1.0 cannot fit two bases 2.0 apart: its c_reset loops forever
    "snake": {"num_snakes": 16, "num_food": 64, "width": 40, "height": 40},
    "squared": {},
    "target": {},
    "template": {},
    "terraform": {"num_agents": 4, "map_size": 32},
    "tetris": {},
    "tower_climb": {"num_maps": 16},  # MY_SHARED: the puzzles are built once per vector
    "trash_pickup": {},
    "tripletriad": {},
}
MULTI_AGENT = ("convert", "cpr", "nmmo3", "rware", "school", "snake", "target", "terraform", "trash_pickup")
REQUIRED = ("go", "pacman", "enduro", "terraform", "snake", "breakout", "cartpole", "squared")
NUM_ENVS = 4
STEPS = 2000


@pytest.fixture(scope="session")
def ocean_tree(tmp_path_factory):
    """The sdist's pufferlib/ocean (fetched once into the user's cache); builds go to a session tmp dir."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SHOAL_OCEAN_BUILD_CACHE", str(tmp_path_factory.mktemp("ocean_builds")))
        yield source.ocean_dir()


_classes = {}


@pytest.fixture(scope="session")
def env_class(ocean_tree):
    def get(name):
        if name not in _classes:
            _classes[name] = ocean.env_class(name, **ENVS[name])
        return _classes[name]

    return get


def test_acceptance_set_is_covered():
    assert set(REQUIRED) <= set(ENVS) and len(ENVS) >= 10
    assert len(MULTI_AGENT) >= 2 and set(MULTI_AGENT) <= set(ENVS)


def test_sdist_is_the_pinned_file(ocean_tree):
    archive = source.fetch_sdist()
    assert archive.name == "pufferlib-3.0.0.tar.gz"
    assert file_sha256(archive) == source.SDIST_SHA256
    assert set(ENVS) <= set(ocean.available())


@pytest.mark.parametrize("name", sorted(ENVS))
def test_compiled_sources_are_byte_identical(env_class, ocean_tree, name):
    library = env_class(name).ocean["library"]
    staged = library.folder / "ocean" / name
    files = sorted(p.relative_to(staged) for p in staged.rglob("*") if p.is_file())
    assert {"binding.c", f"{name}.h"} <= {str(f) for f in files}
    tree = ocean_tree / name
    for relative in files:
        assert (staged / relative).read_bytes() == (tree / relative).read_bytes(), f"{name}/{relative} was modified"
    # What the binding includes as "../env_binding.h" is shoal's contract, not PufferLib's.
    ours = (library.folder / "ocean" / "env_binding.h").read_bytes()
    assert ours == (build.CSRC / "env_binding.h").read_bytes()
    assert ours != (ocean_tree / "env_binding.h").read_bytes()


def _trajectory_changes(ref):
    moved = not np.array_equal(ref["obs"][0], ref["obs"][-1])
    events = ref["terminals"].any() or np.any(ref["rewards"] != 0)
    return moved and events


@pytest.mark.parametrize("name", sorted(ENVS))
def test_backends_agree_bit_for_bit(env_class, name):
    cls = env_class(name)
    with make([cls] * NUM_ENVS, backend="Serial", num_envs=NUM_ENVS, seed=3) as vecenv:
        reference = rollout(vecenv, STEPS, seed=3)
    assert _trajectory_changes(reference), f"{name}: the rollout must move and reward or end episodes"
    for threads in (0, 1, 2, 3):
        for schedule in ("static", "dynamic"):
            with make(
                cls, backend="Multithreading", num_envs=NUM_ENVS, seed=3, max_num_threads=threads, schedule=schedule
            ) as vecenv:
                assert_same(reference, rollout(vecenv, STEPS, seed=3), f"{name} Multithreading T={threads} {schedule}")
    env = cls(num_envs=NUM_ENVS, seed=3)
    try:
        assert_same(reference, rollout(env, STEPS, seed=3), f"{name} PufferEnv")
    finally:
        env.close()


@pytest.mark.parametrize("name", sorted(ENVS))
def test_dynamics_equal_the_env_driven_directly(env_class, tmp_path, name):
    """The env's C code stepped by a plain C loop (PufferLib's vec_step, same sources and flags,
    rand() from the same per-env streams) gives shoal's observations, rewards and terminals."""
    cls = env_class(name)
    env = cls(num_envs=3, seed=5)
    try:
        actions = action_batches(env, 1000, 1)
        got = rollout(env, 1000, seed=5)
    finally:
        env.close()
    direct = harness.trace(cls, 3, 5, actions, tmp_path)
    for key in ("obs", "rewards", "terminals"):
        np.testing.assert_array_equal(got[key], direct[key], err_msg=f"{name}: {key} differ from the C loop")


@pytest.mark.parametrize("name", ["cartpole", "snake", "tower_climb"])
def test_same_streams_bench_loop_steps_the_trajectories_shoal_benchmarks(env_class, tmp_path, name):
    """bench_ocean's (a'): the C loop with shoal's per-env streams, actions and warm-up ends where shoal's
    benchmark loop (reset(0), 20 warm-up steps, then the same rows again) ends, byte for byte."""
    cls = env_class(name)
    steps = 37
    with make(cls, backend="Multithreading", num_envs=3, max_num_threads=0) as vecenv:
        actions = benchmark.warm_up(vecenv)  # as bench_ocean's (b): reset(0), 20 steps of the rows in turn
        for i in range(steps):
            vecenv.send(actions[i % 16])
            obs, rewards, terminals = (np.array(x) for x in vecenv.recv()[:3])
    final = tmp_path / "final.bin"
    harness.bench(cls, 3, steps, tmp_path, actions=np.stack(actions), shoal_rand=True, final=final)
    with pytest.raises(OceanError, match="needs the actions"):
        harness.bench(cls, 3, steps, tmp_path, shoal_rand=True, final=final)
    raw = np.fromfile(final, dtype=np.uint8)
    expected = np.concatenate([obs.view(np.uint8).ravel(), rewards.view(np.uint8), terminals.astype(np.uint8)])
    np.testing.assert_array_equal(raw, expected, err_msg=f"{name}: the loop ended elsewhere")


ADDRESS_SPACE_OF_A_VECTOR = """
import sys
from shoal import ocean
from shoal.vector import make
def address_space():
    return int(next(line for line in open("/proc/self/status") if line.startswith("VmSize:")).split()[1]) * 1024
cls = ocean.env_class("tower_climb", num_maps=16)
before = address_space()
with make(cls, backend="Serial", num_envs=4, seed=1) as vecenv:
    vecenv.reset(seed=1)
print(address_space() - before)
"""


def test_an_env_that_searches_in_its_init_keeps_no_memory_it_freed(ocean_tree, time_limit, tmp_path):
    # tower_climb's my_shared solves its puzzles by BFS: millions of malloc/free pairs and a 10M-node queue
    # per search. Inside the init arena every one of them was kept (71 GB of address space for this vector;
    # the test process could then no longer fork a worker: ENOMEM). A fresh process, so nothing else counts.
    time_limit(240)
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", ADDRESS_SPACE_OF_A_VECTOR], capture_output=True, text=True, timeout=220, check=True
    )
    grown = int(result.stdout.split()[-1])
    assert grown < 2 << 30, f"address space grew by {grown / 2**30:.1f} GiB"


def test_multiprocessing_runs_ocean_envs(env_class, time_limit):
    time_limit(240)
    cls = env_class("snake")
    with make([cls] * NUM_ENVS, backend="Serial", num_envs=NUM_ENVS, seed=1) as vecenv:
        reference = rollout(vecenv, 200, seed=1)
    with make(cls, backend="Multiprocessing", num_envs=NUM_ENVS, num_workers=2, seed=1) as vecenv:
        assert_same(reference, rollout(vecenv, 200, seed=1), "snake Multiprocessing")


def test_infos_report_the_env_log_as_pufferlib_does(env_class):
    """cartpole reports every step (its class's report_interval=1) in which episodes ended: their mean."""
    cls = env_class("cartpole")
    with make(cls, backend="Multithreading", num_envs=64, max_num_threads=2, seed=0) as vecenv:
        vecenv.reset(0)
        actions = np.zeros(64, dtype=np.int32)
        reports, ended = [], 0
        for _ in range(200):
            _, _, terminals, _, infos = vecenv.step(actions)
            assert len(infos) == int(terminals.any())
            ended += int(terminals.sum())
            reports += infos
    assert sum(report["n"] for report in reports) == ended >= 64
    for report in reports:
        assert {"score", "episode_length", "pole_angle_termination", "x_threshold_termination", "n"} <= set(report)
        # Always pushing left: the pole falls within a few dozen steps, every step rewards 1.
        assert 5 <= report["episode_length"] <= 60
        assert report["score"] == pytest.approx(report["episode_length"], rel=1e-5)
        assert "episode_return" not in report  # cartpole's my_log writes none; infos carry what it writes
        assert report["pole_angle_termination"] + report["x_threshold_termination"] == pytest.approx(1.0)


@pytest.mark.parametrize("threads", [0, 2])
def test_each_report_averages_the_episodes_ended_since_the_last(env_class, threads):
    """squared logs perf, score, return and length per episode; every report (each 128th step, the
    class's log_interval) must be their mean over exactly the episodes that ended after the previous
    report, up to and including its own step."""
    num_envs = 32
    cls = env_class("squared")
    with make(cls, backend="Multithreading", num_envs=num_envs, max_num_threads=threads, seed=3) as vecenv:
        actions = action_batches(vecenv, 600, seed=4)
        vecenv.reset(3)
        length = np.zeros(num_envs, dtype=np.int64)
        window = []  # (reward, length) of the episodes ended since the last report
        reports = 0
        for t in range(600):
            _, rewards, terminals, _, infos = vecenv.step(actions[t])
            length += 1
            for i in np.flatnonzero(terminals):
                window.append((float(rewards[i]), int(length[i])))
                length[i] = 0
            if not infos:
                continue
            (report,) = infos
            assert (t + 1) % 128 == 0, f"step {t}"
            ended = np.array(window)
            assert report["n"] == len(ended) == report["episodes"], f"step {t}"
            assert report["episode_length"] == pytest.approx(ended[:, 1].mean(), rel=1e-6), f"step {t}"
            assert report["score"] == pytest.approx(ended[:, 0].mean(), rel=1e-6), f"step {t}"
            assert report["episode_return"] == pytest.approx(ended[:, 0].mean(), rel=1e-6), f"step {t}"
            assert report["perf"] == pytest.approx((ended[:, 0] > 0).mean(), rel=1e-6), f"step {t}"
            window = []
            reports += 1
    assert reports == 4


def test_reports_of_many_envs_are_the_same_on_every_thread_count(env_class):
    """Above one collection block (EnvArray::kLogBlockEnvs, 256), the pool's threads take the blocks
    of a report in parallel: every report must be bit-identical to T=0's and still average exactly
    the episodes ended since the previous one."""
    num_envs = 600  # blocks of 256, 256 and 88 envs
    cls = env_class("cartpole")  # its Log holds fractions (perf) besides counts
    runs = {}
    for threads, schedule in ((0, "static"), (2, "static"), (3, "dynamic")):
        with make(
            cls, backend="Multithreading", num_envs=num_envs, max_num_threads=threads, schedule=schedule, seed=5
        ) as vecenv:
            actions = action_batches(vecenv, 120, seed=6)
            vecenv.reset(5)
            length = np.zeros(num_envs, dtype=np.int64)
            window, reports = [], []
            for t in range(120):
                _, rewards, terminals, _, infos = vecenv.step(actions[t])
                length += 1
                window += [int(n) for n in length[terminals]]
                length[terminals] = 0
                for report in infos:
                    assert report["n"] == len(window), f"T={threads} step {t}"
                    assert report["episode_length"] == pytest.approx(np.mean(window), rel=1e-6), f"T={threads} step {t}"
                    window = []
                reports += infos
        runs[threads, schedule] = reports
    assert len(runs[0, "static"]) >= 3
    for key, reports in runs.items():
        assert reports == runs[0, "static"], key


def test_time_limit_reset_keeps_the_episodes_the_log_holds():
    """logreset's c_reset clears its Log (as snake's does). The env logs a one-step episode, then runs
    into shoal's time limit (3 steps), four times before the log is collected: the c_reset of each
    truncation must neither lose the episodes the Log holds nor hide the next one. (The native vector
    is stepped directly: the vector collects its log only once as many episodes as envs have ended.)"""
    cls = ocean.env_class("logreset", TEST_TREE)
    env = cls(num_envs=1, max_episode_steps=3)
    try:
        env.reset(0)
        vec = env._vec
        vec.collect_log(0, 1)
        pattern = [1, 0, 0, 0]  # a logged episode of length 1, then a truncation after 3 steps
        for cycle in range(3):
            ended = [vec.step_actions(np.array([action], dtype=np.int32)) for action in pattern * 4]
            assert ended == [1, 0, 0, 1] * 4, f"cycle {cycle}"
            log = vec.collect_log(0, 1)
            # 8 shoal episodes (4 logged, 4 truncated); stats are sums over them divided by 8.
            assert log["episodes"] == 8
            assert (log["n"] * 8, log["score"] * 8) == (4, 4), f"cycle {cycle}"
    finally:
        env.close()


def test_clock_and_pid_seeded_envs_are_deterministic(env_class):
    """rware calls srand(time(NULL)), terraform seeds from the clock and the pid: runs a second
    apart give the same trajectories, and another seed gives others."""
    for name in ("rware", "terraform"):
        cls = env_class(name)
        runs = []
        for seed in (7, 7, 8):
            env = cls(num_envs=2, seed=seed)
            runs.append(rollout(env, 100, seed=seed))
            env.close()
            time.sleep(0.6)
        assert_same(runs[0], runs[1], f"{name} same seed")
        assert not np.array_equal(runs[0]["obs"], runs[2]["obs"]), f"{name}: another seed must differ"


def test_check_passes_on_ocean_envs(env_class):
    for name in ("cartpole", "snake", "terraform", "checkers", "nmmo3"):
        result = check(env_class(name), backend="Multithreading", num_envs=4, steps=300, max_num_threads=2)
        assert result.passed, str(result)


def test_check_names_env_and_step_of_global_state(ocean_tree):
    cls = ocean.env_class("globalcount", TEST_TREE)
    result = check(cls, backend="Multithreading", num_envs=4, steps=50, max_num_threads=2)
    assert not result.passed
    assert (result.mismatch.step, result.mismatch.env, result.mismatch.field) == (1, 0, "observations")
    assert "at step 1 in env 0" in str(result)


def test_class_keywords_reach_my_init(env_class):
    cls = env_class("snake")
    runs = []
    for reward_death in (-1.0, -5.0):
        env = cls(num_envs=2, seed=2, reward_death=reward_death)
        runs.append(rollout(env, 300, seed=2))
        env.close()
    assert runs[0]["rewards"].min() == pytest.approx(-1.0) and runs[1]["rewards"].min() == pytest.approx(-5.0)


def test_layout_keywords_need_their_own_class(env_class):
    with pytest.raises(OceanError, match="layout.*env_class"):
        env_class("snake")(num_envs=1, num_snakes=4)
    with pytest.raises(OceanError, match="no keyword argument.*'bogus'.*valid"):
        env_class("snake")(num_envs=1, bogus=1)
    small = ocean.env_class("snake", num_snakes=4, num_food=16, width=20, height=20)
    with make(small, backend="Multithreading", num_envs=2, max_num_threads=2) as vecenv:
        assert vecenv.num_agents == 8


def test_raylib_called_outside_rendering_is_an_env_error(ocean_tree):
    """A test env draws inside c_step: shoal's raylib stand-in reports it, no crash."""
    cls = ocean.env_class("drawstep", TEST_TREE)
    env = cls(num_envs=1)
    try:
        env.reset(0)
        with pytest.raises(EnvError, match="DrawText"):
            env.step(np.zeros(env.num_agents, dtype=np.int32))
    finally:
        env.close()


@pytest.mark.parametrize("name", ["squared", "cartpole"])  # the adapter's two layouts (see its comment)
def test_stepping_before_the_first_reset_is_an_env_error(env_class, name):
    """my_init runs at the first reset: before it the env has no buffers, and the adapter must refuse
    to step it (a closed env must not run c_close either), then step normally once reset."""
    cls = env_class(name)
    env = cls(num_envs=2)
    try:
        with pytest.raises(EnvError, match=r"env 0 \(.*\): stepped before its first reset; env 1"):
            env.step(np.zeros(2, dtype=np.int32))
        env.reset(0)
        for _ in range(50):
            env.step(np.ones(2, dtype=np.int32))
        assert np.any(env.observations != 0)
    finally:
        env.close()
    cls(num_envs=1).close()  # never reset: closed without c_close


# ---- bad input -------------------------------------------------------------------------------------


def _copy_tree(tmp_path, name="globalcount"):
    tree = tmp_path / "tree"
    shutil.copytree(os.path.join(TEST_TREE, name), tree / name)
    return tree


def _leftovers(root):
    return sorted(p.name for p in root.iterdir()) if root.exists() else []


def test_unknown_env_lists_the_available_ones(ocean_tree):
    with pytest.raises(OceanError, match=r"no Ocean env 'snak'.*available: .*snake"):
        ocean.env_class("snak")


def test_missing_files_are_named(tmp_path):
    tree = _copy_tree(tmp_path)
    (tree / "globalcount" / "globalcount.h").unlink()
    with pytest.raises(OceanError, match="globalcount.h is missing"):
        ocean.env_class("globalcount", tree)
    with pytest.raises(OceanError, match="not a PufferLib source tree"):
        ocean.env_class("globalcount", tmp_path / "nowhere")


def test_compile_error_shows_the_compiler_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOAL_OCEAN_BUILD_CACHE", str(tmp_path / "builds"))
    tree = _copy_tree(tmp_path)
    header = tree / "globalcount" / "globalcount.h"
    header.write_text(header.read_text().replace("env->tick += 1;", "env->tick += undeclared_thing;"))
    with pytest.raises(OceanError, match=r"(?s)binding\.c.*undeclared_thing"):
        ocean.env_class("globalcount", tree)
    assert _leftovers(tmp_path / "builds") == []


def _fake_build(root, name, age_s, now):
    entry = root / f"{name}-{os.urandom(12).hex()}"
    entry.mkdir(parents=True)
    (entry / f"{name}.so").write_bytes(b"x" * 1000)
    os.utime(entry, (now - age_s, now - age_s))
    return entry


def test_a_new_build_prunes_that_envs_least_recently_used_builds(tmp_path, monkeypatch):
    from shoal.ocean.build import IN_USE_SECONDS, KEEP_BUILDS_PER_ENV

    root = tmp_path / "builds"
    monkeypatch.setenv("SHOAL_OCEAN_BUILD_CACHE", str(root))
    now, day = time.time(), 24 * 3600
    old = [_fake_build(root, "globalcount", (2 + i) * day, now) for i in range(10)]  # newest first
    recent = [_fake_build(root, "globalcount", 3600, now) for _ in range(2)]  # maybe loading elsewhere
    others = [_fake_build(root, "other_env", 30 * day, now) for _ in range(12)]
    assert IN_USE_SECONDS <= day
    library = ocean.env_class("globalcount", _copy_tree(tmp_path)).ocean["library"]
    kept = set(root.iterdir())
    assert library.folder in kept
    # the new build and the two recent ones are the 3 most recently used; the 5 next old ones stay
    expected = {library.folder, *recent, *old[: KEEP_BUILDS_PER_ENV - 3], *others}
    assert kept == expected


def test_a_cache_hit_marks_the_build_used(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOAL_OCEAN_BUILD_CACHE", str(tmp_path / "builds"))
    tree = _copy_tree(tmp_path)
    folder = ocean.env_class("globalcount", tree).ocean["library"].folder
    long_ago = time.time() - 40 * 24 * 3600
    os.utime(folder, (long_ago, long_ago))
    assert ocean.env_class("globalcount", tree).ocean["library"].folder == folder  # from the cache
    assert time.time() - folder.stat().st_mtime < 3600


def test_shoal_ocean_clean_removes_every_build_and_dead_staging_folders(tmp_path):
    import subprocess
    import sys

    root = tmp_path / "builds"
    now = time.time()
    builds = [_fake_build(root, name, 60, now) for name in ("squared", "squared", "trash_pickup")]
    dead_stage = root / ".build-squared-abc"
    live_stage = root / ".build-cartpole-def"  # another process's build in progress
    for stage in (dead_stage, live_stage):
        stage.mkdir()
    os.utime(dead_stage, (now - 2 * 3600, now - 2 * 3600))
    unrelated = root / "notes.txt"
    unrelated.write_text("not a build")
    result = subprocess.run(
        [sys.executable, "-m", "shoal", "ocean", "clean"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "SHOAL_OCEAN_BUILD_CACHE": str(root)},
    )
    assert result.returncode == 0, result.stderr
    assert f"removed 4 Ocean build(s), 0.0 MB, from {root}" in result.stdout
    assert not any(p.exists() for p in [*builds, dead_stage])
    assert live_stage.exists() and unrelated.exists()


def test_unreadable_python_class_names_the_file(tmp_path):
    tree = _copy_tree(tmp_path)
    script = tree / "globalcount" / "globalcount.py"
    script.write_text("class Broken(:\n")
    with pytest.raises(OceanError, match=r"globalcount\.py.*syntax error"):
        ocean.env_class("globalcount", tree)
    script.write_text("class NoBinding:\n    def __init__(self, num_envs=1):\n        self.num_agents = 1\n")
    with pytest.raises(OceanError, match=r"globalcount\.py.*binding\.vec_init"):
        ocean.env_class("globalcount", tree)
    script.write_text(
        "import gymnasium\nfrom pufferlib.ocean.x import binding\nclass C:\n"
        "    def __init__(self, num_envs=1, buf=None, seed=0):\n"
        "        self.single_observation_space = load_space()\n"
        "        self.single_action_space = gymnasium.spaces.Discrete(2)\n        self.num_agents = 1\n"
        "        binding.vec_init(num_envs, seed, length=3)\n"
    )
    with pytest.raises(OceanError, match=r"globalcount\.py:5.*load_space"):
        ocean.env_class("globalcount", tree)


def test_bad_sdist_is_refused_and_not_kept(tmp_path, monkeypatch):
    """An index serving a file with another sha256: a clear error, nothing left in the cache."""
    index = tmp_path / "index"
    (index / "pufferlib").mkdir(parents=True)
    (index / "pufferlib" / "pufferlib-3.0.0.tar.gz").write_bytes(b"not the sdist")
    (index / "pufferlib" / "index.html").write_text('<a href="pufferlib-3.0.0.tar.gz">pufferlib-3.0.0.tar.gz</a>')
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_INDEX_URL", index.as_uri())
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "")
    with pytest.raises(OceanError, match="sha256"):
        source.fetch_sdist()
    assert _leftovers(tmp_path / "cache" / "downloads") == []


def test_ocean_errors_are_api_usage_errors():
    assert issubclass(OceanError, APIUsageError)


# ---- command line and config.ini --------------------------------------------------------------------


def _write_config(tmp_path, env_lines):
    path = tmp_path / "config.ini"
    path.write_text(
        "[env]\n" + env_lines + "\n[vec]\nbackend = Multithreading\nnum_envs = 4\nmax_num_threads = 2\n"
        "[run]\nsteps = 20000\nwarmup = 2\n"
    )
    return path


def test_cli_ocean_list_and_build(ocean_tree, capsys):
    from shoal.cli import main

    assert main(["ocean", "list"]) == 0
    assert "terraform" in capsys.readouterr().out
    assert main(["ocean", "build", "snake", "num_snakes=8", "num_food=32", "width=20", "height=20"]) == 0
    out = capsys.readouterr().out
    assert "agents/env: 8" in out and "reward_death" in out
    assert main(["ocean", "build", "snak"]) == 2
    assert "available:" in capsys.readouterr().err


def test_config_runs_and_checks_ocean_envs(ocean_tree, tmp_path, capsys):
    from shoal.cli import main

    config = _write_config(tmp_path, "name = ocean:squared\nsize = 7")
    assert main(["run", "--config", str(config)]) == 0
    assert "SPS" in capsys.readouterr().out
    assert main(["check", "--config", str(config), "--steps", "200"]) == 0
    assert "identical" in capsys.readouterr().out
    broken = _write_config(tmp_path, f"name = ocean:globalcount\nocean_source = {TEST_TREE}")
    assert main(["check", "--config", str(broken), "--steps", "20"]) == 1
    assert "at step 1 in env 0" in capsys.readouterr().out
    unknown = _write_config(tmp_path, "name = ocean:nope")
    assert main(["run", "--config", str(unknown)]) == 2
    assert "available:" in capsys.readouterr().err


def test_check_works_on_bundled_native_envs():
    from shoal.envs import CartPole

    assert check(CartPole, backend="Multithreading", num_envs=4, steps=200, max_num_threads=2).passed


def test_keyword_the_class_does_not_pass_is_an_env_error(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOAL_OCEAN_BUILD_CACHE", str(tmp_path / "builds"))
    tree = _copy_tree(tmp_path)
    binding = tree / "globalcount" / "binding.c"
    binding.write_text(
        binding.read_text().replace('unpack(kwargs, "length");', 'unpack(kwargs, "length") + unpack(kwargs, "speed");')
    )
    env = ocean.env_class("globalcount", tree)(num_envs=2)
    try:
        with pytest.raises(EnvError, match="my_init reads keyword 'speed'"):
            env.reset(0)
    finally:
        env.close()


def test_shoal_time_limit_truncates_and_resets(env_class):
    cls = env_class("go")  # random go games run longer than 50 moves
    env = cls(num_envs=2, seed=0, max_episode_steps=50)
    try:
        result = rollout(env, 120, seed=0)
    finally:
        env.close()
    truncated_steps = np.nonzero(result["truncations"].any(axis=1))[0]
    assert list(truncated_steps[:2]) == [49, 99]


def test_what_my_init_allocates_goes_with_the_vector(env_class):
    """pacman allocates ~30 KB per env in my_init (from the env's arena, see shoal_ocean_arena.h): 20
    vectors of 256 envs made and closed one after another must not keep it (a leak would be ~150 MB)."""
    import psutil

    cls = env_class("pacman")
    process = psutil.Process()

    def cycle():
        with make(cls, backend="Multithreading", num_envs=256, max_num_threads=2, seed=0) as vecenv:
            vecenv.reset(0)
            actions = np.zeros(256, dtype=np.int32)
            for _ in range(5):
                vecenv.step(actions)

    for _ in range(3):
        cycle()
    before = process.memory_info().rss
    for _ in range(20):
        cycle()
    grown = process.memory_info().rss - before
    assert grown < 24 * 2**20, f"RSS grew by {grown / 2**20:.1f} MB over 20 vectors"


@pytest.mark.parametrize("threads", [0, 2])
def test_strict_box_actions_out_of_bounds_never_reach_the_envs(env_class, threads):
    """drone's actions are Box(-1, 1, (4,), float32): under box_actions="strict" the native check (a
    vectorised count) lets the bounds themselves through and stops a value past them, or NaN, before
    any env steps (by default they reach the env: tests/test_ocean_box_actions.py)."""
    cls = env_class("drone")
    with make(
        cls, backend="Multithreading", num_envs=8, max_num_threads=threads, seed=0, box_actions="strict"
    ) as vecenv:
        vecenv.reset(0)
        edges = np.tile(np.array([-1.0, 1.0, 0.0, -1.0], dtype=np.float32), (8, 1))
        vecenv.step(edges)
        for bad in (1.0001, -1.5, np.nan, np.inf):
            actions = edges.copy()
            actions[5, 2] = bad
            before = vecenv.buf.observations.copy()
            with pytest.raises(APIUsageError, match=rf"action {bad} at row 5, dimension 2 is outside \[-1, 1\]"):
                vecenv.send(actions)
            np.testing.assert_array_equal(vecenv.buf.observations, before)
