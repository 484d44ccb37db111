"""Moved to :mod:`gnt.bootstrap` (the bootstrap serves every step, not only the evaluation); this old import path
still works."""

from gnt.bootstrap import *  # noqa: F403
from gnt.bootstrap import DEFAULT_ALPHA, DEFAULT_PAIRED_SAMPLES, DEFAULT_SAMPLES, DEFAULT_SEED  # noqa: F401
