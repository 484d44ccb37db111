"""The ranking figure: every scored system and our models on each table's headline statistic, with CIs.

Our models are drawn in a different colour so a reader finds at once where a checkpoint stands among the WMT24
systems; flagged systems (most of their outputs unusable) are drawn hollow. Rows are sorted by ΔN on omission
(Table 4, the suite's largest part), the same order in every panel.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from gnt.templated_suite.plots import _pyplot, short_name

OURS, THEIRS = "#d62728", "#4c72b0"
#: (path into a summary.json system entry, panel title).
PANELS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("tables", "omission", "delta", "N"), "ΔN, omission (Table 4)"),
    (("tables", "omission", "delta", "M"), "ΔM, omission (Table 4)"),
    (("tables", "active", "delta", "N"), "ΔN, they (Table 5)"),
    (("tables", "active", "delta", "M"), "ΔM, they (Table 5)"),
    (("tables", "strategies", "determined", "N"), "N_det (Table 6)"),
    (("stereotype", "contrasts", "masculine_vs_none", "M"), "ΔM, masc. adverb (Table 7)"),
    (("stereotype", "contrasts", "feminine_vs_none", "F"), "ΔF, fem. adverb (Table 7)"),
)


def _value(entry: Mapping, path: tuple[str, ...]) -> tuple[float | None, list[float] | None]:
    node: object = entry
    for key in path:
        node = node.get(key, {}) if isinstance(node, Mapping) else {}
    return (node.get("value"), node.get("ci")) if isinstance(node, Mapping) else (None, None)


def plot_ranking(entries: Sequence[tuple[str, str, Mapping]], lang: str, path: Path) -> Path:
    """``entries``: (system, kind, summary.json entry) with kind ``model`` for ours; writes one PNG."""
    plt = _pyplot()
    first = PANELS[0][0]
    order = sorted(entries, key=lambda e: (_value(e[2], first)[0] is None, _value(e[2], first)[0] or 0.0))
    height = max(3.5, 0.32 * len(order) + 1.5)
    fig, axes = plt.subplots(1, len(PANELS), figsize=(3.2 * len(PANELS), height), sharey=True, squeeze=False)
    for ax, (where, title) in zip(axes[0], PANELS, strict=True):
        for row, (_system, kind, entry) in enumerate(order):
            value, ci = _value(entry, where)
            if value is None:
                ax.text(0, row, "n/a", va="center", fontsize=8, color="grey")
                continue
            colour = OURS if kind == "model" else THEIRS
            xerr = [[value - ci[0]], [ci[1] - value]] if ci else None
            face = "white" if entry.get("flags") else colour
            ax.errorbar([value], [row], xerr=xerr, fmt="o", color=colour, markerfacecolor=face, capsize=2,
                        markersize=4)
        ax.axvline(0.0, color="black", linewidth=0.7)
        ax.set_title(title, fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(range(len(order)))
    axes[0][0].set_yticklabels([short_name(s) for s, _, _ in order], fontsize=8)
    for label, (_, kind, _) in zip(axes[0][0].get_yticklabels(), order, strict=True):
        label.set_color(OURS if kind == "model" else "black")
    fig.suptitle(f"WMT24 gender-resolution suite, en-{lang}: the paper's tables (95% bootstrap CI; ours in red, "
                 f"flagged systems hollow)", fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
