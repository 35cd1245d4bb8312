"""A worker's share of make()'s per-env lists, and how it travels to the worker."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import APIUsageError


@dataclass
class EnvSlice:
    """The creators, args and kwargs of envs [first_env, first_env + len(creators)) of a vector."""

    first_env: int
    creators: list
    args: list
    kwargs: list

    @classmethod
    def of(cls, env_creators: list, env_args: list, env_kwargs: list, envs: slice) -> EnvSlice:
        return cls(envs.start, env_creators[envs], env_args[envs], env_kwargs[envs])

    def __len__(self) -> int:
        return len(self.creators)

    def pickled(self, remedy: str) -> bytes:
        """The slice pickled with cloudpickle (creators may be lambdas or closures); ``remedy`` says
        what the user can do when that fails."""
        import cloudpickle

        try:
            return cloudpickle.dumps(self)
        except Exception as exc:
            raise APIUsageError(
                f"{remedy}: shipping env creators, args and kwargs to the workers with cloudpickle failed: {exc}"
            ) from exc
