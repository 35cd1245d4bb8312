"""Ocean envs of the pinned pufferlib 3.0.0 sdist that cannot run here, and why (a reason outside
shoal). ``env_class`` raises OceanError with the reason; a user's own tree is built as it is."""

from __future__ import annotations

UNAVAILABLE = {
    "gpudrive": (
        "gpudrive reads its maps from resources/gpudrive/binaries/map_000.bin ... map_<num_maps - 1>.bin "
        "(binding.c's my_shared and my_put; its class checks map_000.bin and raises FileNotFoundError "
        "without it), and the pufferlib 3.0.0 sdist ships none of them (its resources/gpudrive holds only "
        "map_942.bin, outside binaries/): the GPUDrive map data is a separate download"
    ),
}


def reason(name: str, source_tree) -> str | None:
    """Why env ``name`` of the pinned sdist cannot run (None: it can, or the tree is the user's)."""
    return UNAVAILABLE.get(name) if source_tree is None else None
