"""What workers report to the caller, in a form that crosses process and machine boundaries."""

from __future__ import annotations

import traceback
from dataclasses import dataclass

from ...errors import EnvError

RESET_HINT = "\nCall reset() before stepping again."


@dataclass(frozen=True)
class Failure:
    """An exception raised in a worker: which env (None: not one env's), its class, text and traceback."""

    env_index: int | None
    name: str
    text: str
    traceback: str

    @classmethod
    def of(cls, error: BaseException, env_index: int | None = None, prefix: str = "") -> Failure:
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        return cls(env_index, type(error).__name__, prefix + str(error), text)

    def creation_error(self, worker: int, envs: str, origin: str) -> EnvError:
        """The error of a worker that could not build its envs; ``origin`` names the worker's process."""
        return EnvError(
            f"worker {worker} failed to create envs {envs}: {self.name}: {self.text}\n\n"
            f"Traceback in {origin}:\n{self.traceback}"
        )

    def step_error(self, worker: int, envs: str, origin: str) -> EnvError:
        """The error of a failed reset or step, naming the env where one failed."""
        where = (
            f"env {self.env_index} (worker {worker})"
            if self.env_index is not None
            else f"worker {worker} (envs {envs})"
        )
        error = EnvError(
            f"{where} raised {self.name}: {self.text}\n\nTraceback in {origin}:\n{self.traceback}{RESET_HINT}"
        )
        error.env_index = self.env_index  # orders the failures of one call by env, whichever worker answered first
        return error
