"""The ranking figure: every scored system and our models by ΔN and by N_amb, per ambiguity kind, with CIs.

Our models are drawn in a different colour so a reader finds at once where a checkpoint stands among the WMT24
systems. Rows are sorted by ΔN on omission (the suite's largest pool), the same order in every panel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from gnt.templated_suite.plots import _pyplot, short_name

OURS, THEIRS = "#d62728", "#4c72b0"
PANELS: tuple[tuple[str, str, str], ...] = (
    ("omission", "delta", "ΔN, omission (I / you)"),
    ("active", "delta", "ΔN, active (they)"),
    ("omission", "ambiguous", "N_amb, omission"),
    ("active", "ambiguous", "N_amb, active"),
)


def _value(metrics: Mapping, pool: str, what: str) -> tuple[float | None, list[float] | None]:
    block = metrics["pools"][pool]
    result = block["delta"]["N"] if what == "delta" else block["ambiguous"]["N"]
    return result.get("value"), result.get("ci")


def plot_ranking(entries: Sequence[tuple[str, str, Mapping]], lang: str, path: Path) -> Path:
    """``entries``: (system, kind, metrics) with kind ``model`` for ours; writes a PNG of four panels."""
    plt = _pyplot()
    order = sorted(entries, key=lambda e: (_value(e[2], "omission", "delta")[0] is None,
                                           _value(e[2], "omission", "delta")[0] or 0.0))
    height = max(3.5, 0.32 * len(order) + 1.5)
    fig, axes = plt.subplots(1, len(PANELS), figsize=(4.2 * len(PANELS), height), sharey=True, squeeze=False)
    for ax, (pool, what, title) in zip(axes[0], PANELS, strict=True):
        for row, (_system, kind, metrics) in enumerate(order):
            value, ci = _value(metrics, pool, what)
            if value is None:
                ax.text(0, row, "n/a", va="center", fontsize=8, color="grey")
                continue
            colour = OURS if kind == "model" else THEIRS
            xerr = [[value - ci[0]], [ci[1] - value]] if ci else None
            ax.errorbar([value], [row], xerr=xerr, fmt="o", color=colour, capsize=2, markersize=4)
        ax.axvline(0.0, color="black", linewidth=0.7)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(range(len(order)))
    axes[0][0].set_yticklabels([short_name(s) for s, _, _ in order], fontsize=8)
    for label, (_, kind, _) in zip(axes[0][0].get_yticklabels(), order, strict=True):
        label.set_color(OURS if kind == "model" else "black")
    fig.suptitle(f"WMT24 gender-resolution suite, en-{lang}: gender-neutral response (95% bootstrap CI; "
                 f"ours in red)", fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path

