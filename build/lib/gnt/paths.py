"""Where the project's own data lives.

gnt-align is used from a checkout (like the alignment-handbook): recipes, prompt texts, lexicons and the sample
live in the repository's ``data/`` and ``recipes/`` folders, and every default path below can be overridden from a
recipe or the command line.
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = PROJECT_ROOT / "data"
SAMPLE_DIR = DATA_DIR / "sample"
PROMPTS_DIR = DATA_DIR / "prompts"
TEMPLATES_DIR = DATA_DIR / "templates"
JUDGE_DIR = DATA_DIR / "judge"
RECIPES_DIR = PROJECT_ROOT / "recipes"


def cache_dir() -> Path:
    """Root of gnt-align's caches (models built offline, generation/judge caches when not per-run)."""
    root = os.environ.get("GNT_CACHE_DIR")
    return Path(root) if root else Path.home() / ".cache" / "gnt-align"
