"""Native test envs that observe their actions (tests/native_envs/echo_actions.c), built once per
session with the C compiler into a temporary folder and loaded with shoal.native.load_env."""

import os
import shlex
import subprocess
from pathlib import Path

import shoal
from shoal.native import load_env

SOURCE = Path(__file__).resolve().parent / "native_envs" / "echo_actions.c"
CLASSES = {
    "box": ("echo_box", "EchoBox"),
    "multi": ("echo_multi", "EchoMulti"),
    "discrete": ("echo_discrete", "EchoDiscrete"),
}


def build_echo_envs(folder: Path) -> dict:
    """{"box": EchoBox, "multi": EchoMulti, "discrete": EchoDiscrete}, compiled into ``folder``."""
    library = folder / "echo_actions.so"
    compiler = shlex.split(os.environ.get("CC", "cc"))
    subprocess.run(
        [*compiler, "-O2", "-shared", "-fPIC", f"-I{shoal.get_include()}", str(SOURCE), "-o", str(library)],
        check=True,
        capture_output=True,
    )
    return {kind: load_env(library, name, class_name) for kind, (name, class_name) in CLASSES.items()}
