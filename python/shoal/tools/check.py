"""`shoal check`: is a native env deterministic and free of state shared between envs?

The configured backend steps ``num_envs`` envs in lockstep with random actions. The reference
steps each env on its own: env ``i`` alone in a vector of one (same seed, same actions), all
steps, then the next env. An env that keeps state in a global (a counter, a scratch buffer
carried between calls, the process-wide ``rand()``) or reads the clock sees a different history
in the two runs, so the first observation, reward, terminal or truncation that differs names
the step, the env and the agent. Final observations are compared on the rows whose episode ended
(elsewhere they are stale by contract). Values are compared bit for bit, so a NaN matches the same
NaN. Infos are a vector's aggregate (one report over many envs' episodes), with nothing per env
to set beside an env stepped alone; so the backend's run is repeated and the two runs' infos
must be equal: a Log fed by state outside the env (a counter, the
process-wide ``rand()``) sees that state moved on. Works for any shoal.native.NativeEnv class
(Ocean or not).
"""

from __future__ import annotations

import multiprocessing
import signal
from dataclasses import dataclass

import numpy as np

from ..native import NativeEnv
from ..ocean.errors import OceanError
from ..seeding import check_seed, offset_seed

FIELDS = ("observations", "rewards", "terminals", "truncations")
FINAL = "final_observations"


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
        if self.field == "infos":
            return (
                f"infos differ {when}: a first run of the backend reports {self.reference}, the same run "
                f"repeated (same seeds and actions, later in this process) reports "
                f"{self.backend}: the env's log depends on state outside the env"
            )
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
    crash: str | None = None  # how the process running the check died (isolated_check)

    @property
    def passed(self) -> bool:
        return self.mismatch is None and self.crash is None

    def __str__(self) -> str:
        head = f"{self.env}: {self.backend}, {self.num_envs} envs, {self.steps} steps vs each env stepped alone"
        if self.passed:
            return f"{head}: identical (deterministic, no state shared between envs seen)"
        if self.crash:
            return f"{head}: FAILED: the env crashed the process that ran it ({self.crash})"
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
    rows = len(obs)
    out = {name: [] for name in (*FIELDS, FINAL, "infos")}
    for name, value in zip(FIELDS, (obs, np.zeros(rows, np.float32), np.zeros(rows, bool), np.zeros(rows, bool))):
        out[name].append(value.copy())
    out[FINAL].append(np.zeros_like(obs))
    out["infos"].append([])
    for t in range(len(actions)):
        obs, rewards, terminals, truncations, infos = env.step(actions[t])
        for name, value in zip(FIELDS, (obs, rewards, terminals, truncations)):
            out[name].append(np.asarray(value).copy())
        out[FINAL].append(np.asarray(env.final_observations).copy())
        out["infos"].append(_bits_of_infos(infos))
    return {k: v if k == "infos" else np.stack(v) for k, v in out.items()}


def _bits_of_infos(infos) -> list:
    """infos with every number as its float64 bits: equal lists mean bit-identical reports, NaN included."""
    return [
        sorted((key, np.float64(value).tobytes() if np.isscalar(value) else repr(value)) for key, value in info.items())
        for info in infos
    ]


def _as_bits(array: np.ndarray) -> np.ndarray:
    """Floats as unsigned integers of their width, so that equal means bit-identical (NaN == same NaN)."""
    return array.view(f"u{array.dtype.itemsize}") if array.dtype.kind == "f" else array


def _first_difference(reference: np.ndarray, got: np.ndarray, agents: int, rows: np.ndarray | None):
    """(agent, reference value, backend value) of the first element that differs, or None."""
    ref_bits, got_bits = _as_bits(reference).reshape(agents, -1), _as_bits(got).reshape(agents, -1)
    differs = ref_bits != got_bits
    if rows is not None:
        differs &= rows[:, None]
    if not differs.any():
        return None
    agent = int(np.nonzero(differs.any(axis=1))[0][0])
    k = int(np.flatnonzero(differs[agent])[0])
    flat_ref, flat_got = reference.reshape(agents, -1), got.reshape(agents, -1)
    return agent, flat_ref[agent, k].item(), flat_got[agent, k].item()


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

    def run_backend() -> dict:
        if backend == "PufferEnv":  # one native object holding every env
            vecenv = env_class(num_envs=num_envs, seed=seed, **env_kwargs)
        else:
            vecenv = make(
                env_class, backend=backend, num_envs=num_envs, seed=seed, env_kwargs=env_kwargs, **backend_options
            )
        with vecenv:
            return _record(vecenv, actions, seed)

    candidate = run_backend()
    for t in range(steps + 1):
        for i, reference in enumerate(references):
            rows = slice(i * agents, (i + 1) * agents)
            for field in (*FIELDS, FINAL):
                ended = None
                if field == FINAL:
                    ended = reference["terminals"][t] | reference["truncations"][t]
                    if not ended.any():
                        continue
                found = _first_difference(reference[field][t], candidate[field][t][rows], agents, ended)
                if found is not None:
                    agent, ref, got = found
                    return CheckResult(name, backend, num_envs, steps, Mismatch(t, i, agent, field, ref, got))
    again = run_backend()
    for t in range(steps + 1):
        if candidate["infos"][t] != again["infos"][t]:
            first, second = (_readable(run["infos"][t]) for run in (candidate, again))
            return CheckResult(name, backend, num_envs, steps, Mismatch(t, 0, 0, "infos", first, second))
    return CheckResult(name, backend, num_envs, steps, None)


def _readable(infos: list) -> list:
    return [
        {key: np.frombuffer(bits, np.float64)[0].item() if isinstance(bits, bytes) else bits for key, bits in info}
        for info in infos
    ]


def isolated_check(env_class: type[NativeEnv], backend: str = "Multithreading", num_envs: int = 4, **options):
    """check() in a forked child process, so that an env that crashes (a segfault in its C code) is a
    failed check naming the signal, not the end of the caller. Errors check() raises are raised here."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_check_child, args=(sender, env_class, backend, num_envs, options))
    child.start()
    sender.close()
    try:
        outcome = receiver.recv()
    except EOFError:  # the child died before it could answer
        outcome = None
    finally:
        receiver.close()
        child.join()
    if outcome is None:
        code = child.exitcode
        how = f"killed by {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
        name = getattr(env_class, "__name__", str(env_class))
        return CheckResult(name, backend, num_envs, options.get("steps", 1000), None, crash=how)
    kind, value = outcome
    if kind == "error":
        raise value
    return value


def _check_child(sender, env_class, backend, num_envs, options) -> None:
    try:
        outcome = ("result", check(env_class, backend=backend, num_envs=num_envs, **options))
    except Exception as error:  # handed to the parent, which raises it
        outcome = ("error", error)
    try:
        sender.send(outcome)
    except Exception:  # an exception that does not pickle
        kind, value = outcome
        sender.send(("error", OceanError(f"shoal check failed: {type(value).__name__}: {value}")))
    sender.close()
