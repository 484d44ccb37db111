"""Where a scored translation comes from: a WMT24 system's output file, a user's TSV, or one of our models.

* WMT24 systems: ``txt-ts/system-outputs/en-<lang>/<system>.txt``, aligned line by line with the sources; a
  system that left every suite line empty (some WMT24 participants skipped the test suites) is reported, not scored;
* ``--outputs FILE``: ``seg_id<TAB>translation`` per line (``seg_id`` the suite's NNNN or its full doc id), any
  other system's translations;
* our models: translated by :class:`gnt.templated_suite.wmt24.run.Wmt24Task` through the evaluation driver.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gnt.data.errors import DataError
from gnt.templated_suite.wmt24.reader import SUITE_MARK, Suite, seg_key


@dataclass
class Translations:
    """One system's translations by segment key, and what it is (``wmt24``, ``file`` or ``model``)."""

    system: str
    kind: str
    by_seg: dict[str, str]
    source: str
    model: dict | None = None
    notes: list[str] = field(default_factory=list)


def system_folder(root: str | Path, lang: str) -> Path:
    return Path(root) / "system-outputs" / f"en-{lang}"


def available_systems(root: str | Path, lang: str) -> list[str]:
    return sorted(p.stem for p in system_folder(root, lang).glob("*.txt"))


def read_wmt24_system(suite: Suite, system: str) -> Translations:
    """The suite lines of one WMT24 system's output file (raises DataError when it is missing or misaligned)."""
    path = system_folder(suite.root, suite.lang) / f"{system}.txt"
    if not path.is_file():
        have = ", ".join(available_systems(suite.root, suite.lang)) or "none"
        raise DataError(f"no output file for system {system!r} (systems: {have})", path)
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    last = max(suite.line_indices) if suite.line_indices else -1
    if len(lines) <= last:
        raise DataError(f"{len(lines)} lines, but the suite's last segment is on line {last + 1}: not aligned", path)
    by_seg = {seg.seg_id: lines[seg.line - 1] for seg in suite.segments}
    return Translations(system, "wmt24", by_seg, str(path))


def read_outputs_file(path: str | Path, known: set[str]) -> dict[str, str]:
    """``seg_id<TAB>translation`` lines; every problem is reported as ``file:line:column`` at once."""
    from gnt.data.errors import DataErrors

    path = Path(path)
    if not path.is_file():
        raise DataError("outputs file not found", path)
    out: dict[str, str] = {}
    errors: list[DataError] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        if "\t" not in line:
            errors.append(DataError("expected seg_id<TAB>translation", path, number, 1))
            continue
        raw_id, translation = line.split("\t", 1)
        key = seg_key(raw_id) if SUITE_MARK in raw_id else raw_id.strip()
        if key not in known:
            errors.append(DataError(f"unknown segment id {raw_id!r}", path, number, 1))
        elif key in out:
            errors.append(DataError(f"segment {raw_id!r} given twice", path, number, 1))
        else:
            out[key] = translation
    if errors:
        raise errors[0] if len(errors) == 1 else DataErrors(errors)
    if not out:
        raise DataError("no translations", path)
    return out
