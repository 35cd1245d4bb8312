"""Compatibility alias of shoal.tools.policy_standin (a GPU stand-in policy (`shoal autotune --policy-us`, bench/bench_trainer.py): moved into tools/ with the rest of the command)."""

import sys

from .tools import policy_standin as _module

sys.modules[__name__] = _module
