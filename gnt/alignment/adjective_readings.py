"""Templated outputs read by the suite's classifier instead of the judge: which form the adjective took.

Why: the GNT figures of the alignment bench come from the learned judge, a 270M model with known blind spots on
templated sentences (a gendered adjective after a rewritten noun called neutral; an unseen epicene adjective called
gendered). On a templated entry with a gender-marked adjective the lexicon forms are known, so the templated suite's
classifier (:mod:`gnt.templated_suite.entry_forms`) reads the translation without the judge: a Set-N translation
should give the adjective its neutral form, a Set-G one the stated gender's. Rows where the classifier finds no form
of the adjective (the model chose another word, or did not translate) are counted as ``unknown``, not guessed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnt.data.entry import Entry
from gnt.filenames import JUDGMENTS
from gnt.io import read_jsonl
from gnt.templated_suite.entry_forms import adjective_class, gender_marked


@dataclass(frozen=True)
class Reading:
    """One output of a gender-marked templated row: its set, the adjective's class (``M``, ``F``, ``N``,
    ``unknown``; for Set-G, ``own``/``other`` instead of M/F against the stated gender) and the judge's label."""

    set: str
    form: str
    judge: str | None


def read_entries(path: str | Path) -> dict[str, Entry]:
    """The entries of a build's JSON-lines file by id (``eval/templated_test.jsonl`` and the like)."""
    return {str(r["id"]): Entry.from_record(r) for r in read_jsonl(path)}


def readings(results_dir: str | Path, entries: Mapping[str, Entry]) -> dict[str, dict[str, Reading]]:
    """Per model of a results folder, ``{lang|row id|cell: Reading}`` for its outputs of gender-marked templated
    entries among ``entries`` (the keys match :func:`gnt.report.significance.row_values`)."""
    from gnt.results.folder import model_names
    from gnt.results.model_folder import ModelFolder

    found: dict[str, dict[str, Reading]] = {}
    for name in model_names(results_dir):
        folder = ModelFolder(Path(results_dir), name)
        judged = ({str(j.get("key")): j.get("label") for j in folder.iter_lines(JUDGMENTS)}
                  if (folder.path / JUDGMENTS).is_file() else {})
        rows: dict[str, Reading] = {}
        for row in folder.generations():
            entry = entries.get(str(row["id"]))
            if entry is None or not gender_marked(entry):
                continue
            form = adjective_class(row.get("translation"), entry)
            if entry.set == "Set-G" and form in ("M", "F"):
                form = "own" if form == entry.gender else "other"
            rows[f"{row['lang']}|{row['id']}|{row['cell']}"] = Reading(entry.set, form, judged.get(row["key"]))
        found[name] = rows
    return found


RIGHT_FORM = {"Set-N": "N", "Set-G": "own"}
"""The form a right translation gives the adjective, per set."""


def right_form_values(rows: Mapping[str, Reading], set_name: str) -> dict[str, float]:
    """1.0 where an output of ``set_name`` gives the adjective the right form, 0.0 elsewhere (unknown included):
    per-row values for a paired bootstrap."""
    return {key: float(r.form == RIGHT_FORM[set_name]) for key, r in rows.items() if r.set == set_name}


def summary(rows: Mapping[str, Reading]) -> dict[str, Any]:
    """Counts of the adjective's forms per set, the right form's share, and where judge and classifier disagree:
    ``judge_neutral_gendered_adjective`` (the judge said NEUTRAL, the adjective is masculine or feminine) and
    ``judge_gendered_neutral_adjective`` (any gendered verdict, the adjective neutral: the other words may still
    gender the referent there), both on Set-N rows."""
    out: dict[str, Any] = {}
    for set_name, right in RIGHT_FORM.items():
        of_set = [r for r in rows.values() if r.set == set_name]
        forms = Counter(r.form for r in of_set)
        out[set_name] = {"rows": len(of_set), "forms": dict(sorted(forms.items())),
                         "right_form_share": forms[right] / len(of_set) if of_set else None}
    setn = [r for r in rows.values() if r.set == "Set-N"]
    out["Set-N"]["judge_neutral_gendered_adjective"] = sum(r.judge == "NEUTRAL" and r.form in ("M", "F") for r in setn)
    out["Set-N"]["judge_gendered_neutral_adjective"] = sum(r.judge not in (None, "NEUTRAL") and r.form == "N"
                                                            for r in setn)
    return out
