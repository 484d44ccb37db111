"""The one check every bad-input and fault test makes of a command's stderr."""

from __future__ import annotations


def one_error_line(err: str) -> str:
    """The last line of stderr, checked to be an ``error:`` line with no traceback before it."""
    assert "Traceback" not in err, err
    lines = err.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), err
    return lines[-1]
