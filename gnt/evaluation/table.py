"""The metrics tables printed at the end of a sweep: one line per model.

The overall table shows the catalog's headline numbers (:func:`gnt.evaluation.catalog.headline`: extraction-error
rate, label accuracy on Set-G and Set-N, label macro-F1 with its 95% CI, ..., in %) and the leakage status; a
second table gives macro-F1 per language (two narrow tables stay readable in an 80-column terminal, one wide table
does not).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from gnt.evaluation.catalog import headline, headline_entries

Models = Sequence[tuple[str, Mapping[str, Any]]]
"""(name, metrics) pairs in display order, the metrics as a reader of the model folder composes them."""


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _with_ci(value: float | None, ci: Sequence[float] | None) -> str:
    if value is None:
        return "–"
    if not ci:
        return _pct(value)
    return f"{100 * value:.1f} [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]"


def overall_table(models: Models) -> Table:
    """One row per model: ``n``, each headline number of the catalog, the leakage status."""
    table = Table(title="Label metrics, overall (%)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("model", style="bold", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    entries = [entry for _, entry in headline_entries()]
    for entry in entries:
        table.add_column(entry.title, justify="right", no_wrap=True)
    table.add_column("leakage", no_wrap=True)
    for name, metrics in models:
        numbers = headline(metrics)
        leak = (metrics.get("leakage") or {}).get("status", "")
        table.add_row(
            name, str(numbers["n"]),
            *(_with_ci(numbers[e.key], numbers.get(f"{e.key}_ci")) if e.ci else _pct(numbers[e.key]) for e in entries),
            "[bold red]LEAK[/]" if leak == "leak" else {"not_applicable": "–"}.get(leak, leak),
        )
    return table


def language_table(models: Models) -> Table:
    langs = sorted({lang for _, m in models for lang in m["languages"]})
    table = Table(title="Label macro-F1 by language (%)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("model", style="bold", no_wrap=True)
    for lang in langs:
        table.add_column(lang, justify="right", no_wrap=True)
    for name, metrics in models:
        values = [metrics["languages"].get(lang, {}).get("label_macro_f1", {}).get("value") for lang in langs]
        table.add_row(name, *map(_pct, values))
    return table


def print_metrics_table(models: Models, console: Console | None = None) -> None:
    console = console or Console()
    console.print(overall_table(models))
    console.print(language_table(models))
