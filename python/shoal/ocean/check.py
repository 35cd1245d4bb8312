"""`shoal check`: is a native env deterministic and free of state shared between envs?

The configured backend steps ``num_envs`` envs in lockstep with random actions. The reference
steps each env on its own: env ``i`` alone in a vector of one (same seed, same actions), all
steps, then the next env. An env that keeps state in a global (a counter, a scratch buffer
carried between calls, the process-wide ``rand()``) or reads the clock sees a different history
in the two runs, so the first observation, reward, terminal or truncation that differs names
the step, the env and the agent. Works for any shoal.native.NativeEnv class (Ocean or not).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..native import NativeEnv
from ..seeding import check_seed, offset_seed
from .errors import OceanError

FIELDS = ("observations", "rewards", "terminals", "truncations")


@dataclass
class Mismatch:
    step: int  # 0 = the observations after reset
    env: int
    agent: int  # agent of that env
    field: str
    reference: object
    backend: object

    def __str__(self) -> str:
        when = "after reset" if self.step == 0 else f"at step {self.step}"
        return (
            f"{self.field} differ {when} in env {self.env} (agent {self.agent}): the env stepped alone "
            f"gives {self.reference}, the backend gives {self.backend}"
        )


@dataclass
class CheckResult:
    env: str
    backend: str
    num_envs: int
    steps: int
    mismatch: Mismatch | None

    @property
    def passed(self) -> bool:
        return self.mismatch is None

    def __str__(self) -> str:
        head = f"{self.env}: {self.backend}, {self.num_envs} envs, {self.steps} steps vs each env stepped alone"
        if self.passed:
            return f"{head}: identical (deterministic, no state shared between envs seen)"
        return f"{head}: FAILED: {self.mismatch}"


def _actions(space, steps: int, rows: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if hasattr(space, "nvec"):
        return (rng.random((steps, rows, *space.shape)) * space.nvec).astype(np.int32)
    if hasattr(space, "n"):
        return rng.integers(0, space.n, size=(steps, rows)).astype(np.int32)
    return rng.uniform(space.low, space.high, size=(steps, rows, *space.shape)).astype(np.float32)


def _record(env, actions: np.ndarray, seed: int) -> dict:
    obs, _ = env.reset(seed)
    out = {"observations": [obs.copy()]}
    rows = len(obs)
    out["rewards"] = [np.zeros(rows, np.float32)]
    out["terminals"] = [np.zeros(rows, bool)]
    out["truncations"] = [np.zeros(rows, bool)]
    for t in range(len(actions)):
        obs, rewards, terminals, truncations, _ = env.step(actions[t])
        for name, value in zip(FIELDS, (obs, rewards, terminals, truncations)):
            out[name].append(np.asarray(value).copy())
    return {k: np.stack(v) for k, v in out.items()}


def check(
    env_class: type[NativeEnv],
    backend: str = "Multithreading",
    num_envs: int = 4,
    steps: int = 1000,
    seed: int = 0,
    env_kwargs: dict | None = None,
    **backend_options,
) -> CheckResult:
    """Runs ``env_class`` under ``backend`` and each env alone; returns the first difference, if any."""
    from ..vector import make

    if not (isinstance(env_class, type) and issubclass(env_class, NativeEnv)):
        raise OceanError(f"shoal check needs a native env class (shoal.native.NativeEnv), got {env_class!r}")
    seed = check_seed(seed)
    env_kwargs = dict(env_kwargs or {})
    name = getattr(env_class, "__name__", str(env_class))
    references = []  # first, so the reference never sees state left behind by the backend's run
    for i in range(num_envs):
        alone = env_class(num_envs=1, seed=offset_seed(seed, i), **env_kwargs)
        try:
            if i == 0:
                agents = alone.num_agents
                actions = _actions(alone.single_action_space, steps, num_envs * agents, seed + 1)
            references.append(_record(alone, actions[:, i * agents : (i + 1) * agents], offset_seed(seed, i)))
        finally:
            alone.close()
    if backend == "PufferEnv":  # one native object holding every env
        vecenv = env_class(num_envs=num_envs, seed=seed, **env_kwargs)
    else:
        vecenv = make(
            env_class, backend=backend, num_envs=num_envs, seed=seed, env_kwargs=env_kwargs, **backend_options
        )
    with vecenv:
        candidate = _record(vecenv, actions, seed)
    for t in range(steps + 1):
        for i, reference in enumerate(references):
            rows = slice(i * agents, (i + 1) * agents)
            for field in FIELDS:
                ref, got = reference[field][t], candidate[field][t][rows]
                if np.array_equal(ref, got):
                    continue
                flat_ref, flat_got = ref.reshape(agents, -1), got.reshape(agents, -1)
                agent = int(np.nonzero((flat_ref != flat_got).any(axis=1))[0][0])
                k = int(np.flatnonzero(flat_ref[agent] != flat_got[agent])[0])
                mismatch = Mismatch(t, i, agent, field, flat_ref[agent, k].item(), flat_got[agent, k].item())
                return CheckResult(name, backend, num_envs, steps, mismatch)
    return CheckResult(name, backend, num_envs, steps, None)
