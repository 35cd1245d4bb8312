"""Compatibility alias of shoal.tools.sample_deadline (autotune's hard end of a sample: moved into tools/ with the rest of the command)."""

import sys

from .tools import sample_deadline as _module

sys.modules[__name__] = _module
