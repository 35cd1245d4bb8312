"""The env's C code without shoal: PufferLib's ``for i: c_step(&envs[i])`` loop as a plain C program.

Built from an Ocean class's library (same staged sources, config and flags, see
csrc/shoal_ocean_harness.c). Tests compare shoal's trajectories with it step for step; the
benchmark times it as the baseline shoal must keep up with.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np

from .build import build_harness
from .env import OceanEnv
from .errors import OceanError


def _program(env_class: type[OceanEnv], workdir: Path, shoal_rand: bool) -> Path:
    library = env_class.ocean["library"]
    out = Path(workdir) / f"{library.name}-{library.folder.name}-{'trace' if shoal_rand else 'bench'}"
    return out if out.is_file() else build_harness(library, out, shoal_rand)


def trace(
    env_class: type[OceanEnv], num_envs: int, seed: int, actions: np.ndarray, workdir: Path, log_interval: int = 0
) -> dict:
    """Observations after reset and per step, rewards and terminals per step, of ``num_envs`` envs
    stepped by the harness with ``actions`` (steps, agents, ...); rand() is each env's own stream,
    seeded as shoal seeds it. With ``log_interval``, also "logs": {step: report} of PufferLib's
    vec_log run after every log_interval-th step (step counted from 0)."""
    program = _program(env_class, workdir, shoal_rand=True)
    probe = env_class(num_envs=1)
    obs_space, agents = probe.single_observation_space, probe.num_agents * num_envs
    probe.close()
    steps = len(actions)
    workdir = Path(workdir)
    action_file, out_file = workdir / "actions.bin", workdir / "trace.bin"
    dtype = np.float32 if actions.dtype == np.float32 else np.int32
    np.ascontiguousarray(actions, dtype=dtype).tofile(action_file)
    log_file = workdir / "logs.txt"
    extra = [str(log_interval), str(log_file)] if log_interval else []
    result = subprocess.run(
        [str(program), "trace", str(num_envs), str(steps), str(seed), str(action_file), str(out_file), *extra],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        raise OceanError(f"harness of {env_class.__name__} failed: {result.stderr.strip()}")
    raw = np.fromfile(out_file, dtype=np.uint8)
    obs_bytes = agents * int(np.prod(obs_space.shape)) * obs_space.dtype.itemsize
    step_bytes = obs_bytes + agents * 4 + agents
    if raw.size != obs_bytes + steps * step_bytes:
        raise OceanError(
            f"harness of {env_class.__name__} wrote {raw.size} bytes, expected {obs_bytes + steps * step_bytes}"
        )
    obs = [raw[:obs_bytes].view(obs_space.dtype).reshape(agents, *obs_space.shape)]
    rewards, terminals = [], []
    for t in range(steps):
        base = obs_bytes + t * step_bytes
        obs.append(raw[base : base + obs_bytes].view(obs_space.dtype).reshape(agents, *obs_space.shape))
        rewards.append(raw[base + obs_bytes : base + obs_bytes + 4 * agents].view(np.float32))
        terminals.append(raw[base + obs_bytes + 4 * agents : base + step_bytes].astype(bool))
    result = {"obs": np.stack(obs), "rewards": np.stack(rewards), "terminals": np.stack(terminals)}
    if log_interval:
        result["logs"] = {}
        for line in log_file.read_text().splitlines():
            step, *items = line.split()
            result["logs"][int(step)] = {k: float(v) for k, v in (item.split("=") for item in items)}
    return result


def bench(
    env_class: type[OceanEnv],
    num_envs: int,
    steps: int,
    workdir: Path,
    seed: int = 0,
    actions=None,
    shoal_rand: bool = False,
    final: Path | None = None,
) -> tuple[float, float]:
    """Agent steps per second of the bare loop (libc rand(), as PufferLib runs it): per second of wall
    time and per second of the stepping thread's CPU time. ``actions``: rows of actions (batches,
    agents, ...) stepped in turn, as shoal's benchmark does. ``shoal_rand``: each env's rand() on its
    own stream seeded as shoal seeds it, and shoal's benchmark's warm-up, so that the loop steps the
    trajectories shoal steps with the same ``actions`` and ``seed`` (the same work, where an env's
    work depends on its random draws). ``final``: a file that gets the last step's observations,
    rewards and terminals (as ``trace`` lays out a step; needs ``actions``)."""
    if final is not None and actions is None:
        raise OceanError("harness.bench: final (the last step's file) needs the actions it steps")
    program = _program(env_class, workdir, shoal_rand=shoal_rand)
    command = [str(program), "bench", str(num_envs), str(steps), str(seed)]
    if actions is not None:
        action_file = Path(workdir) / f"bench_actions_{env_class.__name__}.bin"
        rows = np.asarray(actions)
        rows.astype(np.float32 if rows.dtype.kind == "f" else np.int32).tofile(action_file)
        command.append(str(action_file))
        if final is not None:
            command.append(str(final))
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise OceanError(f"harness of {env_class.__name__} failed: {result.stderr.strip()}")
    seconds, agent_steps, cpu_seconds = result.stdout.split()
    return float(agent_steps) / float(seconds), float(agent_steps) / float(cpu_seconds)
