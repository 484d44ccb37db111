"""Errors about user-supplied data that say exactly where the problem is."""

from __future__ import annotations

from pathlib import Path


class DataError(ValueError):
    """A problem in an input file, located as ``path:line:column: message``.

    ``line`` is 1-based as an editor shows it (the header is line 1 of a TSV); ``column`` is the column *name* for
    tabular files (more useful than an index) or a 1-based number for text files.
    """

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

    def __init__(self, errors: list[DataError]) -> None:
        self.errors = errors
        shown = "\n".join(f"  {e}" for e in errors[:50])
        more = f"\n  ... and {len(errors) - 50} more" if len(errors) > 50 else ""
        super().__init__(f"{len(errors)} data error(s):\n{shown}{more}")
