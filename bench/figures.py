"""The figure check: every number README.md and docs/ quote from a benchmark record equals that record's value.

How a figure is cited (docs/benchmarks.md#citing-a-figure says it for writers): the number is the text of a Markdown
reference link, and the link's definition names the record and the value's place in it,

    label balanced accuracy [78.8 [72.5, 84.7]][q-final-bal] ...

    [q-final-bal]: bench/results/quality_cpu.json "/figures/models/dpo~1checkpoint-10/label_balanced_accuracy ×100"

- the target is the record's path relative to the page (so the rendered number links to its record);
- the title is a JSON Pointer (RFC 6901: keys separated by ``/``, a ``/`` inside a key written ``~1``) into the
  record, optionally followed by ``×N``, the factor the page shows the value with (``×100`` for a percentage);
- a pointer to a number is quoted as one number; to a ``{"value", "ci"}`` statistic as ``value`` or
  ``value [low, high]``; to a list as its numbers in order. Other text in the link (``%``, ``s``) is ignored.

A quoted number matches when the record's value times the factor lies within half a unit of the number's last
shown digit (908 for 907.5 s, 80.4 for 0.804348), so the rounding the page shows is the rounding checked. A record
must say it was written from a clean tree (``environment.git.dirty`` false, as bench/record.py stores it): a figure
from uncommitted code names no code that produced it. Every ``bench/results/*.json`` a page mentions in its text
must exist. Run ``python bench/figures.py`` for the list of cited figures and their state; the test suite runs the
same check (tests/test_figures.py).
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RECORDS = "bench/results/"

_DEFINITION = re.compile(r'^\s{0,3}\[([^\]]+)\]:\s+(\S+)\s+"([^"]*)"\s*$')
_USE = re.compile(r"\[((?:[^\[\]]|\[[^\[\]]*\])+)\]\[([^\]]+)\]")
_NUMBER = re.compile(r"[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_FACTOR = re.compile(r"^(\S+)(?:\s+×\s*(\d+(?:\.\d+)?))?$")
_MENTION = re.compile(r"bench/results/[\w.\-]+\.json")


@dataclass
class Reference:
    """A reference definition that cites a record."""

    name: str
    record: Path
    pointer: str
    factor: float
    line: int


@dataclass
class Problem:
    """What is wrong with one place of one page."""

    page: Path
    line: int
    kind: str  # wrong | unreadable | dirty | undefined | unused | missing
    message: str
    record: Path | None = None

    def __str__(self) -> str:
        return f"{self.page}:{self.line}: {self.kind}: {self.message}"


@dataclass
class Figure:
    """One quoted figure, its record's values and whether they agree."""

    page: Path
    line: int
    text: str
    reference: Reference
    values: list[float] = field(default_factory=list)


def pages(root: Path = ROOT) -> list[Path]:
    """The pages whose figures are checked: README.md and docs/*.md."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the page outside fenced code blocks (a command in a code block is not a figure)."""
    lines, fenced = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            lines.append((number, line))
    return lines


def parse_number(text: str) -> float:
    return float(text.replace(",", "").replace("−", "-"))


def decimals(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


def resolve(record: Any, pointer: str) -> Any:
    """The value a JSON Pointer names (``KeyError`` naming the first step that is not there)."""
    if pointer == "":
        return record
    if not pointer.startswith("/"):
        raise KeyError(f"a JSON Pointer starts with '/': {pointer!r}")
    value = record
    for raw in pointer[1:].split("/"):
        step = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(value, list) and step.isdigit() and int(step) < len(value):
            value = value[int(step)]
        elif isinstance(value, dict) and step in value:
            value = value[step]
        else:
            raise KeyError(f"no {step!r} at {pointer!r}")
    return value


def quoted_values(value: Any) -> list[float]:
    """The numbers a page may quote for the value a pointer names, in the order it quotes them."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a figure")
    if isinstance(value, (int, float)):
        return [float(value)]
    if isinstance(value, dict) and isinstance(value.get("value"), (int, float)):
        return [float(value["value"]), *(float(x) for x in value.get("ci") or [])]
    if isinstance(value, list) and value and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in value):
        return [float(x) for x in value]
    raise TypeError(f"not a number, a statistic or a list of numbers: {json.dumps(value)[:80]}")


def matches(shown: str, value: float, factor: float) -> bool:
    """Whether ``shown`` is ``value × factor`` at the precision shown (half a unit of its last digit)."""
    scaled = value * factor
    return math.isfinite(scaled) and abs(scaled - parse_number(shown)) <= 0.5 * 10 ** -decimals(shown) + 1e-9


def tree_state(record: Any) -> bool | None:
    """``environment.git.dirty`` of a record: True, False, or None when the record does not say."""
    git = ((record or {}).get("environment") or {}).get("git") if isinstance(record, dict) else None
    dirty = git.get("dirty") if isinstance(git, dict) else None
    return dirty if isinstance(dirty, bool) else None


def references(page: Path, text: str) -> dict[str, Reference]:
    """The page's reference definitions that cite a record, by name (lower case, as Markdown matches them)."""
    found = {}
    for number, line in _prose_lines(text):
        match = _DEFINITION.match(line)
        if not match or RECORDS not in match.group(2) or not match.group(2).endswith(".json"):
            continue
        name, target, title = match.groups()
        factor = _FACTOR.match(title.strip())
        pointer, scale = (factor.group(1), float(factor.group(2) or 1)) if factor else (title.strip(), 1.0)
        found[name.lower()] = Reference(name, (page.parent / target).resolve(), pointer, scale, number)
    return found


def check_page(page: Path) -> tuple[list[Figure], list[Problem]]:
    """Every cited figure of a page and every problem found on it."""
    text = page.read_text(encoding="utf-8")
    refs = references(page, text)
    figures: list[Figure] = []
    problems: list[Problem] = []
    used: set[str] = set()
    records: dict[Path, Any] = {}
    for number, line in _prose_lines(text):
        if _DEFINITION.match(line):
            continue
        for mention in _MENTION.findall(_USE.sub("", line)):
            if not (_root_of(page) / mention).is_file():
                problems.append(Problem(page, number, "missing", f"{mention} does not exist"))
        for use in _USE.finditer(line):
            shown_text, name = use.group(1), use.group(2).lower()
            if name not in refs:
                if RECORDS in line or _NUMBER.search(shown_text):
                    problems.append(Problem(page, number, "undefined", f"[{shown_text}][{use.group(2)}]: no such "
                                                                        "reference definition on this page"))
                continue
            used.add(name)
            ref = refs[name]
            problems += _check_use(page, number, shown_text, ref, records, figures)
    for name, ref in refs.items():
        if name not in used:
            problems.append(Problem(page, ref.line, "unused", f"[{ref.name}] is defined but no figure cites it"))
    return figures, problems


def _root_of(page: Path) -> Path:
    """The checkout a page belongs to (the nearest folder above it holding bench/results): prose names records by
    their path from there."""
    return next((folder for folder in page.resolve().parents if (folder / RECORDS).is_dir()), ROOT)


def _load(ref: Reference, records: dict[Path, Any]) -> Any:
    if ref.record not in records:
        records[ref.record] = json.loads(ref.record.read_text(encoding="utf-8"))
    return records[ref.record]


def _check_use(page: Path, line: int, shown_text: str, ref: Reference, records: dict[Path, Any],
               figures: list[Figure]) -> list[Problem]:
    where = f"[{shown_text}][{ref.name}] ({_short(ref.record)} {ref.pointer})"
    try:
        record = _load(ref, records)
        values = quoted_values(resolve(record, ref.pointer))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [Problem(page, line, "unreadable", f"{where}: {exc}", ref.record)]
    figures.append(Figure(page, line, shown_text, ref, values))
    shown = _NUMBER.findall(shown_text)
    problems = []
    if not shown or len(shown) > len(values) or (len(values) == 3 and len(shown) == 2):
        problems.append(Problem(page, line, "wrong", f"{where}: quotes {len(shown)} number(s) for "
                                                     f"{_render(values, ref.factor)}", ref.record))
    else:
        wrong = [(s, v) for s, v in zip(shown, values, strict=False) if not matches(s, v, ref.factor)]
        if wrong:
            problems.append(Problem(page, line, "wrong", f"{where}: the record says {_render(values, ref.factor)}",
                                    ref.record))
    dirty = tree_state(record)
    if dirty is not False:
        state = "a modified tree (environment.git.dirty)" if dirty else "no tree state (environment.git.dirty)"
        problems.append(Problem(page, line, "dirty", f"{where}: the record was written from {state}", ref.record))
    return problems


def _short(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def _render(values: list[float], factor: float) -> str:
    return " ".join(f"{v * factor:.6g}" for v in values)


def check(paths: list[Path] | None = None) -> tuple[list[Figure], list[Problem]]:
    """Figures and problems of every page (README.md and docs/*.md by default)."""
    figures, problems = [], []
    for page in paths or pages():
        page_figures, page_problems = check_page(page)
        figures += page_figures
        problems += page_problems
    return figures, problems


def main(argv: list[str] | None = None) -> int:
    """``python bench/figures.py [PAGE ...]``: every cited figure with its record, then the problems; exit 1 when a
    figure is wrong, unreadable, undefined or unused, or a mentioned record is missing (a record from a modified
    tree is listed, not an error here: the test suite holds the list of known ones)."""
    args = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in args):
        print(__doc__)
        return 0
    figures, problems = check([Path(a).resolve() for a in args] or None)
    for figure in figures:
        print(f"{_short(figure.page)}:{figure.line}: {figure.text}  <-  {_short(figure.reference.record)} "
              f"{figure.reference.pointer}")
    errors = [p for p in problems if p.kind != "dirty"]
    for problem in errors:
        print(problem)
    dirty: dict[Path, set[str]] = {}
    for problem in problems:
        if problem.kind == "dirty" and problem.record is not None:
            dirty.setdefault(problem.record, set()).add(f"{_short(problem.page)}:{problem.line}")
    for record, places in sorted(dirty.items()):
        print(f"from a modified tree: {_short(record)}, cited at {len(places)} place(s): "
              f"{', '.join(sorted(places)[:3])}{' ...' if len(places) > 3 else ''}")
    print(f"{len(figures)} figure(s) cited; {len(errors)} problem(s); {len(dirty)} record(s) from a modified tree")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
