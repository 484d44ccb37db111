"""The templated suite file: one JSON line per input with the lexicon forms a later step classifies a translation
against (written by the data build, read by the templated-suite step).
"""


from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from gnt.data.errors import DataError, json_object_lines
from gnt.data.templated.adjectives import VARIANTS
from gnt.data.templated.pairs import TemplatedPair

SUITE_FIELDS = (
    "pair_id",
    "lang",
    "variant",
    "template_id",
    "kind",
    "stereotype_cue",
    "cue_stereotype",
    "adjective",
    "adjective_stereotype",
    "source",
    "expected_gender",
    "M",
    "F",
    "N",
    "N_strategy",
    "ref_gendered",
    "ref_neutral",
)


def suite_records(pairs: Iterable[TemplatedPair]) -> list[dict]:
    """The evaluation-suite records: one per (pair, variant), determined first.

    ``expected_gender`` is F/M for a determined input and None for an ambiguous one; ``M``/``F``/``N``/``N_strategy``
    are the lexicon forms a classifier looks for in a model's translation. ``ref_gendered`` is the gendered target
    (determined) or the masculine default (ambiguous); ``ref_neutral`` the neutral target.
    """
    records: list[dict] = []
    for pair in pairs:
        common = {
            "pair_id": pair.pair_id,
            "lang": pair.lang,
            "template_id": pair.template_id,
            "kind": pair.kind,
            "stereotype_cue": pair.stereotype_cue,
            "cue_stereotype": pair.cue_stereotype,
            "adjective": pair.adjective,
            "adjective_stereotype": pair.adjective_stereotype,
            "M": pair.form_m,
            "F": pair.form_f,
            "N": pair.form_n,
            "N_strategy": pair.n_strategy,
        }
        for variant in VARIANTS:
            det = variant == "determined"
            record = {
                **common,
                "variant": variant,
                "source": pair.determined_source if det else pair.ambiguous_source,
                "expected_gender": pair.gender if det else None,
                "ref_gendered": pair.determined_target if det else pair.ambiguous_masculine_target,
                "ref_neutral": pair.determined_neutral_target if det else pair.ambiguous_neutral_target,
            }
            records.append({key: record[key] for key in SUITE_FIELDS})
    return records


def write_suite(pairs: Iterable[TemplatedPair], path: str | Path) -> Path:
    """Write the evaluation suite as JSONL (UTF-8, one record per line, see :func:`suite_records`); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for record in suite_records(pairs):
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def read_suite(path: str | Path) -> list[dict]:
    """Read a suite file back, checking that every line is a JSON object with all :data:`SUITE_FIELDS`."""
    path = Path(path)
    records: list[dict] = []
    for number, record in json_object_lines(path):
        if isinstance(record, DataError):
            raise record
        missing = [key for key in SUITE_FIELDS if key not in record]
        if missing:
            raise DataError(f"missing field(s) {missing}", path, number)
        if record["variant"] not in VARIANTS:
            raise DataError(f"variant must be one of {VARIANTS}", path, number, "variant")
        records.append(record)
    return records


def pair_to_dict(pair: TemplatedPair) -> dict:
    """A JSON-ready dict of a pair (for manifests and debugging)."""
    return asdict(pair)
