"""Every item's reading, written by each run (``items.tsv.gz``), and which items moved between two runs.

A change of a classification rule or of a lexicon row moves items from one reading to another; the change is only
trustworthy when those items are read. So each run writes one line per item (system, segment, slot, template,
side, adjective, label, strategy, rule, reason, evidence and the text it was read from), and :func:`moved`
compares two such files item by item: how many items went from each (label, strategy) to each other one, and for
every transition some examples with both readings, to read.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from gnt.data.errors import DataError

ITEMS_FILE = "items.tsv.gz"
COLUMNS = ("system", "seg_id", "slot", "template", "variant", "adjective", "label", "strategy", "rule", "reason",
           "evidence", "text")
EXAMPLES = 5


def _cell(value: object) -> str:
    return "" if value is None else " ".join(str(value).split())


@contextlib.contextmanager
def items_writer(path: str | Path) -> Iterator[csv.writer]:
    """A TSV writer into ``path`` (gzip), renamed into place only when the block ends without an error."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed, \
                io.TextIOWrapper(packed, encoding="utf-8", newline="") as text:
            writer = csv.writer(text, delimiter="\t", quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
            writer.writerow(COLUMNS)
            yield writer
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_items(writer: csv.writer, items: Iterable[Mapping]) -> None:
    for it in items:
        writer.writerow([_cell(it.get(column)) for column in COLUMNS])


def read_items(path: str | Path) -> dict[tuple[str, str, str], dict[str, str]]:
    """The items of an ``items.tsv.gz`` by (system, segment, slot)."""
    path = Path(path)
    if path.is_dir():
        path = path / ITEMS_FILE
    if not path.is_file():
        raise DataError(f"no {ITEMS_FILE} (written by every run of the WMT24 suite)", path)
    with gzip.open(path, "rt", encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle, delimiter="\t")
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise DataError(f"expected the columns {', '.join(COLUMNS)}", path, 1)
        return {(row["system"], row["seg_id"], row["slot"]): row for row in reader}


def reading(row: Mapping[str, str]) -> str:
    """An item's reading as one word: ``M``, ``F``, ``N1``..``N5`` or ``unknown:<reason>``."""
    if row["label"] == "unknown":
        return f"unknown:{row['reason']}"
    if row["label"] == "N":
        return row["strategy"] or "N"
    return row["label"]


def moved(before: Mapping[tuple, Mapping[str, str]], after: Mapping[tuple, Mapping[str, str]],
          examples: int = EXAMPLES) -> dict:
    """Items whose reading changed: counts per transition (overall and per system) and examples of each.

    Items present in one run only are counted apart (a different suite sample or system list), never compared.
    """
    shared = sorted(set(before) & set(after))
    transitions: Counter = Counter()
    per_system: dict[str, Counter] = {}
    shown: dict[str, list[dict]] = {}
    rules: Counter = Counter()
    for key in shared:
        old, new = before[key], after[key]
        a, b = reading(old), reading(new)
        if a == b and old["rule"] == new["rule"]:
            continue
        if a == b:
            rules[f"{a}: {old['rule'] or '-'} -> {new['rule'] or '-'}"] += 1
            continue
        name = f"{a} -> {b}"
        transitions[name] += 1
        per_system.setdefault(key[0], Counter())[name] += 1
        if len(shown.setdefault(name, [])) < examples:
            shown[name].append({
                "system": key[0], "seg_id": key[1], "slot": int(key[2]), "template": new["template"],
                "adjective": new["adjective"], "text": new["text"] or old["text"],
                "before": {k: old[k] for k in ("label", "strategy", "rule", "reason", "evidence")},
                "after": {k: new[k] for k in ("label", "strategy", "rule", "reason", "evidence")},
            })
    return {
        "compared": len(shared), "only_before": len(set(before) - set(after)), "only_after": len(set(after) - set(before)),
        "moved": sum(transitions.values()),
        "transitions": dict(transitions.most_common()),
        "same_reading_other_rule": dict(rules.most_common()),
        "per_system": {system: dict(c.most_common()) for system, c in sorted(per_system.items())},
        "examples": shown,
    }


def format_moved(result: Mapping, limit: int = 40) -> str:
    """The comparison as text: the transitions by count, each with its examples."""
    lines = [f"{result['moved']} of {result['compared']} items moved"
             f" ({result['only_before']} only before, {result['only_after']} only after)"]
    for name, count in list(result["transitions"].items())[:limit]:
        lines.append(f"{count:7d}  {name}")
        for ex in result["examples"].get(name, []):
            before, after = ex["before"], ex["after"]
            lines.append(f"           {ex['system']} {ex['seg_id']}/{ex['slot']} {ex['adjective']}: {ex['text']!r}"
                         f"  [{before['rule'] or before['reason']} {before['evidence'] or ''!s} -> "
                         f"{after['rule'] or after['reason']} {after['evidence'] or ''!s}]")
    return "\n".join(lines)
