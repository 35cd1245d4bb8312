"""
shoal's native core (private; use the shoal package)
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['ABI_VERSION', 'CACHE_LINE_BYTES', 'CudaCopier', 'CudaEvent', 'ENV_BASE_SIZE', 'EnvSpec', 'StructuredRows', 'UploadPlan', 'Vector', 'bundled_names', 'bundled_spec', 'env_seed', 'int_actions_below', 'load_spec', 'measure_fork_join_ns', 'physical_cores', 'release_gil', 'write_box_steps']
class StructuredRows:
    """
    Writes batches of Dict/Tuple observations into rows laid out by leaf.
    """
    def __init__(self, leaves: list) -> None:
        """
        leaves: (path, dtype, shape, offset) of each leaf, in the row's order.
        """
    def write_steps(self, results: list, observations: numpy.ndarray, rewards: numpy.ndarray, terminals: numpy.ndarray, truncations: numpy.ndarray) -> int:
        """
        As write_box_steps, for observations of the leaves' structure: an observation is plain if
        every leaf, found through exact dicts and tuples, is a C-contiguous ndarray of its shape and dtype (or
        float64 for float32), or, for a scalar leaf, a Python or numpy (int32/int64, float32/float64) number of
        its kind that fits.
        """
class EnvSpec:
    """
    A native env type: sizes, spaces, parameters and callbacks.
    """
    def __getstate__(self) -> tuple[str, str]:
        ...
    def __setstate__(self, arg0: tuple) -> None:
        ...
    def configure(self, params: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], texts: collections.abc.Sequence[str]) -> EnvSpec:
        """
        The spec of one vector with these parameters (env 0's row, the TEXT parameters' values): configure() run on a copy; the spec itself if it has neither configure() nor TEXT parameters.
        """
    def describe(self) -> dict:
        """
        The spec as a dict (spaces, params, stats, time limit).
        """
    @property
    def configurable(self) -> bool:
        """
        Whether configure() makes a copy: the spec has configure() or a TEXT parameter.
        """
    @property
    def name(self) -> str:
        """
        The env's NAME (SHOAL_EXPORT_ENV).
        """
class Vector:
    """
    Native envs over caller-owned buffers, stepped by a worker pool.
    """
    def __init__(self, spec: EnvSpec, num_envs: typing.SupportsInt | typing.SupportsIndex, params: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], max_episode_steps: typing.SupportsInt | typing.SupportsIndex, observations: numpy.ndarray, final_observations: numpy.ndarray, actions: numpy.ndarray, rewards: numpy.ndarray, terminals: numpy.ndarray, truncations: numpy.ndarray, masks: numpy.ndarray, num_threads: typing.SupportsInt | typing.SupportsIndex, schedule: str = 'static', dynamic_chunk: typing.SupportsInt | typing.SupportsIndex = 0, pin_threads: bool = False, num_buffers: typing.SupportsInt | typing.SupportsIndex = 1, box_actions: str = 'pass', cpu_limit: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
        ...
    def abandon(self) -> None:
        """
        Stops the step in flight at the next env boundary (from any thread); refusals follow until reset().
        """
    def close(self) -> None:
        """
        Stops steps in flight, joins the threads and releases the envs (GIL released); closing twice does nothing.
        """
    def collect_log(self, begin: typing.SupportsInt | typing.SupportsIndex, end: typing.SupportsInt | typing.SupportsIndex) -> dict:
        """
        Episode stats of envs [begin, end) since the last collection, cleared: a dict of 'episodes' and, when some ended, the mean 'episode_return', 'episode_length' and each stat of the env.
        """
    def env_memory(self, index: typing.SupportsInt | typing.SupportsIndex) -> memoryview:
        """
        Raw bytes of env `index`'s struct (tests read and write env state through it).
        """
    def help_step(self, budget_ns: typing.SupportsInt | typing.SupportsIndex) -> bool:
        """
        Pipelined: steps chunks of the buffer step in flight on this thread for about budget_ns (GIL released); False when there was none.
        """
    def pool_stats(self) -> dict:
        """
        The worker pool's counters, by name (shoal/pool_stats.hpp).
        """
    def reset(self, seed: typing.SupportsInt | typing.SupportsIndex) -> None:
        """
        Seeds env i from env_seed(seed, i) and resets every env (GIL released); forgets an interrupted step or reset. Ctrl-C or abandon() stops it at an env boundary (the envs then refuse steps until a reset runs to its end). Raises EnvError for env failures.
        """
    def set_num_threads(self, num_threads: typing.SupportsInt | typing.SupportsIndex) -> None:
        """
        Changes the number of threads stepping envs, the caller included, between steps.
        """
    def set_schedule(self, schedule: str, dynamic_chunk: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
        """
        Changes how envs are shared out between steps: 'static' slices or 'dynamic' chunks of dynamic_chunk envs (0 = auto).
        """
    def step(self) -> int:
        """
        Steps every env once with the actions in the buffer (GIL released); returns episodes ended.
        """
    def step_actions(self, actions: typing.Any) -> int:
        """
        Checks and copies the actions, then steps every env (GIL released); returns episodes ended. int32 or int64 (float32 for a box) actions in native byte order, C-contiguous, of the exact shape are read in place; others are converted by action_checker first. Raises APIUsageError (nothing stepped) for actions the rule refuses.
        """
    def submit(self, buffer: typing.SupportsInt | typing.SupportsIndex, actions: typing.Any) -> None:
        """
        Pipelined: checks and copies a buffer's actions as step_actions does, queues its step and returns at once.
        """
    def wait(self, buffer: typing.SupportsInt | typing.SupportsIndex) -> int:
        """
        Pipelined: waits (GIL released) for a buffer's step; returns episodes ended.
        """
    @property
    def action_checker(self) -> typing.Any:
        """
        The caller's side of the action rule (spaces.ActionChecker of a send's rows): converted(actions) for actions of another form, refusal(actions, index, count) for the error of refused ones.
        """
    @action_checker.setter
    def action_checker(self, arg1: typing.Any) -> None:
        ...
    @property
    def box_actions(self) -> str:
        """
        What Box actions outside the bounds do: 'pass' (to the envs as given), 'strict' (refused: step_actions and submit raise APIUsageError) or 'clip' (clipped to the bounds as they are copied).
        """
    @box_actions.setter
    def box_actions(self, arg1: str) -> None:
        ...
    @property
    def closed(self) -> bool:
        """
        Whether close() was called.
        """
    @property
    def num_buffers(self) -> int:
        """
        Buffers the envs form (1: not pipelined).
        """
    @property
    def num_threads(self) -> int:
        """
        Threads stepping envs, the caller included, as requested (0 and 1: the caller alone).
        """
class UploadPlan:
    """
    A batch's upload: host gathers, then host-to-device copies.
    """
    def __init__(self, gathers: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]], uploads: collections.abc.Sequence[tuple[typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex, typing.SupportsInt | typing.SupportsIndex]]) -> None:
        ...
class CudaEvent:
    """
    An event of a CudaCopier's device.
    """
    def query(self) -> bool:
        """
        True once the work before its last record is done.
        """
    def record(self, stream: typing.SupportsInt | typing.SupportsIndex) -> None:
        """
        Marks the work queued so far on `stream`.
        """
    def synchronize(self) -> None:
        """
        Waits (GIL released) for the work before its last record.
        """
class CudaCopier:
    """
    Host<->device copies and events through the CUDA driver (loaded at run time). Addresses and streams are integers (tensor.data_ptr(), stream.cuda_stream).
    """
    def __init__(self, device: typing.SupportsInt | typing.SupportsIndex, driver: str = '') -> None:
        """
        `driver`: the driver library to load (default the platform's: libcuda.so.1, nvcuda.dll). RuntimeError, saying why, where the driver cannot be loaded or the device used.
        """
    def device_to_host(self, destination: typing.SupportsInt | typing.SupportsIndex, source: typing.SupportsInt | typing.SupportsIndex, bytes: typing.SupportsInt | typing.SupportsIndex, stream: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def host_to_device(self, destination: typing.SupportsInt | typing.SupportsIndex, source: typing.SupportsInt | typing.SupportsIndex, bytes: typing.SupportsInt | typing.SupportsIndex, stream: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def new_event(self) -> CudaEvent:
        ...
    def synchronize_device(self) -> None:
        """
        Waits (GIL released) until the device has no work left.
        """
    def upload(self, plan: UploadPlan, stream: typing.SupportsInt | typing.SupportsIndex) -> None:
        """
        A plan's gathers, then its copies queued on `stream`.
        """
def bundled_names() -> list[str]:
    """
    Names of the bundled envs.
    """
def bundled_spec(name: str) -> EnvSpec:
    """
    Spec of a bundled env.
    """
def env_seed(seed: typing.SupportsInt | typing.SupportsIndex, index: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    Seed of env `index` under vector seed `seed` (same rule as shoal.seeding.env_seed).
    """
def int_actions_below(actions: numpy.ndarray, upper: typing.SupportsInt | typing.SupportsIndex) -> bool:
    """
    True if every value of a C-contiguous integer array is in [0, upper); False if one is not,
    or for any other array (the caller's full check decides).
    """
def load_spec(path: str, name: str) -> EnvSpec:
    """
    Loads `shoal_env_spec_<name>` from a shared library built against shoal/env.h.
    """
def measure_fork_join_ns(num_threads: typing.SupportsInt | typing.SupportsIndex, rounds: typing.SupportsInt | typing.SupportsIndex, schedule: str = 'static') -> float:
    """
    Median-free mean cost of one fork-join round with a trivial body, in ns.
    """
def physical_cores() -> int:
    """
    Physical cores among the CPUs this process may use (affinity-aware; the one core count of shoal).
    """
def release_gil() -> None:
    """
    Does nothing with the GIL released: the bare cost of a native call, the baseline of Python's share.
    """
def write_box_steps(results: list, observations: numpy.ndarray, rewards: numpy.ndarray, terminals: numpy.ndarray, truncations: numpy.ndarray) -> int:
    """
    Writes row i of each output from results[i], a step()'s (observation, reward, terminated,
    truncated, info) tuple, if every result is plain: an observation ndarray of the rows' shape and dtype
    (or float64 for float32 rows), C-contiguous; a reward of Python's float or int or numpy's
    float32/float64/int32/int64; flags of bool or numpy.bool_. Returns -1 then; else the index of the
    first result that is not plain, and writes nothing.
    """
ABI_VERSION: int = 4
CACHE_LINE_BYTES: int = 64
ENV_BASE_SIZE: int = 176
__version__: str = '0.1.0'
