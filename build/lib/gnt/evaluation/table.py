"""The metrics tables printed at the end of a sweep: one line per model.

The overall table shows the extraction-error rate, label accuracy on Set-G and Set-N, label macro-F1 with its 95%
CI (all in %) and the leakage status; a second table gives macro-F1 per language (two narrow tables stay readable
in an 80-column terminal, one wide table does not).
"""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def _with_ci(stat: dict) -> str:
    if stat.get("value") is None:
        return "–"
    low, high = stat["ci"]
    return f"{100 * stat['value']:.1f} [{100 * low:.1f}, {100 * high:.1f}]"


def overall_table(models: Sequence[tuple[str, dict]]) -> Table:
    """``models``: (name, metrics.json content) pairs, in display order."""
    table = Table(title="Label metrics, overall (%)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("model", style="bold", no_wrap=True)
    table.add_column("n", justify="right", no_wrap=True)
    table.add_column("errors", justify="right", no_wrap=True)
    table.add_column("acc G", justify="right", no_wrap=True)
    table.add_column("acc N", justify="right", no_wrap=True)
    table.add_column("macro-F1 [95% CI]", justify="right", no_wrap=True)
    table.add_column("leakage", no_wrap=True)
    for name, metrics in models:
        overall = metrics["overall"]
        leak = (metrics.get("leakage") or {}).get("status", "")
        table.add_row(
            name,
            str(overall["n"]),
            _pct(overall["extraction_errors"]["rate"]["value"]),
            _pct(overall["label_accuracy"]["Set-G"]["value"]),
            _pct(overall["label_accuracy"]["Set-N"]["value"]),
            _with_ci(overall["label_macro_f1"]),
            "[bold red]LEAK[/]" if leak == "leak" else {"not_applicable": "–"}.get(leak, leak),
        )
    return table


def language_table(models: Sequence[tuple[str, dict]]) -> Table:
    langs = sorted({lang for _, m in models for lang in m["languages"]})
    table = Table(title="Label macro-F1 by language (%)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("model", style="bold", no_wrap=True)
    for lang in langs:
        table.add_column(lang, justify="right", no_wrap=True)
    for name, metrics in models:
        values = [metrics["languages"].get(lang, {}).get("label_macro_f1", {}).get("value") for lang in langs]
        table.add_row(name, *map(_pct, values))
    return table


def print_metrics_table(models: Sequence[tuple[str, dict]], console: Console | None = None) -> None:
    console = console or Console()
    console.print(overall_table(models))
    console.print(language_table(models))
