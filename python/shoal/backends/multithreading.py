"""Multithreading: native envs stepped by shoal's C++ worker pool inside the caller's process."""

from __future__ import annotations

from .. import cpus
from ..native import check_threads, native_env_class
from ..seeding import check_seed
from ..spaces import joint_space
from ..validation import is_integer
from .base import EnvLists, VecEnv


def default_num_threads(num_envs: int, pipelined: bool = False) -> int:
    """Physical cores, capped by the number of envs; one fewer when pipelined, leaving the
    caller's core to the policy that runs while the driver steps."""
    cores = cpus.physical_cores() - (1 if pipelined else 0)
    return max(1, min(cores, num_envs))


class Multithreading(VecEnv):
    """All envs in one native vector; ``max_num_threads`` threads (the caller included) step them.

    ``max_num_threads``: 0 or 1 = the caller steps every env itself (no pool threads); N > 1 = the
    caller plus N - 1 persistent pool threads. Default: physical cores, capped by num_envs.
    ``schedule``: "static" contiguous slices (default) or "dynamic" chunks for envs of uneven cost.

    ``batch_size`` < num_envs pipelines: the envs form num_envs / batch_size buffers; ``send``
    hands the buffer just received to a native driver thread and returns at once (the GIL is free
    while it steps, so the caller's policy runs meanwhile); ``recv`` returns the next buffer in
    round-robin order, waiting only for that one. Per-env trajectories equal Serial's. In this mode
    the driver thread takes the caller's place in the pool: max_num_threads counts it.

    Ctrl-C during a long step (or recv) stops it at an env boundary within about 0.1 s, plus the
    step of any env that is running then (an env's own step cannot be interrupted); the vector then
    refuses use until reset(). close() from another thread stops a step in flight the same way. A
    long reset (many seeded Atari resets) is stopped the same way, and the error names the reset.
    """

    def _build(
        self,
        envs: EnvLists,
        num_envs: int,
        seed: int,
        *,
        max_num_threads: int | None = None,
        schedule: str = "static",
        pin_threads: bool = False,
        batch_size: int | None = None,
    ) -> None:
        env_creators, env_args, env_kwargs = envs
        env_type = native_env_class(env_creators, env_args, env_kwargs, "Multithreading")
        if batch_size is None or batch_size == "auto":
            batch_size = num_envs
        # The option table checked batch_size (it divides num_envs) and schedule (backends/options.py).
        assert is_integer(batch_size) and num_envs % batch_size == 0, "invariant: the table checked batch_size"
        if max_num_threads is None or max_num_threads == "auto":
            max_num_threads = default_num_threads(num_envs, pipelined=batch_size < num_envs)
        max_num_threads = check_threads(max_num_threads)
        self.seed = check_seed(seed)
        self.num_buffers = num_envs // int(batch_size)
        self.batch_size = int(batch_size)
        # The one native vector: its threads, buffers, call order and guard; this object is its face.
        self.env = env = env_type(
            num_envs=num_envs,
            seed=self.seed,
            num_threads=max_num_threads,
            schedule=schedule,
            pin_threads=pin_threads,
            env_params=list(env_kwargs),
            num_buffers=self.num_buffers,
        )
        env.serve_as("Multithreading")
        if self.box_actions != "pass":
            env.set_box_actions(self.box_actions)
        self.driver_env = env
        self.num_envs = num_envs
        self.num_agents = env.num_agents
        self.agents_per_batch = self.num_agents // self.num_buffers
        self.single_observation_space = env.single_observation_space
        self.single_action_space = env.single_action_space
        self.emulated = None
        self._schedule = schedule
        self.agent_ids = env.agent_ids
        self.constant_agent_ids = env.constant_agent_ids
        self.buf = env.buf
        self.observation_space = joint_space(self.single_observation_space, self.agents_per_batch)
        self.action_space = joint_space(self.single_action_space, self.agents_per_batch)
        self._order = env._order
        # The vector API is the native vector's own methods, bound here (no call layer in between).
        self.async_reset, self.send, self.recv = env.async_reset, env.send, env.recv
        self.help_step, self.close = env.help_step, env.close

    @property
    def observations(self):
        """The observations recv() returned last (PufferLib's attribute)."""
        return self.env.batch_rows.observations

    @property
    def final_observations(self):
        return self.env.batch_rows.final_observations

    @property
    def infos(self) -> list:
        return self.env.infos

    @property
    def local_envs(self) -> list:
        return [self.env]

    @property
    def max_num_threads(self) -> int:
        return self.env.num_threads

    @max_num_threads.setter
    def max_num_threads(self, num_threads: int) -> None:
        """Changes the thread count of the live vector (between steps)."""
        self.env.set_num_threads(num_threads)

    @property
    def schedule(self) -> str:
        return self._schedule

    @schedule.setter
    def schedule(self, schedule: str) -> None:
        """Changes how the live vector shares envs out to its threads (between steps)."""
        self.env.set_schedule(schedule)
        self._schedule = schedule

    def step_while_waiting(self, ready) -> bool:
        """Steps chunks of the envs stepping in the background on the calling thread until ``ready()``
        is true or no chunk is left; returns ``ready()``'s last answer. For a caller about to wait for
        something else (its policy's results from an accelerator): its core steps envs meanwhile,
        then it waits its own way for what is left. Results are the same either way."""
        while not ready():
            if not self.help_step():
                return False
        return True

    def pool_stats(self) -> dict:
        return self.env.pool_stats()
