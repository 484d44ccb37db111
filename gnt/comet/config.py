"""The xCOMET settings: the keys of ``eval/comet.py`` and of the pipeline's xcomet step (one class, each default
once). The ``xcomet_*`` keys say how the comet environment scores; the others which model folders are scored
and where the scores go; the bootstrap keys are the shared group's (the summary's intervals)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gnt.recipe import RecipeError
from gnt.settings import BootstrapSettings

DEFAULT_MODEL = "Unbabel/XCOMET-XL"


@dataclass
class CometConfig(BootstrapSettings):
    """How a results folder is scored with xCOMET."""

    xcomet_model: str = DEFAULT_MODEL
    """Hub id (gated XCOMET models need an accepted licence + HF token), checkpoint file, or model folder."""
    xcomet_batch_size: int = 16
    """Items per forward pass of the xCOMET model."""
    xcomet_gpus: int | None = None
    """CUDA devices for comet; null = every visible one (0 on a CPU machine); > 1 runs Lightning DDP."""
    xcomet_chunk_size: int = 50_000
    """Items per runner call: each call reloads the model (~1 min for XCOMET-XL); each finished chunk is cached."""
    xcomet_cache: str | None = None
    """Cache file; default ``<results>/cache/xcomet.jsonl``."""
    xcomet_auto_install: bool = True
    """Build the comet environment when it is missing (a few minutes, once); false fails with the command."""
    xcomet_timeout_s: float | None = None
    """Seconds one runner call may take before it is stopped and reported (null: no limit)."""
    xcomet_progress: bool = False
    """Show comet's own progress bars (off: one line per chunk)."""
    models: list[str] = field(default_factory=list, metadata={"help": "model folders to score; default all"})
    tiny: bool = field(default=False, metadata={"help": "score with the offline tiny XCOMET (smoke test)"})

    def validate(self) -> CometConfig:
        if self.xcomet_batch_size < 1 or self.xcomet_chunk_size < 1:
            raise RecipeError("xcomet_batch_size and xcomet_chunk_size must be positive")
        if self.xcomet_gpus is not None and self.xcomet_gpus < 0:
            raise RecipeError("xcomet_gpus must be >= 0 (or null for every visible GPU)")
        self.validate_bootstrap()
        return self
