"""Compatibility alias of shoal.tools.sample_deadline (moved into tools/ with the rest of the `shoal` command)."""

import sys

from .tools import sample_deadline as _module

sys.modules[__name__] = _module
