"""Errors about user-supplied data that say exactly where the problem is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class DataError(ValueError):
    """A problem in an input file, located as ``path:line:column: message``.

    ``line`` is 1-based as an editor shows it (the header is line 1 of a TSV); ``column`` is the column *name* for
    tabular files (more useful than an index) or a 1-based number for text files.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        path: str | Path | None = None,
        line: int | None = None,
        column: str | int | None = None,
    ) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        self.column = column
        super().__init__(self.location() + message)

    def location(self) -> str:
        parts = [p for p in (self.path, self.line, self.column) if p is not None]
        return ":".join(str(p) for p in parts) + (": " if parts else "")


class DataErrors(ValueError):
    """Several data errors found in one pass, so a user fixes a file once instead of once per error."""

    exit_code = 2

    def __init__(self, errors: list[DataError]) -> None:
        self.errors = errors
        shown = "\n".join(f"  {e}" for e in errors[:50])
        more = f"\n  ... and {len(errors) - 50} more" if len(errors) > 50 else ""
        super().__init__(f"{len(errors)} data error(s):\n{shown}{more}")


def json_object_lines(path: str | Path) -> Iterator[tuple[int, dict[str, Any] | DataError]]:
    """Each non-blank line of a JSON-lines file as ``(line number, object)``, or a located error for a bad line.

    A line that is not valid JSON, or is JSON but not an object, comes back as a :class:`DataError` instead of
    raising, so a validator can keep reading and report every bad line of a file in one pass (or raise the first
    one, where one is enough). Every reader of a user-edited JSON-lines file words these two failures the same way.
    """
    with open(path, encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                value = json.loads(text)
            except json.JSONDecodeError as exc:
                yield number, DataError(f"not valid JSON: {exc.msg} (character {exc.colno})", path, number)
                continue
            if not isinstance(value, dict):
                yield number, DataError(f"expected a JSON object, found {type(value).__name__}", path, number)
                continue
            yield number, value
