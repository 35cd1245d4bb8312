"""Deterministic rollouts shared by the parity tests."""

import numpy as np


def action_batches(vecenv, steps: int, seed: int) -> np.ndarray:
    space = vecenv.single_action_space
    rng = np.random.default_rng(seed)
    n = vecenv.agents_per_batch
    if hasattr(space, "nvec"):
        return (rng.random((steps, n, *space.shape)) * space.nvec).astype(np.int32)
    if hasattr(space, "n"):
        return rng.integers(0, space.n, size=(steps, n)).astype(np.int32)
    return rng.uniform(space.low, space.high, size=(steps, n, *space.shape)).astype(np.float32)


def rollout(vecenv, steps: int, seed: int = 0, action_seed: int = 1) -> dict:
    """Synchronous rollout: every array of every step, copied, plus final observations where done."""
    actions = action_batches(vecenv, steps, action_seed)
    obs, _ = vecenv.reset(seed)
    out = {"obs": [obs.copy()], "rewards": [], "terminals": [], "truncations": [], "masks": [], "final": []}
    buf = vecenv.buf  # every backend and PufferEnv exposes its Buffers
    for t in range(steps):
        obs, rewards, terminals, truncations, _ = vecenv.step(actions[t])
        done = terminals | truncations
        out["obs"].append(obs.copy())
        out["rewards"].append(rewards.copy())
        out["terminals"].append(terminals.copy())
        out["truncations"].append(truncations.copy())
        out["masks"].append(buf.masks.copy())
        out["final"].append(buf.final_observations[done].copy())
    return {k: (np.stack(v) if k != "final" else v) for k, v in out.items()}


def assert_same(a: dict, b: dict, label: str) -> None:
    for key in ("obs", "rewards", "terminals", "truncations", "masks"):
        np.testing.assert_array_equal(a[key], b[key], err_msg=f"{label}: {key} differ")
    for t, (fa, fb) in enumerate(zip(a["final"], b["final"])):
        np.testing.assert_array_equal(fa, fb, err_msg=f"{label}: final observations differ at step {t}")
