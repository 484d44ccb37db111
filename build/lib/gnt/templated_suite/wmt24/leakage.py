"""Which of the suite's adjectives a checkpoint may have been trained on.

The WMT24 sentences themselves are never in our training data, but the project's templated training pairs use
adjectives of their own (``data/templates/lexicons``), and some of those are also adjectives of the suite: on
them a fine-tuned checkpoint has been taught the neutral form, so its ΔN there is not a fair transfer measure.
The overlap is listed for the suite as a whole (the shipped lexicons), and per checkpoint from its data build's
manifest (``templated_adjectives.train`` and ``.dev``), which is what it actually saw.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from gnt.data.templated import LANGUAGES, load_lexicon
from gnt.evaluation.discovery import ModelUnderTest
from gnt.filenames import MANIFEST
from gnt.io import read_json


def project_adjectives() -> set[str]:
    """English adjectives of the project's templated lexicons (all languages share them)."""
    return {e.en.casefold() for lang in LANGUAGES for e in load_lexicon(lang)}


def _manifest(model: ModelUnderTest) -> Path | None:
    data_dir = model.data_dir
    if not data_dir:
        return None
    run = Path(model.run_dir) if model.run_dir else None
    candidates = [Path(data_dir)] + ([run / data_dir, run.parent / data_dir] if run else [])
    for folder in candidates:
        if (folder / MANIFEST).is_file():
            return folder / MANIFEST
    return None


def leakage_report(suite_adjectives: Iterable[str], models: Sequence[ModelUnderTest] = ()) -> dict:
    """The suite ∩ project overlap, and per model the suite adjectives its training data contained."""
    suite = {a.casefold() for a in suite_adjectives}
    report: dict = {
        "suite_adjectives": len(suite),
        "in_project_templates": sorted(suite & project_adjectives()),
        "models": {},
    }
    for model in models:
        if model.adapter is None:
            report["models"][model.name] = {"status": "base model: not fine-tuned by this project"}
            continue
        manifest = _manifest(model)
        if manifest is None:
            report["models"][model.name] = {
                "status": "unknown: no data build manifest recorded",
                "possible_overlap": report["in_project_templates"],
            }
            continue
        sides = read_json(manifest).get("templated_adjectives", {})
        trained = {a.casefold() for side in ("train", "dev") for a in sides.get(side, [])}
        report["models"][model.name] = {
            "status": "checked",
            "manifest": str(manifest),
            "trained_on_suite_adjectives": sorted(suite & trained),
        }
    return report
