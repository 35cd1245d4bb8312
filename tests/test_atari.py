"""shoal.atari: ALE built from ale-py's sources, Gymnasium's preprocessing natively, bit for bit.

Parity: with preset="gymnasium", noop_max=0 and no sticky actions, every observation, reward,
terminal, truncation and final observation equals FrameStackObservation(AtariPreprocessing(
gym.make("ALE/<Game>-v5", frameskip=1, repeat_action_probability=0.0), noop_max=0), 4), step for step,
episode ends included (Gymnasium's autoreset: reset() without a seed, ALE's random state continuing).
"""

from __future__ import annotations

import contextlib
import ctypes

import numpy as np
import pytest

ale_py = pytest.importorskip("ale_py", reason="needs ale-py: pip install -e '.[test]'")
cv2 = pytest.importorskip("cv2", reason="needs opencv-python-headless: pip install -e '.[test]'")

import gymnasium as gym  # noqa: E402

import shoal.atari  # noqa: E402
from shoal.errors import APIUsageError  # noqa: E402
from shoal.seeding import env_seed  # noqa: E402
from shoal.vector import make  # noqa: E402

gym.register_envs(ale_py)

# Pong with two envs (env 1's seed is gymnasium_seed(seed, 1)), the others with one.
PARITY_GAMES = [("pong", 2), ("breakout", 1), ("space_invaders", 1), ("seaquest", 1), ("ms_pacman", 1)]


@pytest.fixture(scope="module")
def library():
    return ctypes.CDLL(str(shoal.atari.env.env_library()))


def native_resize(library, image: np.ndarray, size: int) -> np.ndarray:
    image = np.ascontiguousarray(image, dtype=np.uint8)
    out = np.zeros((size, size), np.uint8)
    library.shoal_atari_resize_area(
        image.ctypes.data_as(ctypes.c_void_p), image.shape[0], image.shape[1], out.ctypes.data_as(ctypes.c_void_p), size
    )
    return out


@pytest.mark.parametrize("size", [84, 64, 42, 100])
def test_resize_is_opencvs_inter_area(library, size):
    rng = np.random.default_rng(size)
    for _ in range(20):
        image = rng.integers(0, 256, size=(210, 160), dtype=np.uint8)
        expected = cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA)
        np.testing.assert_array_equal(native_resize(library, image, size), expected)
    # Screens are mostly flat colours with hard edges, where rounding ties are common.
    blocks = np.kron(rng.integers(0, 256, size=(21, 16), dtype=np.uint8), np.ones((10, 10), np.uint8))
    expected = cv2.resize(blocks, (size, size), interpolation=cv2.INTER_AREA)
    np.testing.assert_array_equal(native_resize(library, blocks, size), expected)


def _screens(rng, height, width):
    """Random frames, and flat blocks with hard edges (rounding ties are common on Atari screens)."""
    yield rng.integers(0, 256, size=(height, width), dtype=np.uint8)
    yield rng.integers(0, 4, size=(height, width), dtype=np.uint8)
    blocks = rng.integers(0, 256, size=(height // 5 + 1, width // 5 + 1), dtype=np.uint8)
    yield np.ascontiguousarray(np.kron(blocks, np.ones((5, 5), np.uint8))[:height, :width])


@pytest.mark.parametrize(("height", "width"), [(210, 160), (210, 210)], ids=["atari", "square"])
def test_resize_is_opencvs_inter_area_at_every_size(library, height, width):
    """Every size down to 1, the sizes that divide the screen included (OpenCV's integer fast path there)."""
    rng = np.random.default_rng(height * width)
    for size in range(1, min(height, width) + 1):
        for image in _screens(rng, height, width):
            expected = cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA)
            np.testing.assert_array_equal(native_resize(library, image, size), expected, err_msg=f"size {size}")


def test_ale_seed_is_seed_sequences(library):
    library.shoal_atari_ale_seed.restype = ctypes.c_int32
    library.shoal_atari_ale_seed.argtypes = [ctypes.c_uint64]
    for entropy in [0, 1, 7, 2**32 - 1, 2**32, 2**63 + 12345, 2**64 - 1, env_seed(3, 5)]:
        expected = np.int32(np.random.SeedSequence(entropy).generate_state(2)[1].astype(np.int64).astype(np.int32))
        assert library.shoal_atari_ale_seed(entropy) == expected, entropy


def gymnasium_env(game: str, screen_size: int = 84):
    name = "".join(part.capitalize() for part in game.split("_"))
    env = gym.make(f"ALE/{name}-v5", frameskip=1, repeat_action_probability=0.0)
    env = gym.wrappers.AtariPreprocessing(env, noop_max=0, screen_size=screen_size)
    return gym.wrappers.FrameStackObservation(env, 4)


@pytest.mark.parametrize(
    ("game", "num_envs", "screen_size", "steps"),
    [(game, num_envs, 84, 5000) for game, num_envs in PARITY_GAMES]
    + [("breakout", 1, 5, 1500), ("breakout", 1, 10, 1500)],
)
def test_gymnasium_parity_step_for_step(game, num_envs, screen_size, steps):
    seed = 11
    Game = shoal.atari.env_class(game, noop_max=0, repeat_action_probability=0.0, screen_size=screen_size)
    references = [gymnasium_env(game, screen_size) for _ in range(num_envs)]
    expected = [ref.reset(seed=shoal.atari.gymnasium_seed(seed, i))[0] for i, ref in enumerate(references)]
    episode_ends = 0
    with make(Game, backend="Serial", num_envs=num_envs, seed=seed) as vecenv:
        obs, _ = vecenv.reset()
        np.testing.assert_array_equal(obs, np.stack(expected))
        rng = np.random.default_rng(0)
        for step in range(steps):
            actions = rng.integers(0, vecenv.single_action_space.n, size=num_envs)
            obs, rewards, terminals, truncations, _ = vecenv.step(actions)
            for i, ref in enumerate(references):
                ref_obs, ref_reward, ref_term, ref_trunc, _ = ref.step(int(actions[i]))
                context = f"{game} env {i} step {step}"
                assert rewards[i] == np.float32(ref_reward), context
                assert (terminals[i], truncations[i]) == (ref_term, ref_trunc), context
                if ref_term or ref_trunc:
                    episode_ends += 1
                    np.testing.assert_array_equal(vecenv.final_observations[i], ref_obs, err_msg=context)
                    ref_obs, _ = ref.reset()
                np.testing.assert_array_equal(obs[i], ref_obs, err_msg=context)
    assert episode_ends >= 1, f"{game}: no episode ended in {steps} steps; the autoreset went untested"


def ale_vector_reference(game: str, num_envs: int):
    from ale_py.vector_env import AtariVectorEnv

    return AtariVectorEnv(game, num_envs, noop_max=0, autoreset_mode="SameStep", num_threads=1)


@pytest.mark.parametrize("game", ["pong", "breakout"])
def test_ale_vector_preset_is_ale_pys_vector_step_for_step(game):
    """preset="ale_vector" against ale-py's AtariVectorEnv (its defaults: FIRE on reset, clipped rewards, a
    zero-padded stack), both autoresetting in the same step; noop_max=0 makes the resets deterministic (ALE
    without sticky actions does not depend on its seed)."""
    steps, num_envs = 3000, 2
    Game = shoal.atari.env_class(game, preset="ale_vector", noop_max=0)
    reference = ale_vector_reference(game, num_envs)
    episode_ends = 0
    with contextlib.closing(reference), make(Game, backend="Serial", num_envs=num_envs, seed=3) as vecenv:
        obs, _ = vecenv.reset()
        ref_obs, _ = reference.reset(seed=0)
        np.testing.assert_array_equal(obs, ref_obs)
        assert not ref_obs[:, :3].any(), "the reference's stack is zero-padded"
        rng = np.random.default_rng(2)
        for step in range(steps):
            actions = rng.integers(0, vecenv.single_action_space.n, size=num_envs)
            obs, rewards, terminals, truncations, _ = vecenv.step(actions)
            ref_obs, ref_rewards, ref_terms, ref_truncs, info = reference.step(actions)
            context = f"{game} step {step}"
            np.testing.assert_array_equal(rewards, ref_rewards.astype(np.float32), err_msg=context)
            np.testing.assert_array_equal(terminals, ref_terms, err_msg=context)
            np.testing.assert_array_equal(truncations, ref_truncs, err_msg=context)
            np.testing.assert_array_equal(obs, ref_obs, err_msg=context)
            for i in np.flatnonzero(ref_terms | ref_truncs):
                episode_ends += 1
                np.testing.assert_array_equal(vecenv.final_observations[i], info["final_obs"][i], err_msg=context)
    assert episode_ends >= 1, f"{game}: no episode ended in {steps} steps; the autoreset went untested"


@pytest.mark.parametrize(
    ("game", "terminal_on_life_loss", "frame_skip"),
    [(game, lives, 4) for game in ("pong", "breakout") for lives in (False, True)] + [("breakout", False, 1)],
    ids=lambda value: {False: "games", True: "lives"}.get(value) if isinstance(value, bool) else None,
)
def test_envpool_preset_is_envpools_atari_step_for_step(game, terminal_on_life_loss, frame_skip):
    """preset="envpool" against EnvPool's Atari (its defaults: NOOPs then FIRE, the stack padded with the
    reset frame, the frame that ends a game kept; episodic_life continuing the game after a lost life).
    EnvPool resets in the step after an episode's end, ignoring that step's action: its end-of-episode
    observation is shoal's final observation, its next one shoal's reset observation. noop_max=1 makes
    a FIRE game's resets deterministic (1 NOOP less the FIRE)."""
    envpool = pytest.importorskip("envpool", reason="needs envpool: pip install -e '.[full]' (CPython 3.11, x86-64)")
    steps, num_envs = 3000, 2
    Game = shoal.atari.env_class(
        game, preset="envpool", noop_max=1, terminal_on_life_loss=terminal_on_life_loss, frame_skip=frame_skip
    )
    name = "".join(part.capitalize() for part in game.split("_"))
    options = {"noop_max": 1, "episodic_life": terminal_on_life_loss, "frame_skip": frame_skip}
    references = [  # one pool per env: each resets in its own next step
        envpool.make(f"{name}-v5", env_type="gymnasium", num_envs=1, **options) for _ in range(num_envs)
    ]
    episode_ends = 0
    with make(Game, backend="Serial", num_envs=num_envs, seed=3) as vecenv:
        obs, _ = vecenv.reset()
        np.testing.assert_array_equal(obs, np.concatenate([ref.reset()[0] for ref in references]))
        rng = np.random.default_rng(2)
        for step in range(steps):
            actions = rng.integers(0, vecenv.single_action_space.n, size=num_envs)
            obs, rewards, terminals, truncations, _ = vecenv.step(actions)
            for i, ref in enumerate(references):
                ref_obs, ref_reward, ref_term, ref_trunc, _ = ref.step(actions[i : i + 1])
                context = f"{game} env {i} step {step}"
                assert (rewards[i], terminals[i], truncations[i]) == (ref_reward[0], ref_term[0], ref_trunc[0]), context
                if ref_term[0] or ref_trunc[0]:
                    episode_ends += 1
                    np.testing.assert_array_equal(vecenv.final_observations[i], ref_obs[0], err_msg=context)
                    ref_obs, _, ref_term, ref_trunc, _ = ref.step(actions[i : i + 1])  # EnvPool's reset
                    assert not (ref_term[0] or ref_trunc[0]), context
                np.testing.assert_array_equal(obs[i], ref_obs[0], err_msg=context)
    assert episode_ends >= 1, f"{game}: no episode ended in {steps} steps; the autoreset went untested"


def test_envpool_preset_at_frame_skip_1_pools_nothing():
    """One frame per step: the newest stacked frame is that frame's screen, resized, never max-pooled with
    the one before (which would leave the ball's trail, and cleared bricks, in every frame). ALE's own
    Breakout (no sticky actions: its seed does not matter) after the preset's reset (FIRE, with noop_max=0)."""
    steps = 300
    Game = shoal.atari.env_class("breakout", preset="envpool", frame_skip=1, noop_max=0)
    ale = ale_py.ALEInterface()
    ale.setLoggerMode(ale_py.LoggerMode.Error)
    ale.setFloat("repeat_action_probability", 0.0)
    ale.loadROM(str(shoal.atari.roms_dir() / "breakout.bin"))
    actions = ale.getMinimalActionSet()
    ale.reset_game()
    ale.act(ale_py.Action.FIRE)

    def frame():
        return cv2.resize(ale.getScreenGrayscale(), (84, 84), interpolation=cv2.INTER_AREA)

    all_brighter = 0
    with make(Game, backend="Serial", num_envs=1, seed=0) as vecenv:
        obs, _ = vecenv.reset()
        np.testing.assert_array_equal(obs[0, -1], frame())
        rng = np.random.default_rng(4)
        for step in range(steps):
            action = int(rng.integers(0, len(actions)))
            previous = obs[0, -1].copy()
            obs, _, terminals, truncations, _ = vecenv.step(np.array([action]))
            ale.act(actions[action])
            assert not (terminals[0] or truncations[0]), "the episode ended: lengthen nothing, pick another seed"
            np.testing.assert_array_equal(obs[0, -1], frame(), err_msg=f"step {step}")
            all_brighter += bool((obs[0, -1] >= previous).all())
    assert all_brighter < steps // 2, f"the newest frame was >= the one before at every pixel in {all_brighter}/{steps}"


BACKENDS = [
    ("Serial", {}),
    ("Multithreading", {"max_num_threads": 0}),
    ("Multithreading", {"max_num_threads": 1}),
    ("Multithreading", {"max_num_threads": 2}),
    ("Multithreading", {"max_num_threads": 3}),
    ("Multiprocessing", {"num_workers": 2}),
    ("PufferEnv", {}),
]


def rollout(Game, backend, options, steps=300, num_envs=4):
    """Every observation, reward, terminal and truncation of a run, as one list of arrays."""
    if backend == "PufferEnv":  # the native env object itself
        vector = Game(num_envs=num_envs, seed=5)
    else:
        vector = make(Game, backend=backend, num_envs=num_envs, seed=5, **options)
    with vector as vecenv:
        obs, _ = vecenv.reset()
        trace = [obs.copy()]
        rng = np.random.default_rng(1)
        for _ in range(steps):
            actions = rng.integers(0, vecenv.single_action_space.n, size=num_envs)
            trace += [array.copy() for array in vecenv.step(actions)[:4]]
    return trace


def test_sticky_actions_and_noops_agree_on_every_backend():
    Game = shoal.atari.env_class("breakout", noop_max=30, repeat_action_probability=0.25, terminal_on_life_loss=True)
    reference = rollout(Game, "Serial", {})
    for backend, options in BACKENDS[1:]:
        for i, (expected, got) in enumerate(zip(reference, rollout(Game, backend, options), strict=True)):
            np.testing.assert_array_equal(got, expected, err_msg=f"{backend} {options}: array {i} of the run")


def test_every_shipped_rom_steps():
    failures = []
    for game in shoal.atari.games():
        try:
            Game = shoal.atari.env_class(game)
            with make(Game, backend="Multithreading", num_envs=1, max_num_threads=0) as vecenv:
                vecenv.reset()
                actions = np.zeros(1, np.int32)
                for _ in range(1000):
                    vecenv.step(actions)
        except Exception as error:  # every ROM is tried, the failures listed together
            failures.append(f"{game}: {error}")
    assert not failures, "\n".join(failures)


def test_unknown_game_lists_the_available_ones():
    with pytest.raises(APIUsageError, match="no game 'pongg'; available: .*pong"):
        shoal.atari.env_class("pongg")
    with pytest.raises(APIUsageError, match="'warlords' is a multi-player game"):
        shoal.atari.env_class("warlords")


def test_a_rom_ale_does_not_support_is_an_error_not_an_exit(tmp_path):
    rom = tmp_path / "not_a_game.bin"
    rom.write_bytes(bytes(4096))
    Pong = shoal.atari.env_class("pong")
    with pytest.raises(APIUsageError, match="ALE does not support ROM"):
        Pong(num_envs=1, rom=str(rom))


def test_game_names_in_gymnasiums_spellings():
    assert shoal.atari.env_class("ALE/SpaceInvaders-v5").game == "space_invaders"
    assert shoal.atari.env_class("Pong").game == "pong"


def test_unknown_option_and_preset_are_named():
    with pytest.raises(APIUsageError, match="frameskip"):
        shoal.atari.env_class("pong", frameskip=4)
    with pytest.raises(APIUsageError, match="unknown Atari preset 'dqn'; presets: gymnasium, ale_vector, envpool"):
        shoal.atari.env_class("pong", preset="dqn")
    with pytest.raises(APIUsageError, match=r"rules are set by the preset \(preset=...\)"):
        shoal.atari.env_class("pong", rules=2)
    with pytest.raises(APIUsageError, match="RGB observations are not available"):
        shoal.atari.env_class("pong", grayscale_obs=False)


def test_missing_ale_py_names_the_extra(monkeypatch):
    import importlib.util

    from shoal.atari import build

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ale_py" else real(name, *a))
    with pytest.raises(
        build.AtariError,
        match=r'pip install "ale-py==0\.12\.1" \(or, in shoal\'s source folder, pip install "\.\[atari\]"\)',
    ):
        build.roms_dir()


def test_config_names_a_game_with_its_options(tmp_path):
    from shoal.config import ConfigError, load, resolve_env

    path = tmp_path / "config.ini"
    path.write_text("[env]\nname = atari:breakout\nnoop_max = 0\nstack_size = 2\n[vec]\nbackend = Serial\n")
    cls = resolve_env(load(str(path), {}))
    assert issubclass(cls, shoal.atari.AtariEnv) and cls.game == "breakout"
    assert tuple(cls.describe()["obs_shape"]) == (2, 84, 84)
    path.write_text("[env]\nname = atari:pongg\n[vec]\nbackend = Serial\n")
    with pytest.raises(ConfigError, match="no game 'pongg'"):
        resolve_env(load(str(path), {}))


def test_a_build_failure_says_what_is_missing(tmp_path):
    from shoal.atari.build import AtariError, _compile_all

    source = tmp_path / "uses_zlib.cpp"
    source.write_text("#include <missing_folder/zlib.h>\nint main() { return 0; }\n")
    with pytest.raises(AtariError, match="zlib's headers: apt install zlib1g-dev"):
        _compile_all([["c++", "-c", str(source), "-o", str(tmp_path / "a.o")]], tmp_path, "a test")
    with pytest.raises(AtariError, match="needs a C\\+\\+17 compiler: 'no-such-c\\+\\+' was not found"):
        _compile_all([["no-such-c++", "-c", str(source)]], tmp_path, "a test")


def test_shoal_check_passes_with_sticky_actions_and_noops():
    from shoal.ocean.check import isolated_check

    Game = shoal.atari.env_class("breakout", noop_max=30, repeat_action_probability=0.25)
    result = isolated_check(Game, backend="Multithreading", num_envs=4, steps=200, seed=3, max_num_threads=2)
    assert result.passed, str(result)
