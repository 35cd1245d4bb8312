"""One process loads many distinct env libraries (a long training script, a sweep, the test suite itself).

glibc keeps a small static TLS reserve (a few hundred bytes) for dlopen()ed libraries whose thread-locals
use the initial-exec model; once it is spent, the next such library fails to load ("cannot allocate memory
in static TLS block"). shoal's builds must not draw on it: this loads LIBRARIES copies (distinct files,
so distinct modules to the loader) of an Ocean env library and of the SDK example, each of which routes
rand() through a thread-local, and steps every one on two threads, in a fresh interpreter.
"""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import shoal
from shoal.native import toolchain

HERE = Path(__file__).resolve().parent
EXAMPLE = HERE.parent / "examples" / "custom_env" / "random_walk.c"
LIBRARIES = 100  # per kind; at 32-40 bytes of static TLS each, initial-exec builds fail after about a dozen

LOAD_ALL = textwrap.dedent(
    """
    import dataclasses, shutil, sys
    from pathlib import Path
    import numpy as np
    from shoal import ocean
    from shoal.ocean import pyclass
    from shoal.ocean.env import make_class
    from shoal.native import load_env
    from shoal.vector import make

    tree, sdk_library, out, copies = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4])
    base = ocean.env_class("leaky", tree).ocean
    library = base["library"]

    def ocean_copy(i):
        path = out / f"leaky_{i}{library.path.suffix}"
        shutil.copy(library.path, path)
        model = pyclass.read_class(Path(base["class_path"]), {})
        copy = dataclasses.replace(library, path=path)
        return make_class("leaky", Path(base["ocean_dir"]), copy, model, {}, base["defaults"])

    def sdk_copy(i):
        path = out / f"random_walk_{i}{sdk_library.suffix}"
        shutil.copy(sdk_library, path)
        return load_env(path, "random_walk")

    observed = []
    for i in range(copies):
        for cls in (ocean_copy(i), sdk_copy(i)):
            with make(cls, backend="Multithreading", num_envs=4, max_num_threads=2) as vector:
                obs, _ = vector.reset(seed=7)
                for _ in range(3):
                    obs = vector.step(np.zeros(vector.action_space.shape, vector.action_space.dtype))[0]
                observed.append(obs.tobytes())
    # Every copy of one library is the same env: same seed, same observations.
    assert len(set(observed[0::2])) == 1 and len(set(observed[1::2])) == 1, "copies of a library disagree"
    print("loaded", len(observed))
    """
)


def _sdk_library(folder: Path) -> Path:
    """The SDK example compiled as shoal's own builds compile env code."""
    tools = toolchain.current()
    output = folder / f"random_walk{tools.library_suffix}"
    options = toolchain.Options(optimize=2, includes=(shoal.get_include(),))
    subprocess.run(tools.shared_library([EXAMPLE], output, options), check=True, capture_output=True)
    return output


def test_a_process_loads_and_steps_a_hundred_libraries_of_each_kind(tmp_path, time_limit):
    time_limit(240)
    sdk = _sdk_library(tmp_path)
    copies = tmp_path / "copies"
    copies.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", LOAD_ALL, str(HERE / "ocean_tree"), str(sdk), str(copies), str(LIBRARIES)],
        capture_output=True,
        text=True,
        timeout=220,
        env={**os.environ, "SHOAL_OCEAN_BUILD_CACHE": str(tmp_path / "ocean_builds")},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split() == ["loaded", str(2 * LIBRARIES)]
