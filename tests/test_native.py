"""Native envs: parity across every backend and thread count, SDK contracts, errors."""

import os

import numpy as np
import pytest

import shoal
from shoal import _native, seeding
from shoal.envs import BUNDLED, CartPole, Deep, Grid, Squared
from shoal.errors import APIUsageError
from shoal.vector import make

from rollouts import action_batches, assert_same, rollout

NUM_ENVS = 8
STEPS = 2000
# Small per-env costs that differ across envs, so the dynamic schedule sees uneven work.
ENV_KWARGS = {"deep": [{"work": 50 + 40 * i} for i in range(NUM_ENVS)]}


def kwargs_for(name):
    return ENV_KWARGS.get(name, [{} for _ in range(NUM_ENVS)])


def build(name, backend, **options):
    cls = BUNDLED[name]
    per_env = kwargs_for(name)
    if backend == "PufferEnv":
        return cls(num_envs=NUM_ENVS, seed=0, env_params=per_env)
    creators = [cls] * NUM_ENVS
    return make(creators, env_kwargs=per_env, backend=backend, num_envs=NUM_ENVS, seed=0, **options)


@pytest.fixture(scope="module", params=sorted(BUNDLED))
def reference(request):
    with build(request.param, "Serial") as vecenv:
        return request.param, rollout(vecenv, STEPS, seed=11)


def test_reference_crosses_episode_boundaries(reference):
    name, ref = reference
    ended = ref["terminals"] | ref["truncations"]
    assert ended.sum() >= NUM_ENVS, f"{name}: the parity rollout must cover many episode ends"


@pytest.mark.parametrize("threads", [0, 1, 2, 3, 8])
@pytest.mark.parametrize("schedule", ["static", "dynamic"])
def test_multithreading_matches_serial(reference, threads, schedule):
    name, ref = reference
    with build(name, "Multithreading", max_num_threads=threads, schedule=schedule) as vecenv:
        assert_same(ref, rollout(vecenv, STEPS, seed=11), f"{name} Multithreading T={threads} {schedule}")


def test_pufferenv_matches_serial(reference):
    name, ref = reference
    with build(name, "PufferEnv") as env:
        assert_same(ref, rollout(env, STEPS, seed=11), f"{name} PufferEnv")


@pytest.mark.parametrize("workers", [1, 2])
def test_multiprocessing_matches_serial(reference, workers, time_limit):
    time_limit(120)
    name, ref = reference
    with build(name, "Multiprocessing", num_workers=workers) as vecenv:
        assert_same(ref, rollout(vecenv, STEPS, seed=11), f"{name} Multiprocessing workers={workers}")


def test_thread_count_changed_mid_run_keeps_results():
    with build("cartpole", "Serial") as serial, build("cartpole", "Multithreading", max_num_threads=2) as threaded:
        actions = action_batches(serial, 600, seed=5)
        serial.reset(3)
        threaded.reset(3)
        for t in range(600):
            if t % 100 == 50:
                threaded.max_num_threads = [0, 3, 1, 8, 2, 4][(t // 100) % 6]
            a = serial.step(actions[t])
            b = threaded.step(actions[t])
            for x, y in zip(a[:4], b[:4]):
                np.testing.assert_array_equal(x, y)
        assert threaded.max_num_threads == 4


def test_seed_rule_matches_python():
    for seed, index in [(0, 0), (1, 2), (2**64 - 1, 7), (12345, 4095)]:
        assert _native.env_seed(seed, index) == seeding.env_seed(seed, index)
        # A sub-vector starting at env k, given offset_seed(seed, k), seeds its env j like env k + j.
        assert seeding.env_seed(seeding.offset_seed(seed, 5), index) == seeding.env_seed(seed, 5 + index)


def test_different_seeds_differ_and_same_seed_repeats():
    with CartPole(num_envs=16) as env:
        a = rollout(env, 50, seed=1)
        b = rollout(env, 50, seed=1)
        c = rollout(env, 50, seed=2)
    np.testing.assert_array_equal(a["obs"], b["obs"])
    assert not np.array_equal(a["obs"][0], c["obs"][0])
    # Neighbouring envs start differently (seeds mixed, not seed + i into one stream).
    assert len({tuple(row) for row in a["obs"][0]}) == 16


def cartpole_state(env, i):
    offset = (_native.ENV_BASE_SIZE + 7) // 8 * 8
    return np.frombuffer(env.env_memory(i), dtype=np.float64, count=4, offset=offset)


def test_cartpole_dynamics_match_gymnasium():
    import gymnasium

    reference = gymnasium.make("CartPole-v1", disable_env_checker=True).unwrapped
    reference.reset(seed=0)
    with CartPole(num_envs=1, max_episode_steps=0) as env:
        env.reset(0)
        rng = np.random.default_rng(0)
        checked = 0
        for episode in range(30):
            reference.reset(seed=episode)
            state = np.array(reference.state, dtype=np.float64)
            cartpole_state(env, 0)[:] = state
            for _ in range(500):
                action = int(rng.integers(0, 2))
                ref_obs, ref_reward, ref_terminated, _, _ = reference.step(action)
                before = cartpole_state(env, 0).copy()
                env.step(np.array([action], dtype=np.int32))
                if ref_terminated:
                    np.testing.assert_array_equal(env.final_observations[0], ref_obs)
                    assert env.terminals[0] and env.rewards[0] == ref_reward
                    break
                np.testing.assert_array_equal(env.observations[0], ref_obs)
                np.testing.assert_array_equal(cartpole_state(env, 0), np.asarray(reference.state))
                assert not before.tobytes() == cartpole_state(env, 0).tobytes()
                checked += 1
        assert checked > 200


def test_time_limit_is_a_truncation():
    with CartPole(num_envs=4, max_episode_steps=7) as env:
        env.reset(0)
        for t in range(7):
            env.step(np.zeros(4, dtype=np.int32) + (t % 2))
        # Alternating actions keep the pole up for 7 steps: every env hits the limit together.
        assert env.truncations.all() and not env.terminals.any()
        # Same-step autoreset: the observation is a fresh episode's, the final one is kept apart.
        assert np.all(np.abs(env.observations) <= 0.05)
        assert not np.array_equal(env.final_observations, env.observations)


def test_grid_dead_agents_are_masked():
    with Grid(num_envs=4, num_traps=60, num_food=1) as env:
        env.reset(3)
        deaths = 0
        actions = action_batches(env, 300, seed=2)
        for t in range(300):
            env.step(actions[t])
            dead = ~env.masks
            # A dead agent earns nothing and sees zeros until its env resets.
            assert np.all(env.rewards[dead] == 0)
            assert np.all(env.observations[dead] == 0)
            deaths += int(env.terminals.sum())
        assert deaths > 0


def test_episode_stats_reach_infos():
    with make(Squared, backend="Multithreading", num_envs=64, max_num_threads=2, seed=0) as vecenv:
        vecenv.reset()
        infos = []
        actions = action_batches(vecenv, 400, seed=0)
        for t in range(400):
            infos += vecenv.step(actions[t])[4]
    assert infos, "episode logs must surface in infos"
    info = infos[0]
    assert info["episodes"] >= 64
    assert 1 <= info["episode_length"] <= 60
    assert 0.0 <= info["hit"] <= 1.0


def test_sdk_env_reports_are_the_same_on_every_thread_count():
    """The core's episode tallies are collected in blocks of 256 envs (EnvArray::kLogBlockEnvs),
    on the pool's threads when there are several: every report must be bit-identical to T=0's,
    average exactly the episodes ended since the previous one, and sum their returns."""
    num_envs = 600  # blocks of 256, 256 and 88 envs
    runs = {}
    for threads, schedule in ((0, "static"), (1, "static"), (2, "static"), (3, "dynamic")):
        with make(
            Deep,  # fractional rewards (float sums in double are exact here, so this guards the blocks, not their order)
            env_kwargs={"work": 10},
            backend="Multithreading",
            num_envs=num_envs,
            max_num_threads=threads,
            schedule=schedule,
            seed=5,
        ) as vecenv:
            actions = action_batches(vecenv, 300, seed=6)
            vecenv.reset(5)
            length = np.zeros(num_envs, dtype=np.int64)
            episode_return = np.zeros(num_envs)
            lengths, returns, reports = [], [], []
            for t in range(300):
                _, rewards, terminals, truncations, infos = vecenv.step(actions[t])
                length += 1
                episode_return += rewards
                ended = terminals | truncations
                lengths += [int(n) for n in length[ended]]
                returns += [float(r) for r in episode_return[ended]]
                length[ended], episode_return[ended] = 0, 0
                for report in infos:
                    where = f"T={threads} step {t}"
                    assert report["episodes"] == len(lengths), where
                    assert report["episode_length"] == pytest.approx(np.mean(lengths), rel=1e-12), where
                    assert report["episode_return"] == pytest.approx(np.mean(returns), rel=1e-9, abs=1e-12), where
                    lengths, returns = [], []
                reports += infos
        runs[threads, schedule] = reports
    assert len(runs[0, "static"]) >= 3
    for key, reports in runs.items():
        assert reports == runs[0, "static"], key


def test_per_env_parameters_reach_each_env():
    params = [{"num_traps": 0, "num_food": 1}, {"num_traps": 60, "num_food": 60}]
    with Grid(num_envs=2, env_params=params) as env:
        env.reset(0)
        codes_a = env.observations[:4]
        codes_b = env.observations[4:]
        assert np.count_nonzero(codes_b == 2) > np.count_nonzero(codes_a == 2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"work": -1}, "outside"),
        ({"work": 1.5}, "integer"),
        ({"work": "x"}, "number"),
        ({"wrok": 3}, "unknown parameter"),
        ({"max_episode_steps": -2}, "max_episode_steps"),
    ],
)
def test_bad_parameters_are_rejected(kwargs, match):
    with pytest.raises(APIUsageError, match=match):
        Deep(num_envs=2, **kwargs)


def test_multithreading_rejects_python_creators():
    import gymnasium

    with pytest.raises(APIUsageError, match="Serial.*Multiprocessing"):
        make(lambda: gymnasium.make("CartPole-v1"), backend="Multithreading", num_envs=2)


@pytest.mark.parametrize("threads", [-1, 1.5, "many", 5000])
def test_bad_thread_counts_are_rejected(threads):
    with pytest.raises(APIUsageError, match="max_num_threads"):
        make(CartPole, backend="Multithreading", num_envs=4, max_num_threads=threads)


def test_thread_count_change_is_validated():
    with make(CartPole, backend="Multithreading", num_envs=4, max_num_threads=2) as vecenv:
        with pytest.raises(APIUsageError):
            vecenv.max_num_threads = -3
        assert vecenv.max_num_threads == 2


def test_default_thread_count_is_capped_by_envs():
    with make(CartPole, backend="Multithreading", num_envs=1) as vecenv:
        assert vecenv.max_num_threads == 1
    with make(CartPole, backend="Multithreading", num_envs=64) as vecenv:
        assert vecenv.max_num_threads == min(_native.physical_cores(), 64)


def test_spec_pickles_for_spawned_processes():
    import pickle

    spec = pickle.loads(pickle.dumps(CartPole.spec))
    assert spec.describe() == CartPole.spec.describe()
    assert pickle.loads(pickle.dumps(CartPole)) is CartPole


# ---- fork() with a pipelined Multithreading vector (issue 13, defect 2) ------------------------------

FORK_TIMEOUT_S = 20
needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="this OS has no fork()")


def run_in_forked_child(scenario) -> tuple[int, str]:
    """Runs scenario() in a fork()ed child; returns (exit code or -signal, what it reported).

    The child reports through a pipe and leaves with os._exit, so pytest's own state never runs
    twice. A child still alive after FORK_TIMEOUT_S is killed and reported as a hang."""
    import os
    import signal
    import time
    import traceback

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        code, report = 0, "ok"
        try:
            report = scenario() or "ok"
        except BaseException:  # everything must reach the parent
            code, report = 1, traceback.format_exc()
        os.write(write_end, report.encode()[-4000:])
        os.close(write_end)
        os._exit(code)
    os.close(write_end)
    deadline = time.monotonic() + FORK_TIMEOUT_S
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_end)
            return -signal.SIGKILL, f"child hung for more than {FORK_TIMEOUT_S} s"
        time.sleep(0.02)
    with os.fdopen(read_end, "rb") as pipe:
        report = pipe.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    return code, report


def pipelined(env=CartPole, **env_kwargs):
    return make(env, backend="Multithreading", num_envs=8, batch_size=4, max_num_threads=2, env_kwargs=env_kwargs)


@needs_fork
def test_forked_child_closes_and_uses_an_idle_pipelined_vector():
    import gc

    vecenv = pipelined()
    vecenv.async_reset(1)
    vecenv.recv()
    actions = np.zeros(4, dtype=np.int32)

    def child_uses_then_closes():
        vecenv.async_reset(2)  # the child's own threads step it
        for _ in range(20):
            vecenv.recv()
            vecenv.send(actions)
        vecenv.close()

    def child_drops_it():
        nonlocal vecenv
        vecenv = None
        gc.collect()  # destruction in the child must not join the parent's driver thread

    try:
        for scenario in (child_uses_then_closes, child_drops_it):
            code, report = run_in_forked_child(scenario)
            assert code == 0, f"{scenario.__name__}: child exited with {code}: {report}"
        vecenv.send(actions)  # the parent's vector is untouched
        assert vecenv.recv()[0].shape[0] == 4
    finally:
        vecenv.close()


@needs_fork
def test_forked_child_gets_an_error_for_a_step_in_flight_not_a_hang():
    # A Deep step of 4 envs at this work takes ~40 ms: the step is still in flight when fork() returns.
    vecenv = pipelined(Deep, work=10_000_000)
    actions = np.zeros(4, dtype=np.int32)
    vecenv.async_reset(1)
    for _ in range(2):  # both buffers in flight: the next recv waits for the first one's step
        vecenv.recv()
        vecenv.send(actions)

    def child():
        with pytest.raises(APIUsageError, match="fork"):
            vecenv.recv()
        with pytest.raises(APIUsageError, match="fork"):  # refused until reset, never stale data
            vecenv.send(actions)
        vecenv.async_reset(3)
        vecenv.recv()
        vecenv.close()

    try:
        code, report = run_in_forked_child(child)
        assert code == 0, f"child exited with {code}: {report}"
        vecenv.recv()  # the parent's step completes normally
    finally:
        vecenv.close()


# ---- the error vocabulary at the native boundary (issue 12) -----------------------------------------


def raw_vector(spec, num_envs, num_buffers=1, **overrides):
    """A _native.Vector over freshly allocated buffers (what shoal.native does, without it)."""
    info = spec.describe()
    rows = num_envs * info["num_agents"]
    obs = np.zeros((rows, *info["obs_shape"]), dtype=info["obs_dtype"])
    args = dict(
        spec=spec,
        num_envs=num_envs,
        params=np.zeros((num_envs, len(info["params"]))),
        max_episode_steps=info["max_episode_steps"],
        observations=obs,
        final_observations=obs.copy(),
        actions=np.zeros((rows, info["action_dims"]), dtype=np.int32),
        rewards=np.zeros(rows, dtype=np.float32),
        terminals=np.zeros(rows, dtype=bool),
        truncations=np.zeros(rows, dtype=bool),
        masks=np.ones(rows, dtype=bool),
        num_threads=2,
        num_buffers=num_buffers,
    )
    args.update(overrides)
    return _native.Vector(**args)


def test_native_misuse_is_api_usage_error():
    spec = _native.bundled_spec("cartpole")
    with pytest.raises(APIUsageError, match="no bundled native env named 'nope'"):
        _native.bundled_spec("nope")
    with pytest.raises(APIUsageError, match="cannot load native env library"):
        _native.load_spec("no-such-library.so", "x")
    with pytest.raises(APIUsageError, match="rewards has dtype"):
        raw_vector(spec, 4, rewards=np.zeros(4, dtype=np.float64))
    with pytest.raises(APIUsageError, match="schedule must be"):
        raw_vector(spec, 4, schedule="sometimes")
    with pytest.raises(APIUsageError, match="divisible"):
        raw_vector(spec, 4, num_buffers=3)
    vec = raw_vector(spec, 4)
    with pytest.raises(APIUsageError, match="pipelined|one buffer"):
        vec.wait(0)
    with pytest.raises(APIUsageError, match="env index"):
        vec.env_memory(4)
    vec.close()
    vec.close()  # idempotent
    for use in (lambda: vec.reset(0), vec.step, lambda: vec.collect_log(0, 4), lambda: vec.set_num_threads(1)):
        with pytest.raises(APIUsageError, match="closed"):
            use()
    piped = raw_vector(spec, 4, num_buffers=2)
    with pytest.raises(APIUsageError, match="buffer index 2"):
        piped.submit(2, np.zeros(2, dtype=np.int32))
    with pytest.raises(APIUsageError, match="pipelined"):
        piped.step()
    piped.close()


def test_no_native_error_is_bare_runtime_or_value_error():
    # The classes shoal raises are not ValueError subclasses, and EnvError is not caught as misuse.
    assert not issubclass(APIUsageError, (ValueError, RuntimeError))
    with pytest.raises(APIUsageError) as info:
        _native.bundled_spec("nope")
    assert type(info.value) is APIUsageError


def test_bundled_list_comes_from_the_native_core():
    assert sorted(BUNDLED) == sorted(_native.bundled_names())
    assert len(BUNDLED) >= 4
    for name, cls in BUNDLED.items():
        assert cls.describe()["name"] == name
        assert getattr(shoal.envs, cls.__name__) is cls
    assert CartPole.__name__ == "CartPole"


def test_cache_line_and_pool_stats_are_exported():
    assert _native.CACHE_LINE_BYTES == 64
    with make(CartPole, backend="Multithreading", num_envs=64, max_num_threads=2) as vecenv:
        vecenv.reset(0)
        # Which thread takes a round's chunks is the scheduler's call (on a loaded machine the worker
        # may take every chunk of a round): over 100 rounds the caller takes some.
        for _ in range(100):
            vecenv.step(np.zeros(64, dtype=np.int32))
        stats = vecenv.pool_stats()
    assert {"rounds", "chunks_by_caller", "chunks_by_workers", "steals", "active_limit"} <= set(stats)
    assert stats["rounds"] >= 101 and stats["chunks_by_caller"] >= 1
    assert stats["chunks_by_caller"] + stats["chunks_by_workers"] >= stats["rounds"]


def test_physical_core_count_follows_the_affinity_mask():
    import shutil
    import subprocess
    import sys

    assert 1 <= _native.physical_cores()
    if shutil.which("taskset") is None:
        pytest.skip("taskset is not installed")
    result = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-c", "from shoal import _native; print(_native.physical_cores())"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.strip() == "1"


def test_pool_stats_and_env_memory_of_a_closed_vector_are_usage_errors():
    # Both read the pool and the envs that close() released: a clear error, not a freed pointer.
    env = CartPole(num_envs=4, num_threads=2)
    env.reset(1)
    env.close()
    with pytest.raises(APIUsageError, match="native vector is closed"):
        env.pool_stats()
    with pytest.raises(APIUsageError, match="native vector is closed"):
        env.env_memory(0)
