"""Leak-free splits: one English source is on one side of the split for every language.

Rows are grouped before splitting: rows sharing an English source (by content hash) or a Europarl id are one
group, and a templated group is everything built from one adjective (in all languages), so a held-out adjective
is never seen in training. A group's side comes from a hash of (seed, group key), which is stable when the data
grows: adding rows never moves an existing source to the other side.

A fourth side, ``align``, is empty unless a build asks for it: English sources kept out of SFT and the
off-policy preference rows so that on-policy alignment can sample the policy on sources it was not fitted to
(where it makes the label and translation faults it makes on new sentences).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gnt.data.entry import Entry

SPLITS = ("train", "dev", "test", "align")


def group_key(entry: Entry) -> str:
    """The unit of splitting an entry belongs to before Europarl-id merging."""
    if entry.origin == "templated" and entry.meta.get("adjective"):
        return f"tpl-adj:{entry.meta['adjective'].casefold()}"
    return f"src:{entry.source_key}"


def _group_entries(entries: list[Entry]) -> dict[str, list[Entry]]:
    """Union rows that share a source key or a Europarl id; name each group by its smallest key."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        parent.setdefault(key, key)
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for entry in entries:
        key = group_key(entry)
        find(key)
        if entry.europarl_id and entry.origin != "templated":
            union(key, f"ep:{entry.europarl_id}")
    groups: dict[str, list[Entry]] = defaultdict(list)
    for entry in entries:
        groups[find(group_key(entry))].append(entry)
    return groups


def side_of(group: str, seed: int, test_fraction: float, dev_fraction: float, align_fraction: float = 0.0) -> str:
    """Deterministic side of a group: a uniform number from its hash against the fractions (test first, then dev,
    then align, so a build that adds an align side keeps every test and dev source where it was)."""
    value = int(hashlib.sha256(f"{seed}|{group}".encode()).hexdigest()[:13], 16) / 16**13
    if value < test_fraction:
        return "test"
    if value < test_fraction + dev_fraction:
        return "dev"
    if value < test_fraction + dev_fraction + align_fraction:
        return "align"
    return "train"


@dataclass
class Split:
    """Entries per side, and the entries left out with the reason (e.g. a prompt demonstration's source)."""

    train: list[Entry] = field(default_factory=list)
    dev: list[Entry] = field(default_factory=list)
    test: list[Entry] = field(default_factory=list)
    align: list[Entry] = field(default_factory=list)
    excluded: list[tuple[Entry, str]] = field(default_factory=list)

    def side(self, name: str) -> list[Entry]:
        return getattr(self, name)


def split_entries(
    entries: Iterable[Entry],
    seed: int = 0,
    test_fraction: float = 0.2,
    dev_fraction: float = 0.1,
    excluded_sources: Mapping[str, str] | None = None,
    align_fraction: float = 0.0,
) -> Split:
    """Split entries by group; any group holding an excluded source key is left out entirely with its reason."""
    fractions = (test_fraction, dev_fraction, align_fraction)
    if not all(0 <= f < 1 for f in fractions) or sum(fractions) >= 1:
        raise ValueError("test_fraction, dev_fraction and align_fraction must be in [0, 1) and leave room for training")
    excluded_sources = excluded_sources or {}
    result = Split()
    for group, members in sorted(_group_entries(list(entries)).items()):
        reason = next((excluded_sources[e.source_key] for e in members if e.source_key in excluded_sources), None)
        if reason:
            result.excluded.extend((e, reason) for e in members)
            continue
        result.side(side_of(group, seed, test_fraction, dev_fraction, align_fraction)).extend(members)
    return result


def check_no_leak(split: Split) -> None:
    """Raise if any English source appears on two sides (a guard on the invariant, run on every build)."""
    seen: dict[str, str] = {}
    for name in SPLITS:
        for entry in split.side(name):
            other = seen.setdefault(entry.source_key, name)
            if other != name:
                raise AssertionError(f"source {entry.source!r} is in both {other} and {name}")
