"""Compatibility alias of shoal.tools.peers (moved into tools/ with the rest of the `shoal` command)."""

import sys

from .tools import peers as _module

sys.modules[__name__] = _module
