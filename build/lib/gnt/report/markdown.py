"""Render a report :class:`~gnt.report.document.Document` as GitHub-flavoured Markdown (``report.md``).

Images are linked by their path relative to the report (the PNGs sit in ``figures/`` beside it), so the Markdown
renders on GitHub, in an editor preview, or in W&B's file viewer. Table cells escape ``|`` and turn newlines into
``<br>`` so a model output can never break a table row; collapsible parts use ``<details>``, which GitHub renders.
"""

from __future__ import annotations

import os
from pathlib import Path

from gnt.report.blocks import Bullets, Details, Document, Heading, Image, Para, Pre, Table

NOTE_PREFIX = {"text": "", "note": "> ", "warning": "> **⚠** "}


MARKDOWN_ESCAPES = {"\\": "\\\\", "|": "\\|", "*": "\\*", "_": "\\_", "`": "\\`", "<": "&lt;", ">": "&gt;",
                    "&": "&amp;", "\r": "", "\n": "<br>"}


def cell_text(text: str) -> str:
    """Escape a value for a Markdown table cell: model outputs such as ``<it> **NEUTRAL** [...]`` must show
    literally (not as an HTML tag and bold text) and a ``|`` or newline must not break the row."""
    return "".join(MARKDOWN_ESCAPES.get(ch, ch) for ch in str(text))


def unescape_cell(text: str) -> str:
    """Inverse of :func:`cell_text` (for readers of the tables, e.g. tests)."""
    out, index = [], 0
    text = text.replace("<br>", "\n").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    while index < len(text):
        if text[index] == "\\" and index + 1 < len(text):
            out.append(text[index + 1])
            index += 2
        else:
            out.append(text[index])
            index += 1
    return "".join(out)


def _rel(path: Path, out_dir: Path) -> str:
    return Path(os.path.relpath(path, out_dir)).as_posix()


def render_blocks(blocks: list, out_dir: Path) -> list[str]:
    lines: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            lines += ["#" * block.level + " " + block.text, ""]
        elif isinstance(block, Para):
            lines += [NOTE_PREFIX[block.kind] + block.text.replace("\n", " "), ""]
        elif isinstance(block, Table):
            if block.caption:
                lines += [f"*{block.caption}*", ""]
            lines.append("| " + " | ".join(cell_text(h) for h in block.header) + " |")
            lines.append("|" + "|".join("---" for _ in block.header) + "|")
            lines += ["| " + " | ".join(cell_text(c) for c in row) + " |" for row in block.rows]
            lines.append("")
        elif isinstance(block, Image):
            lines += [f"![{block.alt}]({_rel(block.path, out_dir)})", ""]
            if block.caption:
                lines += [f"*{block.caption}*", ""]
        elif isinstance(block, Bullets):
            lines += [f"- {item}" for item in block.items] + [""]
        elif isinstance(block, Pre):
            lines += ["```json", block.text, "```", ""]
        elif isinstance(block, Details):
            lines += ["<details>", f"<summary>{block.summary}</summary>", ""]
            lines += render_blocks(block.blocks, out_dir)
            lines += ["</details>", ""]
    return lines


def render_markdown(document: Document) -> str:
    """The whole report as Markdown text."""
    return "\n".join([f"# {document.title}", "", *render_blocks(document.blocks, document.out_dir)]).rstrip() + "\n"
