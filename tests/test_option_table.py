"""One option table (backends/options.py OPTIONS) feeds make(), config.ini and the docs' table."""

from __future__ import annotations

from pathlib import Path

import pytest

import shoal
import shoal.vector
from shoal import config as shoal_config
from shoal.backends.registry import COMMON, OPTIONS, options_table
from shoal.envs import CartPole

DOCS_TABLE = Path(__file__).parent.parent / "docs" / "reference" / "config.md"


def test_config_keys_are_the_registry_options():
    names = {opt.name for opts in OPTIONS.values() for opt in opts} | {opt.name for opt in COMMON}
    assert set(shoal_config.VEC_KEYS) == names | {"backend"}
    for backend, opts in OPTIONS.items():
        for opt in opts:
            assert shoal_config._option(backend, opt.name) is opt


def test_docs_table_is_the_registry_table():
    text = DOCS_TABLE.read_text()
    table = text.split("<!-- options-table:begin -->\n")[1].split("<!-- options-table:end -->")[0]
    assert table == options_table()
    for opts in OPTIONS.values():
        for opt in opts:
            assert f"| `{opt.name}` |" in table


def write(tmp_path, vec: dict) -> Path:
    path = tmp_path / "config.ini"
    path.write_text("[env]\nname = cartpole\n[vec]\n" + "".join(f"{k} = {v}\n" for k, v in vec.items()))
    return path


BAD_VALUES = [
    ("Multithreading", "max_num_threads", "2000", 2000),
    ("Multithreading", "max_num_threads", "-1", -1),
    ("Multithreading", "schedule", "fast", "fast"),
    ("Multithreading", "pin_threads", "maybe", "maybe"),
    ("Multithreading", "batch_size", "0", 0),
    ("Serial", "num_workers", "0", 0),
    ("Multiprocessing", "timeout", "-1", -1.0),
    ("Multiprocessing", "on_worker_failure", "retry", "retry"),
    ("Multiprocessing", "start_method", "thread", "thread"),
    ("Multiprocessing", "zero_copy", "often", "often"),
    ("Serial", "num_envs", "0", 0),
    ("Multithreading", "box_actions", "clamp", "clamp"),
    ("Serial", "box_actions", "Strict", "Strict"),
]


@pytest.mark.parametrize("backend, key, text, value", BAD_VALUES)
def test_config_and_make_say_the_same_about_a_bad_value(tmp_path, backend, key, text, value):
    kwargs = {"num_envs": 4, key: value}
    with pytest.raises(shoal.APIUsageError) as from_make:
        shoal.vector.make(CartPole, backend=backend, **kwargs)
    path = write(tmp_path, {"backend": backend, **{k: (text if k == key else v) for k, v in kwargs.items()}})
    with pytest.raises(shoal_config.ConfigError) as from_config:
        shoal_config.load(path)
    assert str(from_make.value) in str(from_config.value)
    assert str(from_config.value).startswith(f"{path}: [vec] {key} = {text!r}: ")


def test_config_takes_the_native_thread_limit(tmp_path):
    assert shoal_config.load(write(tmp_path, {"max_num_threads": 1024})).vec["max_num_threads"] == 1024
    with pytest.raises(shoal_config.ConfigError, match=r"must be an integer in \[0, 1024\], got 1025"):
        shoal_config.load(write(tmp_path, {"max_num_threads": 1025}))


def test_help_of_make_lists_every_backend_option():
    doc = shoal.vector.make.__doc__
    for backend, opts in OPTIONS.items():
        assert f"\n    {backend}\n" in doc
        for opt in opts:
            assert f"{opt.name} (" in doc
