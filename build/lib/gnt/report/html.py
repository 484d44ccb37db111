"""Render a report :class:`~gnt.report.document.Document` as one self-contained HTML file (``report.html``).

Every PNG is embedded as a base64 ``data:`` URI, so the file can be mailed, attached to an issue or uploaded to
W&B and still show its figures. All text is HTML-escaped (model outputs are untrusted text); collapsible parts use
``<details>``; tables get a ``data-name`` attribute so tests can find them.
"""

from __future__ import annotations

import base64
from html import escape
from pathlib import Path

from gnt.report.blocks import Bullets, Details, Document, Heading, Image, Para, Pre, Table

STYLE = """
body { font-family: system-ui, -apple-system, Segoe UI, sans-serif; margin: 2rem auto; max-width: 1400px;
       padding: 0 1rem; color: #222; line-height: 1.45; }
table { border-collapse: collapse; margin: 0.5rem 0 1.2rem; font-size: 0.85rem; }
th, td { border: 1px solid #ccc; padding: 0.25rem 0.5rem; vertical-align: top; text-align: left; }
th { background: #f3f3f3; position: sticky; top: 0; }
tr:nth-child(even) td { background: #fafafa; }
td { max-width: 28rem; overflow-wrap: anywhere; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.3rem 0; }
figure { margin: 0.5rem 0 1.5rem; }
figcaption, caption { font-style: italic; color: #555; font-size: 0.85rem; caption-side: top; text-align: left; }
.note { background: #eef5ff; border-left: 4px solid #4a90d9; padding: 0.4rem 0.8rem; }
.warning { background: #fff4e5; border-left: 4px solid #e69500; padding: 0.4rem 0.8rem; }
details { margin: 0.4rem 0; }
summary { cursor: pointer; font-weight: 600; }
pre { background: #f6f8fa; padding: 0.6rem; overflow-x: auto; font-size: 0.8rem; }
""".strip()


def data_uri(path: Path) -> str:
    """A PNG as a ``data:image/png;base64,...`` URI."""
    return "data:image/png;base64," + base64.b64encode(Path(path).read_bytes()).decode("ascii")


def _inline(text: str) -> str:
    """Escape text, then turn Markdown-style `code` and **bold** into tags (the only inline markup we emit)."""
    out = []
    parts = escape(text).split("`")
    for index, part in enumerate(parts):
        if index % 2 == 1 and (len(parts) % 2 == 1 or index < len(parts) - 1):
            out.append(f"<code>{part}</code>")
        else:
            bold = part.split("**")
            out.append("".join(f"<strong>{b}</strong>" if i % 2 == 1 else b for i, b in enumerate(bold)))
    return "".join(out)


def render_blocks(blocks: list) -> list[str]:
    html: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            anchor = f' id="{escape(block.anchor)}"' if block.anchor else ""
            html.append(f"<h{block.level}{anchor}>{escape(block.text)}</h{block.level}>")
        elif isinstance(block, Para):
            cls = f' class="{block.kind}"' if block.kind != "text" else ""
            html.append(f"<p{cls}>{_inline(block.text)}</p>")
        elif isinstance(block, Table):
            name = f' data-name="{escape(block.name)}"' if block.name else ""
            html.append(f"<table{name}>")
            if block.caption:
                html.append(f"<caption>{escape(block.caption)}</caption>")
            html.append("<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in block.header) + "</tr></thead>")
            html.append("<tbody>")
            for row in block.rows:
                html.append("<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in row) + "</tr>")
            html.append("</tbody></table>")
        elif isinstance(block, Image):
            html.append("<figure>")
            html.append(f'<img src="{data_uri(block.path)}" alt="{escape(block.alt)}">')
            if block.caption:
                html.append(f"<figcaption>{escape(block.caption)}</figcaption>")
            html.append("</figure>")
        elif isinstance(block, Bullets):
            html.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in block.items) + "</ul>")
        elif isinstance(block, Pre):
            html.append(f"<pre>{escape(block.text)}</pre>")
        elif isinstance(block, Details):
            html.append(f"<details><summary>{escape(block.summary)}</summary>")
            html += render_blocks(block.blocks)
            html.append("</details>")
    return html


def render_html(document: Document) -> str:
    """The whole report as one HTML page with its figures embedded."""
    body = "\n".join(render_blocks(document.blocks))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{escape(document.title)}</title>\n<style>\n{STYLE}\n</style>\n</head>\n<body>\n"
        f"<h1>{escape(document.title)}</h1>\n{body}\n</body>\n</html>\n"
    )
