"""Compatibility alias of shoal.tools.config (moved into tools/ with the rest of the `shoal` command)."""

import sys

from .tools import config as _module

sys.modules[__name__] = _module
