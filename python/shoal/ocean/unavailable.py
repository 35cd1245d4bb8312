"""Ocean envs of the pinned pufferlib 3.0.0 sdist that cannot run here, and why (a reason outside
shoal). ``env_class`` raises OceanError with the reason; a user's own tree is built as it is. Also
the envs whose steps write the state their vector shares (MY_SHARED), which one thread steps."""

from __future__ import annotations

from .errors import OceanError

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


# Envs whose c_step writes the state my_shared built for the whole vector: two threads stepping envs
# of one vector would race on it, so such a vector is stepped by one thread (each vector, and each
# Multiprocessing worker, has a state of its own).
WRITES_SHARED_STATE = {
    "moba": (
        "moba's c_step writes the state my_shared builds once per vector (its scripted opponents' path "
        "search fills the shared ai_paths cache using the shared ai_path_buffer scratch), so two threads "
        "would race on it"
    ),
}


def check_one_thread(name: str, num_threads: int, num_buffers: int) -> None:
    """Refuses more than one stepping thread for an env that writes its vector's shared state."""
    why = WRITES_SHARED_STATE.get(name)
    several = [n for n in (num_threads, num_buffers) if isinstance(n, int) and n > 1]
    if why is not None and several:
        raise OceanError(
            f"{name}: {why}; step it with max_num_threads=0 or 1 and num_buffers=1, "
            f"or on the Multiprocessing backend (got max_num_threads={num_threads}, num_buffers={num_buffers})"
        )
