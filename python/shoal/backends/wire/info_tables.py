"""Infos packed for the trip from a worker process to the caller.

Gymnasium envs return an info dict on every step (MuJoCo's: four numpy scalars). Pickling a list of
such dicts costs more than the envs' own Python overhead: numpy scalars pickle one by one, through
their reduce protocol. Runs of consecutive dicts with the same keys and scalar values of the same
types travel instead as one table (each key's column of values, the columns' bytes end to end), and are rebuilt on the caller's side as equal dicts with
values of the same types (an ``np.float64`` stays an ``np.float64``, a ``float`` a ``float``).
Everything else travels as it is.
"""

from __future__ import annotations

import numpy as np

# Value types a column can hold, rebuilt exactly: numpy scalars by iterating their array, Python
# scalars by tolist(). type() is compared exactly (a bool is not taken for an int).
_PYTHON_DTYPES = {bool: np.dtype(np.bool_), int: np.dtype(np.int64), float: np.dtype(np.float64)}
_column_dtypes: dict[type, np.dtype | None] = dict(_PYTHON_DTYPES)


def _column_dtype(kind: type) -> np.dtype | None:
    """The dtype of a column of values of type ``kind``, or None if such values travel as they are."""
    try:
        return _column_dtypes[kind]
    except KeyError:
        is_number = issubclass(kind, np.generic) and np.dtype(kind).kind in "biuf"
        dtype = _column_dtypes[kind] = np.dtype(kind) if is_number else None
        return dtype


def _row_signature(info) -> tuple | None:
    """(keys, value types) of a dict whose values are all scalars a column can hold, else None."""
    if type(info) is not dict or not info:
        return None
    kinds = tuple(map(type, info.values()))
    for kind in kinds:
        if _column_dtype(kind) is None:
            return None
    return tuple(info), kinds


def _table(rows: list[dict], keys: tuple, kinds: tuple) -> tuple | None:
    """One run as (keys, column dtypes, python flags, row count, the columns' bytes end to end)."""
    columns = []
    for key, kind in zip(keys, kinds):
        try:
            columns.append(np.array([row[key] for row in rows], dtype=_column_dtype(kind)))
        except OverflowError:  # a Python int beyond int64
            return None
    dtypes = tuple(column.dtype.str for column in columns)
    python = tuple(kind in _PYTHON_DTYPES for kind in kinds)
    return keys, dtypes, python, len(rows), b"".join(column.tobytes() for column in columns)


def pack(infos: list) -> list:
    """``infos`` as runs: a table for each run of two or more consecutive dicts with the same keys
    and scalar value types, a one-item list ``[info]`` for everything else."""
    runs: list = []
    i, n = 0, len(infos)
    next_signature = _row_signature(infos[0]) if infos else None
    while i < n:
        signature, j = next_signature, i + 1
        while j < n:
            next_signature = _row_signature(infos[j])
            if signature is None or next_signature != signature:
                break
            j += 1
        table = _table(infos[i:j], *signature) if signature is not None and j - i > 1 else None
        if table is None:
            runs.extend([info] for info in infos[i:j])
        else:
            runs.append(table)
        i = j
    return runs


def unpack(runs: list) -> list:
    """The infos list that :func:`pack` packed: equal dicts, in order, with values of the same types."""
    infos: list = []
    for run in runs:
        if type(run) is list:
            infos.extend(run)
            continue
        keys, dtypes, python_flags, count, data = run
        values, offset = [], 0
        for dtype, python in zip(dtypes, python_flags):
            column = np.frombuffer(data, dtype, count, offset)
            offset += column.nbytes
            values.append(column.tolist() if python else list(column))
        infos.extend(dict(zip(keys, row)) for row in zip(*values))
    return infos
