"""Compatibility alias of shoal.tools.cli (the `shoal` command: moved into tools/ with the rest of the command)."""

import sys

from .tools import cli as _module

sys.modules[__name__] = _module
