"""What shoal.mujoco knows of a task beyond its C file: one small description per task in tasks/."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    """A Gymnasium MuJoCo task compiled from ``csrc/tasks/<symbol>.c`` (which exports ``symbol``)."""

    id: str  # Gymnasium's id, e.g. "HalfCheetah-v5"
    symbol: str  # the C name given to SHOAL_MJ_TASK, also the C file's stem
    gymnasium_module: str  # the Gymnasium module whose definitions the C code follows
    assets: str | None = None  # where bare xml_file names are found (None: Gymnasium's assets)

    @property
    def source(self) -> str:
        return f"{self.symbol}.c"
