"""The building blocks of the report document: headings, paragraphs, tables, images, lists, details.

Renderer-neutral: :mod:`gnt.report.document` (and each section of its own, such as :mod:`gnt.report.wmt24`)
composes them, :mod:`gnt.report.markdown` and :mod:`gnt.report.html` render them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Heading:
    level: int
    text: str
    anchor: str | None = None


@dataclass
class Para:
    text: str
    kind: str = "text"  # text | note | warning


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    caption: str | None = None
    name: str | None = None  # machine name (tests and report_data.json find tables by it)


@dataclass
class Image:
    path: Path  # a PNG inside the report folder
    alt: str
    caption: str | None = None


@dataclass
class Bullets:
    items: list[str]


@dataclass
class Pre:
    text: str


@dataclass
class Details:
    summary: str
    blocks: list[Any] = field(default_factory=list)


Block = Heading | Para | Table | Image | Bullets | Pre | Details


@dataclass
class Document:
    title: str
    blocks: list[Block]
    out_dir: Path
    data: dict[str, Any] = field(default_factory=dict)  # machine-readable numbers behind the tables
