"""The connection to Ray that the Ray vectors of a process share, and each vector's actors.

A process already connected to Ray (``ray.init`` by the user) keeps that connection; otherwise shoal
connects (joining ``ray_address``, or starting a local instance) and the last of its vectors to close
calls ``ray.shutdown()``. That shutdown takes a second or more when it stops a local instance, so a
vector closed by a worker failure runs it in a thread of its own: the WorkerError is not delayed by
it, and the next connection waits for it (it holds the session lock).

Authentication. Ray turns token authentication on for a local instance and, unless a token is
given, writes one to ``~/.ray/auth_token``, where every later ``ray start`` of the user's finds it and
turns tokens on too (then joining those clusters by address fails). A local instance that shoal
starts gets a token of shoal's own through ``RAY_AUTH_TOKEN`` (its processes inherit it), so nothing
is written to the user's home; the variable is removed again when shoal's connection ends.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading

from ...errors import WorkerError
from .faults import CLOSE_TIMEOUT_S
from .ownership import Owner

_session_lock = threading.Lock()
_session = {"users": 0}  # vectors using a connection that shoal opened (ray.init) in this process
AUTH_MODE = "RAY_AUTH_MODE"
AUTH_TOKEN = "RAY_AUTH_TOKEN"
# shoal's ray.init turned token authentication on for this process; shoal set RAY_AUTH_TOKEN
_auth = {"set_by_init": False, "token_set": False}


def restore_auth_mode() -> None:
    """Undoes what a ray.init() did to this process's authentication mode when RAY_AUTH_MODE was
    unset before it (see the module's docstring); call it after ray.shutdown()."""
    os.environ.pop(AUTH_MODE, None)
    if _auth["token_set"]:
        _auth["token_set"] = False
        os.environ.pop(AUTH_TOKEN, None)
    try:
        from ray._raylet import AuthenticationTokenLoader, Config
    except ImportError:
        return  # a Ray without token authentication: the variable was all there was
    # In this order, as Ray's own tests reset it: the config first, so that a core-worker thread
    # still draining cannot reload the token while the config says token mode.
    Config.initialize("")
    AuthenticationTokenLoader.instance().reset_cache()


def connect(ray, address: str | None) -> bool:
    """Makes sure this process is connected; returns True if the caller must disconnect later."""
    with _session_lock:
        if ray.is_initialized():
            if _session["users"] == 0:
                return False  # the user's own connection: never shut it down
            _session["users"] += 1
            return True
        kwargs = {"logging_level": logging.WARNING}
        if address is None:
            # "local" starts a new instance even where another cluster's address file is lying around.
            kwargs = {**kwargs, "address": "local", "include_dashboard": False}
            if AUTH_TOKEN not in os.environ and os.environ.get(AUTH_MODE) is None:
                os.environ[AUTH_TOKEN] = secrets.token_hex(32)  # not a file in the user's home
                _auth["token_set"] = True
        else:
            kwargs["address"] = address
        mode_before = os.environ.get(AUTH_MODE)
        try:
            ray.init(**kwargs)
        except Exception as exc:
            if (mode_before is None and AUTH_MODE in os.environ) or _auth["token_set"]:
                restore_auth_mode()
            where = f"the Ray cluster at {address!r}" if address else "a local Ray instance"
            raise WorkerError(
                f"backend Ray could not connect to {where}: {type(exc).__name__}: {exc}{auth_hint(exc, address)}"
            ) from exc
        _auth["set_by_init"] = mode_before is None and AUTH_MODE in os.environ
        _session["users"] = 1
        return True


def auth_hint(exc: Exception, address: str | None) -> str:
    """What to try when joining a cluster failed and authentication may be why."""
    if address is None:
        return ""
    token = os.path.join(os.path.expanduser("~"), ".ray", "auth_token")
    said = "auth" in f"{type(exc).__name__} {exc}".lower()
    if not said and not os.path.exists(token) and AUTH_TOKEN not in os.environ:
        return ""
    return (
        "\nThis may be Ray's token authentication: a cluster started with tokens needs the same token here "
        f"(RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or {token}), and a token file there turns tokens on for "
        "every `ray start` that finds it (RAY_AUTH_MODE=disabled turns them off)."
    )


def disconnect(ray, wait: bool = True) -> None:
    """Drops one user of shoal's connection; the last one calls ray.shutdown() (which stops a local
    instance it started, or only leaves a joined cluster), in a thread of its own unless ``wait``."""
    _session_lock.acquire()
    _session["users"] -= 1
    if _session["users"] != 0 or not ray.is_initialized():
        _session_lock.release()
        return

    def shut_down():
        try:
            ray.shutdown()
            if _auth["set_by_init"] or _auth["token_set"]:
                _auth["set_by_init"] = False
                restore_auth_mode()
        finally:
            _session_lock.release()

    if wait:
        shut_down()
    else:  # not a daemon: the interpreter's exit waits for it
        threading.Thread(target=shut_down, name="shoal-ray-shutdown").start()


class Actors:
    """Actors and connection of one vector; knows nothing of the VecEnv, so a weakref.finalize can
    release them when the VecEnv is collected or the interpreter exits."""

    def __init__(self, ray):
        self.ray = ray
        self.owner = Owner("Ray")
        self.handles: list = []
        self.connected = False
        self.kill_now: set[int] = set()  # actors known to be stuck: killed, not asked to close
        self.failed = False  # a worker failure closes the vector: the shutdown of Ray does not wait
        self.placement_group = None  # the actors' reserved bundles, released after them
        self.starting: list = []  # replacements still starting (elastic): killed at shutdown

    def shutdown(self, graceful: bool = True) -> list[str]:
        """Closes the actors' envs (killing actors that do not finish in time); returns env close() failures."""
        if not self.owner.here:
            return []  # a forked child holds a copy of this object; the actors are not its own
        ray, handles = self.ray, self.handles
        self.handles = []
        failures: list[str] = []
        if handles and ray.is_initialized():
            for w in self.kill_now:
                with contextlib.suppress(Exception):  # already gone
                    ray.kill(handles[w], no_restart=True)
            closing = [h for w, h in enumerate(handles) if w not in self.kill_now]
            if graceful and closing:
                try:
                    refs = [h.close.remote() for h in closing]
                    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=CLOSE_TIMEOUT_S)
                    for ref in ready:
                        with contextlib.suppress(Exception):  # a dead actor has nothing left to close
                            failures += ray.get(ref)
                except Exception:
                    pass  # dead or unreachable actors are killed below all the same
            for handle in closing:
                with contextlib.suppress(Exception):  # already gone
                    ray.kill(handle, no_restart=True)
        starting, self.starting = self.starting, []
        for handle in starting:
            with contextlib.suppress(Exception):  # already gone
                ray.kill(handle, no_restart=True)
        if self.placement_group is not None and ray.is_initialized():
            group, self.placement_group = self.placement_group, None
            with contextlib.suppress(Exception):  # its nodes may be gone
                ray.util.remove_placement_group(group)
        if self.connected:
            self.connected = False
            disconnect(ray, wait=not self.failed)
        return failures
