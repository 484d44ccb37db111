"""PNG figures of the attribution tables (matplotlib, Agg backend: no display needed).

- :func:`plot_parts`: per-part bars for S_L and S_T side by side, one bar per (set, outcome): the paper's Fig. 6
  (top-10 rate) and Fig. 7 (mean normalised score) analogues;
- :func:`plot_shots`: relevance of each demonstration's user and assistant turn, typed gendered/neutral;
- :func:`plot_contrastive`: which input parts push towards the neutral answer, and where on the target side the
  log-probability difference lives.

Every figure has a title naming the model and cell, labelled axes and a legend; empty inputs produce a figure
that says there was nothing to plot rather than no file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from gnt.attribution.spans import GROUP_ORDER, TARGETS  # noqa: E402

TARGET_TITLES = {"S_L": "label span (S_L)", "S_T": "translation span (S_T)"}
METRIC_TITLES = {
    "top10_rate": "share of rows with a token in the top-10",
    "mean_score": "mean normalised score",
    "relevance_share": "share of the row's total score",
}
PART_LABELS = {
    "system": "system",
    "preamble": "preamble",
    "guidelines": "guidelines",
    "shot_gendered_user": "gendered shots (user)",
    "shot_gendered_assistant": "gendered shots (assistant)",
    "shot_neutral_user": "neutral shots (user)",
    "shot_neutral_assistant": "neutral shots (assistant)",
    "source": "source",
    "label": "label",
}


def _empty(path: Path, title: str, message: str) -> Path:
    fig, ax = plt.subplots(figsize=(6, 2.5))
    ax.set_axis_off()
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _grouped_bars(ax, categories: Sequence[str], series: dict[str, list[float]], labels: Sequence[str]) -> None:
    n = max(1, len(series))
    width = 0.8 / n
    for index, (name, values) in enumerate(series.items()):
        xs = [c + (index - (n - 1) / 2) * width for c in range(len(categories))]
        ax.bar(xs, values, width=width, label=name)
    ax.set_xticks(range(len(categories)))
    ax.set_xticklabels(labels, fontsize=8, rotation=30, ha="right", rotation_mode="anchor")


def plot_parts(rows: Sequence[dict], path: str | Path, *, metric: str = "top10_rate", outcome_by: str = "all", title: str = "") -> Path:
    """Bars per part group for each target; one series per set (and outcome when ``outcome_by`` splits)."""
    path = Path(path)
    chosen = [r for r in rows if r["level"] == "group" and r["outcome_by"] == outcome_by and r["set"] != "all"]
    heading = f"{title} — {METRIC_TITLES.get(metric, metric)}" if title else METRIC_TITLES.get(metric, metric)
    if not chosen:
        return _empty(path, heading, f"no rows for outcome split {outcome_by!r}")
    series_keys = sorted({(r["set"], r["outcome"]) for r in chosen})
    fig, axes = plt.subplots(1, len(TARGETS), figsize=(6.5 * len(TARGETS), 4.4), sharey=True, squeeze=False)
    for ax, target in zip(axes[0], TARGETS, strict=True):
        # only the parts ranked for this target (the label is an input of S_T only, the source of S_L only)
        parts = [p for p in GROUP_ORDER if any(r["part"] == p and r["target"] == target for r in chosen)]
        ax.set_title(TARGET_TITLES[target])
        ax.set_xlabel("prompt part")
        if not parts:
            ax.text(0.5, 0.5, "no row has this span\n(e.g. every translation was cut or unreadable)",
                    ha="center", va="center", transform=ax.transAxes, fontsize=9)
            ax.set_xticks([])
            continue
        series: dict[str, list[float]] = {}
        for set_name, outcome in series_keys:
            name = set_name if outcome_by == "all" else f"{set_name} · {outcome}"
            values = []
            for part in parts:
                match = [r for r in chosen if r["target"] == target and r["part"] == part and r["set"] == set_name and r["outcome"] == outcome]
                values.append(match[0][metric] if match else 0.0)
            n = max((r["n"] for r in chosen if r["target"] == target and r["set"] == set_name and r["outcome"] == outcome), default=0)
            if n:
                series[f"{name} (n={n})"] = values
        _grouped_bars(ax, parts, series, [PART_LABELS.get(p, p) for p in parts])
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7, title="rows", title_fontsize=7)
    axes[0][0].set_ylabel(METRIC_TITLES.get(metric, metric))
    top = max([r[metric] for r in chosen] + [1e-6])
    axes[0][0].set_ylim(0, 1.45 * top)  # head room for the legends above the tallest bars (axes share y)
    if metric == "top10_rate":
        axes[0][0].set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    fig.suptitle(heading)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_shots(rows: Sequence[dict], path: str | Path, *, shot_types: dict[str, str] | None = None, title: str = "") -> Path:
    """Mean normalised score and top-10 rate of each shot's user and assistant turn, per target (all rows).

    ``shot_types`` maps a shot part (``shot3_user``) to ``gendered``/``neutral`` for the axis labels.
    """
    path = Path(path)
    chosen = [r for r in rows if r["level"] == "part" and r["set"] == "all" and r["outcome_by"] == "all" and r["part"].startswith("shot")]
    heading = f"{title} — relevance per demonstration" if title else "relevance per demonstration"
    if not chosen:
        return _empty(path, heading, "this cell has no demonstrations (0-shot)")

    def order(name: str) -> tuple[int, int]:
        number = int(name[4:].split("_")[0])
        return number, 0 if name.endswith("user") else 1

    parts = sorted({r["part"] for r in chosen}, key=order)
    types = shot_types or {}
    labels = []
    for part in parts:
        number, role = order(part)
        kind = {"gendered": "G", "neutral": "N"}.get(types.get(part, ""), "")
        labels.append(f"shot {number} {kind} {'user' if role == 0 else 'assistant'}")
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.2), squeeze=False)
    for ax, metric in zip(axes[0], ("mean_score", "top10_rate"), strict=True):
        if metric == "mean_score":
            ax.set_ylim(0, 1.3 * max([r["mean_score"] for r in chosen] + [1e-6]))
        series = {}
        for target in TARGETS:
            values = []
            for part in parts:
                match = [r for r in chosen if r["target"] == target and r["part"] == part]
                values.append(match[0][metric] if match else 0.0)
            series[TARGET_TITLES[target]] = values
        _grouped_bars(ax, parts, series, labels)
        ax.set_ylabel(METRIC_TITLES[metric])
        ax.set_xlabel("demonstration turn (G = gendered shot, N = neutral shot)")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    axes[0][1].set_ylim(0, 1.05)
    fig.suptitle(heading)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def plot_contrastive(input_rows: Sequence[dict], target_rows: Sequence[dict], path: str | Path, *, title: str = "") -> Path:
    """Left: mean signed contribution of each part group to d (positive: towards the neutral answer).
    Right: mean Δ log p by target component (label, translation, format; divergent vs shared tokens)."""
    path = Path(path)
    heading = f"{title} — contrastive: log p(Ref-N) − log p(Ref-G)" if title else "contrastive: log p(Ref-N) − log p(Ref-G)"
    groups = [r for r in input_rows if r["level"] == "group" and r["set"] == "all"]
    comps = [r for r in target_rows if r["set"] == "all"]
    if not groups or not comps:
        return _empty(path, heading, "no contrastive rows")
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5), squeeze=False)
    ax = axes[0][0]
    parts = [p for p in GROUP_ORDER if any(r["part"] == p for r in groups)]
    values = [next(r["mean_signed_share"] for r in groups if r["part"] == p) for p in parts]
    colors = ["tab:green" if v >= 0 else "tab:red" for v in values]
    ax.barh(range(len(parts)), values, color=colors)
    ax.set_yticks(range(len(parts)))
    ax.set_yticklabels([PART_LABELS.get(p, p).replace("\n", " ") for p in parts], fontsize=8)
    ax.invert_yaxis()
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("mean signed share of |e·∇d| (>0: favours the neutral answer)")
    n = max(r["n"] for r in groups)
    ax.set_title(f"input parts (n={n} row×reference pairs)")
    ax.grid(axis="x", alpha=0.3)
    from matplotlib.patches import Patch

    ax.legend(handles=[Patch(color="tab:green", label="towards Ref-N"), Patch(color="tab:red", label="towards Ref-G")], fontsize=8)
    ax = axes[0][1]
    order = ["d", "label", "translation", "output_format", "divergent", "shared"]
    names = {"d": "d (total)", "label": "label tokens", "translation": "translation tokens", "output_format": "format tokens",
             "divergent": "divergent spans", "shared": "shared tokens"}
    present = [c for c in order if any(r["component"] == c for r in comps)]
    means = [next(r["mean_delta"] for r in comps if r["component"] == c) for c in present]
    sems = [next(r["sem"] for r in comps if r["component"] == c) for c in present]
    bar_colors = ["tab:blue" if c == "d" else ("tab:orange" if c in ("divergent", "shared") else "tab:gray") for c in present]
    ax.bar(range(len(present)), means, yerr=sems, color=bar_colors, capsize=3)
    ax.set_xticks(range(len(present)))
    ax.set_xticklabels([names[c] for c in present], fontsize=8, rotation=15)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel("mean Δ log p, neutral − gendered (nats, ± s.e.m.)")
    ax.set_xlabel("label + translation + format = d;  divergent + shared = d")
    ax.set_title("target side: where d lives")
    ax.grid(axis="y", alpha=0.3)
    fig.suptitle(heading)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path
