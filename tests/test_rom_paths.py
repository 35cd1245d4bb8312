"""An Atari ROM path must be a regular file of a cartridge's size, refused in one line before ALE
opens anything: /dev/zero would be read without end, a FIFO would block in open()."""

from __future__ import annotations

import os
import sys

import pytest

from shoal.atari.env import ROM_BYTES, AtariEnv
from shoal.errors import APIUsageError


def options(rom) -> dict:
    return AtariEnv._native_kwargs({"rom": str(rom)})


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_device_is_refused():
    with pytest.raises(APIUsageError, match="rom /dev/zero is a character device, not a regular file"):
        options("/dev/zero")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_opening_it(tmp_path):
    fifo = tmp_path / "game.bin"
    os.mkfifo(fifo)  # nothing writes to it: an open() would block for ever
    with pytest.raises(APIUsageError, match=r"is a FIFO \(named pipe\), not a regular file"):
        options(fifo)


def test_a_folder_a_missing_file_and_wrong_sizes_are_refused(tmp_path):
    with pytest.raises(APIUsageError, match="is a folder, not a regular file"):
        options(tmp_path)
    with pytest.raises(APIUsageError, match="No such file or directory"):
        options(tmp_path / "missing.bin")
    empty = tmp_path / "empty.bin"
    empty.touch()
    with pytest.raises(APIUsageError, match="has 0 bytes; an Atari 2600 ROM has 1,024 to 1,048,576"):
        options(empty)
    huge = tmp_path / "huge.bin"
    with open(huge, "wb") as file:
        file.truncate(ROM_BYTES[1] + 1)  # sparse: no disk used
    with pytest.raises(APIUsageError, match="has 1,048,577 bytes"):
        options(huge)
    with pytest.raises(APIUsageError, match="rom must be the path of a ROM file"):
        AtariEnv._native_kwargs({"rom": 3})


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
def test_a_plausible_rom_passes_and_a_link_is_followed(tmp_path):
    rom = tmp_path / "game.bin"
    rom.write_bytes(bytes(4096))
    link = tmp_path / "link.bin"
    link.symlink_to(rom)
    assert options(rom)["rom"] == str(rom)
    assert options(link)["rom"] == str(link)
