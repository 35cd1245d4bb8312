"""Compatibility alias of shoal.interrupts (moved beside call_order: the native layer uses it too)."""

import sys

from .. import interrupts as _module

sys.modules[__name__] = _module
