"""Compatibility alias of shoal.tools.policy_standin (moved into tools/ with the rest of the `shoal` command)."""

import sys

from .tools import policy_standin as _module

sys.modules[__name__] = _module
