"""Ocean envs of the pinned pufferlib 3.0.0 sdist that shoal does not run, and why.

UNAVAILABLE holds the envs that cannot run for a reason in the env's own sources or data (PufferLib's
own build of them does not work either, works only by an accident of the compiler, or needs code
or data the sdist does not ship), each checked against the sdist (tests/test_ocean_unavailable.py).
PENDING holds the envs whose binding extends PufferLib's contract in a way shoal's adapter does not
carry yet: their entry goes when that support lands. ``shoal ocean list`` marks both; ``env_class``
raises ``OceanError`` with the reason. Only the pinned sdist's envs are listed: a source tree of
one's own is built as it is.
"""

from __future__ import annotations

from pathlib import Path

from .errors import OceanError
from .source import sdist_ocean_path

UNAVAILABLE = {
    "freeway": (
        "freeway.h:299 (randomize_enemy_speed) reads the local pointer `enemy` before it is set: "
        "undefined behaviour that zeroing the env struct cannot fix (the pointer is a local "
        "variable, not a field; PufferLib's calloc leaves it unset too). What the read finds "
        "depends on the compiler's registers: PufferLib's -O0 build segfaults at the first speed "
        "randomization (step 90), its -O2 -flto build reads the env struct itself as an enemy; "
        "shoal refuses it at build time (-Werror=maybe-uninitialized) rather than crash"
    ),
    "gpudrive": (
        "gpudrive reads its maps from resources/gpudrive/binaries/map_000.bin ... map_<num_maps - 1>.bin "
        "(binding.c's my_shared and my_put; its class checks map_000.bin and raises FileNotFoundError "
        "without it), and the pufferlib 3.0.0 sdist ships none of them (its resources/gpudrive holds only "
        "map_942.bin, outside binaries/): the GPUDrive map data is a separate download"
    ),
    "impulse_wars": (
        "impulse_wars is built on Box2D v3 (types.h includes box2d/box2d.h and env.h steps b2World_Step), "
        "which the pufferlib 3.0.0 sdist does not ship: PufferLib's setup.py downloads a prebuilt "
        "libbox2d.a and its headers from capnspacehook/box2d's releases/latest at build time, an unpinned "
        "binary of a fork, so neither the code nor the version PufferLib links is in the sdist"
    ),
    "tactical": (
        "an unfinished env in the sdist: tactical.h defines no c_close, which PufferLib's "
        "binding calls (its own build fails to import: undefined symbol c_close); my_init sets "
        "nothing and c_step writes no observation, reward or terminal; its class calls "
        "pufferlib.namespace, which pufferlib 3.0.0 does not have"
    ),
}

# Envs whose binding extends PufferLib's contract in a way the adapter does not carry yet: none now.
PENDING: dict[str, str] = {}


def status(name: str) -> str | None:
    """Why env ``name`` of the pinned sdist does not run on shoal, or None if it does."""
    if name in UNAVAILABLE:
        return f"unavailable: {UNAVAILABLE[name]}"
    if name in PENDING:
        return f"not supported yet: {PENDING[name]}"
    return None


def check_available(name: str, ocean: Path) -> None:
    """OceanError with the reason if ``name`` is listed and ``ocean`` is the pinned sdist's tree."""
    if ocean.resolve() != sdist_ocean_path().resolve():
        return
    reason = status(name)
    if reason is not None:
        raise OceanError(f"Ocean env {name!r} of pufferlib 3.0.0 does not run on shoal: {reason}")


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
