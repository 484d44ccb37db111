"""Render a report :class:`~gnt.report.document.Document` as GitHub-flavoured Markdown (``report.md``).

Images are linked by their path relative to the report (the PNGs sit in ``figures/`` beside it), so the Markdown
renders on GitHub, in an editor preview, or in W&B's file viewer. Table cells escape ``|`` and turn newlines into
``<br>`` so a model output can never break a table row; collapsible parts use ``<details>``, which GitHub renders.

Model outputs, sources, server error texts and folder names are untrusted text: whatever they hold is shown, never
rendered. Every text is escaped so that no link, image or raw HTML of theirs is live (``[x](javascript:...)``, a
remote image that reports who opened the report, ``<img onerror=...>``): ``](``, angle brackets and ``&`` are
escaped, and so are the ``://`` and ``www.`` that GitHub would turn into links by themselves. Table cells and
headings (the H1 included) show their text literally; paragraphs and lists keep the report's own ``code`` and
**bold** markup and escape the rest.
"""

from __future__ import annotations

import html
import os
import re
from pathlib import Path

from gnt.report.blocks import Bullets, Details, Document, Heading, Image, Para, Pre, Table

NOTE_PREFIX = {"text": "", "note": "> ", "warning": "> **⚠** "}


MARKDOWN_ESCAPES = {"\\": "\\\\", "|": "\\|", "*": "\\*", "_": "\\_", "`": "\\`", "<": "&lt;", ">": "&gt;",
                    "&": "&amp;", "\r": "", "\n": "<br>"}
INLINE_ESCAPES = {"\\": "\\\\", "<": "&lt;", ">": "&gt;", "&": "&amp;", "|": "\\|", "\r": "", "\n": " "}
"""Outside code spans of a paragraph: what could open an HTML tag or break the line (``*``, ``_`` and backticks
stay: they are the report's own markup)."""
_AUTOLINK = re.compile(r"(?i)\b(https?|ftp|mailto|www)(://|:|\.)")


def _no_autolink(text: str) -> str:
    """Link syntax made inert: ``](`` (a link or an image needs those two together; a reference definition needs a
    line of its own, which no escaped text gets) becomes ``]\\(``, and ``http://``, ``www.`` and the like get their
    punctuation escaped, so that GitHub does not link them by itself. Shown alike, never followed."""
    return _AUTOLINK.sub(lambda m: f"{m.group(1)}\\{m.group(2)}", text.replace("](", "]\\("))


def cell_text(text: str) -> str:
    """Escape a value for a Markdown table cell: model outputs such as ``<it> **NEUTRAL** [...]`` must show
    literally (not as an HTML tag, bold text or a link) and a ``|`` or newline must not break the row."""
    return _no_autolink("".join(MARKDOWN_ESCAPES.get(ch, ch) for ch in str(text)))


def heading_text(text: str) -> str:
    """A heading shown literally on one line (the HTML report shows headings unformatted too)."""
    return cell_text(" ".join(str(text).split()))


def inline_text(text: str) -> str:
    """A paragraph's text: its ``code`` spans kept as they are, everything else escaped but ``*``/``_`` markup."""
    parts = str(text).split("`")
    out = []
    for index, part in enumerate(parts):
        in_code = index % 2 == 1 and index < len(parts) - 1
        out.append(part if in_code else _no_autolink("".join(INLINE_ESCAPES.get(ch, ch) for ch in part)))
    return "`".join(out)


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
            lines += ["#" * block.level + " " + heading_text(block.text), ""]
        elif isinstance(block, Para):
            lines += [NOTE_PREFIX[block.kind] + inline_text(block.text), ""]
        elif isinstance(block, Table):
            if block.caption:
                lines += [f"*{cell_text(block.caption)}*", ""]
            lines.append("| " + " | ".join(cell_text(h) for h in block.header) + " |")
            lines.append("|" + "|".join("---" for _ in block.header) + "|")
            lines += ["| " + " | ".join(cell_text(c) for c in row) + " |" for row in block.rows]
            lines.append("")
        elif isinstance(block, Image):
            lines += [f"![{cell_text(block.alt)}]({_rel(block.path, out_dir)})", ""]
            if block.caption:
                lines += [f"*{cell_text(block.caption)}*", ""]
        elif isinstance(block, Bullets):
            lines += [f"- {inline_text(item)}" for item in block.items] + [""]
        elif isinstance(block, Pre):
            lines += ["```json", block.text, "```", ""]
        elif isinstance(block, Details):
            lines += ["<details>", f"<summary>{html.escape(' '.join(block.summary.split()))}</summary>", ""]
            lines += render_blocks(block.blocks, out_dir)
            lines += ["</details>", ""]
    return lines


def render_markdown(document: Document) -> str:
    """The whole report as Markdown text."""
    return "\n".join([f"# {heading_text(document.title)}", "", *render_blocks(document.blocks, document.out_dir)]
                     ).rstrip() + "\n"
