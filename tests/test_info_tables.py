"""Infos packed for the trip from a Multiprocessing worker: what arrives equals what was sent, in
order, value types included."""

import math
import pickle

import numpy as np
import pytest

from shoal.backends.wire.info_tables import pack, unpack


def round_trip(infos):
    return unpack(pickle.loads(pickle.dumps(pack(infos), protocol=pickle.HIGHEST_PROTOCOL)))


def assert_identical(got, sent):
    assert len(got) == len(sent)
    for a, b in zip(got, sent):
        assert type(a) is type(b)
        if not isinstance(b, dict):
            assert a == b
            continue
        assert list(a) == list(b)  # same keys in the same order
        for key in b:
            assert type(a[key]) is type(b[key]), key
            if isinstance(b[key], (float, np.floating)) and math.isnan(b[key]):
                assert np.asarray(a[key]).tobytes() == np.asarray(b[key]).tobytes()
            elif isinstance(b[key], np.ndarray):
                np.testing.assert_array_equal(a[key], b[key])
            else:
                assert a[key] == b[key], key


class Info(dict):
    """A dict subclass: it travels as it is."""


def mujoco_like(i):
    return {
        "x_position": np.float64(0.1 * i),
        "x_velocity": np.float64(-i),
        "reward_ctrl": np.float32(i / 3),
        "steps": np.int32(i),
        "flag": np.bool_(i % 2),
    }


CASES = {
    "numpy scalars": [mujoco_like(i) for i in range(8)],
    "python scalars": [{"r": 0.5 * i, "n": i, "done": i % 3 == 0} for i in range(5)],
    "an episode end between steps": [mujoco_like(0), mujoco_like(1), {"episode_return": 2.5, **mujoco_like(2)}]
    + [mujoco_like(i) for i in range(3, 6)],
    "bool is not int": [{"v": True}, {"v": 1}, {"v": False}, {"v": 0}],
    "values that travel as they are": [{"obs": np.arange(3)}, {"obs": np.arange(3)}, {"name": "a"}, {"name": "b"}],
    "ints beyond int64": [{"n": 2**70}, {"n": 1}],
    "nan, infinities and signed zero": [{"x": math.nan}, {"x": -0.0}, {"x": math.inf}, {"x": np.float32("nan")}],
    "a lone dict, empty dicts, a dict subclass": [{"a": 1.0}, {}, {}, Info(a=1.0), Info(a=1.0)],
    "no infos": [],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_infos_arrive_as_sent(name):
    assert_identical(round_trip(CASES[name]), CASES[name])


def test_a_run_of_scalar_dicts_travels_as_one_table_and_in_fewer_bytes():
    infos = [mujoco_like(i) for i in range(32)]
    runs = pack(infos)
    assert len(runs) == 1 and type(runs[0]) is tuple
    assert len(pickle.dumps(runs, protocol=5)) < len(pickle.dumps(infos, protocol=5)) / 2


def test_keys_in_another_order_start_a_new_run():
    infos = [{"a": 1.0, "b": 2.0}, {"a": 1.0, "b": 2.0}, {"b": 2.0, "a": 1.0}, {"b": 2.0, "a": 1.0}]
    assert len(pack(infos)) == 2
    assert_identical(round_trip(infos), infos)
