"""The binary gender stereotype of the suite's character descriptors and manner adverbs (``data/wmt24/stereotypes.tsv``).

The suite carries its stereotypes in two places: the adjective that describes an occupation character ("the suave
developer", "the perky maid") and the adverb of template 7 ("I said suavely"). The file says, for each of those
English words, whether it is masculine- or feminine-stereotyped. The suite is built so that every occupation
segment pairs one descriptor of each stereotype (and every adjective of template 7 appears once without an adverb,
three times with a masculine- and three times with a feminine-stereotyped one, which the summary's per-template
counts show): :func:`check_design` verifies the words and the pairing on the folder being scored, so a wrong or
missing row is caught, not absorbed.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path

from gnt.data.errors import DataError
from gnt.paths import DATA_DIR
from gnt.templated_suite.wmt24.reader import Segment

STEREOTYPES_FILE = DATA_DIR / "wmt24" / "stereotypes.tsv"
KINDS = ("descriptor", "adverb")
NO_ADVERB = "none"


def load_stereotypes(path: str | Path = STEREOTYPES_FILE) -> dict[str, dict[str, str]]:
    """``{kind: {english word: "M" | "F"}}`` from a TSV with header ``en kind stereotype``; bad rows are located."""
    path = Path(path)
    if not path.is_file():
        raise DataError("stereotype file not found", path)
    out: dict[str, dict[str, str]] = {kind: {} for kind in KINDS}
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        if reader.fieldnames != ["en", "kind", "stereotype"]:
            raise DataError(f"expected the header en, kind, stereotype; found {reader.fieldnames}", path, 1)
        for number, row in enumerate(reader, start=2):
            if row["kind"] not in KINDS:
                raise DataError(f"kind must be one of {KINDS}, found {row['kind']!r}", path, number, "kind")
            if row["stereotype"] not in ("M", "F"):
                raise DataError(f"stereotype must be M or F, found {row['stereotype']!r}", path, number, "stereotype")
            word = row["en"].strip().casefold()
            if word in out[row["kind"]]:
                raise DataError(f"{row['kind']} {word!r} given twice", path, number, "en")
            out[row["kind"]][word] = row["stereotype"]
    return out


def adverb_stereotype(segment: Segment, stereotypes: dict[str, dict[str, str]]) -> str | None:
    """``none``, ``M`` or ``F`` for a template-7 segment; None for any other segment."""
    if segment.family != "adverb":
        return None
    if not segment.adverb:
        return NO_ADVERB
    return stereotypes["adverb"].get(segment.adverb.casefold())


def check_design(segments: Sequence[Segment], stereotypes: dict[str, dict[str, str]], path: str | Path = STEREOTYPES_FILE,
                 ) -> None:
    """Raise :class:`DataError` when a descriptor or adverb of the suite has no stereotype, or an occupation
    segment's two descriptors have the same one."""
    words = {kind: set() for kind in KINDS}
    for seg in segments:
        words["descriptor"].update(c.descriptor.casefold() for c in seg.characters if c.descriptor)
        if seg.adverb:
            words["adverb"].add(seg.adverb.casefold())
    for kind in KINDS:
        missing = sorted(words[kind] - set(stereotypes[kind]))
        if missing:
            raise DataError(f"{len(missing)} {kind}(s) of the suite without a stereotype: {', '.join(missing[:20])}", path)
    for seg in segments:
        descriptors = [c.descriptor.casefold() for c in seg.characters if c.descriptor]
        if len(descriptors) == 2 and {stereotypes["descriptor"][d] for d in descriptors} != {"M", "F"}:
            raise DataError(f"segment {seg.seg_id} pairs two descriptors of one stereotype ({', '.join(descriptors)})",
                            path)
