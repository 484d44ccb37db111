"""``python -m gnt.models.NAME OUT_DIR ...``, the model builders' old command line, handed to ``gnt model``.

The model modules sit below the command layer, so they do not import it: their ``__main__`` replaces the process
with the one command that builds models (``python -m gnt.cli model OUT_DIR ... model=NAME``), after one warning.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def run_as_gnt_model(model: str) -> NoReturn:
    """Warn once that the spelling is old, then run ``gnt model`` with the same words and ``model=MODEL``."""
    words = sys.argv[1:]
    print(f"warning: `python -m gnt.models.{model}` is an old spelling (2026-12-02); it runs "
          f"`gnt model {' '.join(words)} model={model}`", file=sys.stderr, flush=True)
    os.execv(sys.executable, [sys.executable, "-m", "gnt.cli", "model", *words, f"model={model}"])
