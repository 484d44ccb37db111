"""Report figures of the templated suite (PNG, matplotlib's Agg backend, so they render on headless machines).

- ``strategies_<style>.png``: for each language (columns) and variant (rows), one stacked bar per model with the
  shares of M, F, each neutral strategy N1..N5 and unknown, over *all* outputs (unknowns shown, not hidden), so a
  reader sees at once whether a checkpoint's neutral answers are new noun phrases (N3) or copied English (N4);
- ``deltas_<style>.png``: ΔN on omission inputs (I/you), ΔN on active inputs ("they") and ΔM over all inputs, per
  model in sweep order (base, then each run's checkpoints by step), one line per language with its bootstrap CI.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from gnt.filenames import METRICS
from gnt.io import read_json
from gnt.templated_suite.classify import STRATEGIES, UNKNOWN

SEGMENTS: tuple[str, ...] = ("M", "F", *STRATEGIES, UNKNOWN)
COLOURS = {
    "M": "#3b6fb6", "F": "#c8507a", "N1": "#1b7837", "N2": "#35978f", "N3": "#a6dba0", "N4": "#e0c341",
    "N5": "#9970ab", UNKNOWN: "#bdbdbd",
}
LANG_COLOURS = {"it": "#1f77b4", "es": "#d62728", "de": "#2ca02c", "el": "#9467bd"}
VARIANT_TITLES = {"determined": "determined", "ambiguous": "ambiguous"}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def short_name(name: str) -> str:
    """Axis label of a model: ``sft/checkpoint-40`` → ``sft/40``."""
    return name.replace("checkpoint-", "")


def _segment_shares(block: dict, variant: str) -> dict[str, float]:
    counts = block["counts"][variant]
    total = sum(counts.values())
    if not total:
        return dict.fromkeys(SEGMENTS, 0.0)
    strategies = block["strategies"][variant]
    shares = {"M": counts["M"] / total, "F": counts["F"] / total, UNKNOWN: counts[UNKNOWN] / total}
    shares.update({s: strategies.get(s, 0) / total for s in STRATEGIES})
    return shares


def plot_strategies(metrics_by_model: Sequence[tuple[str, dict]], style: str, path: Path) -> Path:
    """Stacked shares of M, F, N1..N5, unknown per model, language and variant."""
    plt = _pyplot()
    langs = sorted({lang for _, m in metrics_by_model for lang in m["styles"].get(style, {})})
    models = [name for name, m in metrics_by_model if style in m["styles"]]
    width = max(4.0, 0.55 * len(models) + 1.5)
    fig, axes = plt.subplots(2, len(langs), figsize=(width * len(langs), 7.5), squeeze=False, sharey=True)
    for col, lang in enumerate(langs):
        for row, variant in enumerate(VARIANT_TITLES):
            ax = axes[row][col]
            bottoms = [0.0] * len(models)
            for segment in SEGMENTS:
                heights = []
                for _name, metrics in metrics_by_model:
                    if style not in metrics["styles"]:
                        continue
                    block = metrics["styles"][style].get(lang, {}).get("subsets", {}).get("all")
                    heights.append(_segment_shares(block, variant)[segment] if block else 0.0)
                ax.bar(range(len(models)), heights, bottom=bottoms, color=COLOURS[segment], label=segment, width=0.8)
                bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
            ax.set_title(f"{lang} · {VARIANT_TITLES[variant]}", fontsize=11)
            ax.set_xticks(range(len(models)))
            ax.set_xticklabels([short_name(m) for m in models], rotation=45, ha="right", fontsize=9)
            ax.set_ylim(0, 1)
            if col == 0:
                ax.set_ylabel("share of outputs")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.suptitle(f"Focus-adjective classes and neutral strategies ({style} prompt)", y=0.99, fontsize=12)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.955), ncol=len(SEGMENTS), frameon=False, fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


PANELS: tuple[tuple[str, str, str], ...] = (
    ("omission", "N", "ΔN, omission (I / you)"),
    ("active", "N", "ΔN, active (they)"),
    ("all", "M", "ΔM, all inputs"),
)


def plot_deltas(metrics_by_model: Sequence[tuple[str, dict]], style: str, path: Path) -> Path:
    """ΔN (omission, active) and ΔM per model, one line per language with bootstrap CIs."""
    plt = _pyplot()
    present = [(name, m) for name, m in metrics_by_model if style in m["styles"]]
    langs = sorted({lang for _, m in present for lang in m["styles"][style]})
    fig, axes = plt.subplots(1, len(PANELS), figsize=(max(5.0, 0.7 * len(present) + 3) * len(PANELS) / 1.5, 4.6), squeeze=False)
    for ax, (subset, cls, title) in zip(axes[0], PANELS, strict=True):
        for k, lang in enumerate(langs):
            offset = (k - (len(langs) - 1) / 2) * 0.06
            xs, ys, lows, highs = [], [], [], []
            for i, (_, metrics) in enumerate(present):
                block = metrics["styles"][style].get(lang, {}).get("subsets", {}).get(subset)
                result = block["delta"][cls] if block else None
                if not result or result.get("value") is None:
                    continue
                xs.append(i + offset)
                ys.append(result["value"])
                lows.append(result["value"] - result["ci"][0])
                highs.append(result["ci"][1] - result["value"])
            if xs:
                ax.errorbar(xs, ys, yerr=[lows, highs], marker="o", capsize=3, label=lang, color=LANG_COLOURS.get(lang))
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_title(title, fontsize=11)
        ax.set_xticks(range(len(present)))
        ax.set_xticklabels([short_name(n) for n, _ in present], rotation=45, ha="right", fontsize=9)
        ax.set_ylim(-1.05, 1.05)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("ambiguous − determined (share)")
    if axes[0][-1].get_legend_handles_labels()[0]:
        axes[0][-1].legend(title="language", fontsize=9, loc="best")
    else:  # every item unknown (e.g. a random model): say so instead of drawing empty axes silently
        for ax in axes[0]:
            ax.text(0.5, 0.5, "no classified outputs", ha="center", va="center", transform=ax.transAxes, color="grey")
    fig.suptitle(f"Response to ambiguity per checkpoint ({style} prompt; 95% bootstrap CI)", fontsize=12)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def plot_all(out: str | Path, models: Sequence[dict], folder: str | Path) -> list[Path]:
    """Both figures for every prompt style found in the models' metrics (``models`` from the run's summary)."""
    out, folder = Path(out), Path(folder)
    metrics_by_model = [(m["name"], read_json(out / m["folder"] / METRICS)) for m in models]
    styles = list(dict.fromkeys(s for _, m in metrics_by_model for s in m["styles"]))
    paths = []
    for style in styles:
        paths.append(plot_strategies(metrics_by_model, style, folder / f"strategies_{style}.png"))
        paths.append(plot_deltas(metrics_by_model, style, folder / f"deltas_{style}.png"))
    return paths
