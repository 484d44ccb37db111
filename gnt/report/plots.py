"""The report's figures as PNG (matplotlib, Agg backend: no display needed, safe on a headless training node).

- :func:`plot_decision` — the recognition decision: label balanced accuracy and macro-F1 per model and language,
  beside the best constant label's scores (a model that always answers one label scores 50% balanced accuracy).
- :func:`plot_label_vs_gnt` — the paper's Fig. 3: label accuracy vs GNT accuracy by set, per language and model.
  The gap between the two on Set-N is the finding the project exists to close (right label, gendered text).
- :func:`plot_coherence` — Fig. 4: label–translation coherence split by generated label.
- :func:`plot_setn_by_config` — Fig. 5: Set-N GNT accuracy per prompt configuration (G+S, G, S, None).
- :func:`plot_learning_curves` — each headline metric against the training step, one figure per stage.

Every figure has a title, labelled axes (percent axes fixed to 0–100 so figures compare), a legend placed outside
the bars, and 95% CIs as error bars where the metrics carry them. A figure whose data is missing is not drawn;
the caller reports it as "not run".
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from gnt.report.collect import ModelResult, Results  # noqa: E402
from gnt.report.tables import COLUMNS, Column, lookup  # noqa: E402

COLUMN = {c.key: c for c in COLUMNS}
LANG_NAMES = {"it": "Italian", "es": "Spanish", "de": "German", "el": "Greek"}
CONFIGS = ("G+S", "G", "S", "None")
DPI = 110


def model_label(model: ModelResult) -> str:
    """Short x-tick label: ``base``, ``sft@8``, or the name's last two parts."""
    if model.is_base:
        return "base"
    if model.global_step is not None:
        return f"{model.stage}@{model.global_step}"
    return "/".join(model.name.split("/")[-2:])


def model_labels(models: Sequence[ModelResult]) -> dict[str, str]:
    """Each model's short label by name. Where two would share one (runs of one stage that stopped at the same step,
    e.g. alignment variants), those get the name's last two parts instead: a label must tell models apart."""
    short = {m.name: model_label(m) for m in models}
    taken = Counter(short.values())
    return {name: label if taken[label] == 1 else "/".join(name.split("/")[-2:]) for name, label in short.items()}


def _stat(results: Results, model: str, scope: str, lang: str | None, column: Column,
          cell: str | None = None) -> tuple[float, float, float] | None:
    row = lookup(results, model, scope, lang, column, cell)
    if row is None:
        return None
    lo = row.lo if row.lo is not None else row.value
    hi = row.hi if row.hi is not None else row.value
    return row.value, lo, hi


def _grid(n: int, max_cols: int = 2) -> tuple[int, int]:
    cols = min(max_cols, max(1, n))
    return math.ceil(n / cols), cols


def _bars(ax: plt.Axes, groups: Sequence[str], series: list[tuple[str, list, dict]], percent: bool = True) -> None:
    """Grouped bars with CI whiskers; ``series`` = (label, [(v, lo, hi) | None per group], bar style)."""
    n = max(1, len(series))
    width = 0.8 / n
    scale = 100.0 if percent else 1.0
    for index, (label, stats, style) in enumerate(series):
        xs = np.arange(len(groups)) + (index - (n - 1) / 2) * width
        values = [s[0] * scale if s else np.nan for s in stats]
        low = [(s[0] - s[1]) * scale if s else 0 for s in stats]
        high = [(s[2] - s[0]) * scale if s else 0 for s in stats]
        ax.bar(xs, values, width=width * 0.95, label=label, yerr=[low, high], capsize=2,
               error_kw={"elinewidth": 0.8, "ecolor": "#333333"}, **style)
    ax.set_xticks(np.arange(len(groups)))
    ax.set_xticklabels(groups, rotation=30 if max(len(g) for g in groups) > 8 else 0, ha="right"
                       if max(len(g) for g in groups) > 8 else "center")
    if percent:
        ax.set_ylim(0, 105)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def _finish(fig: plt.Figure, path: Path, handles_from: plt.Axes, ncol: int) -> Path:
    handles, labels = handles_from.get_legend_handles_labels()
    if handles:
        fig.legend(handles, labels, loc="outside lower center", ncol=ncol, frameon=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path


def _languages(results: Results, metric_keys: Sequence[str]) -> list[str]:
    wanted = {m for key in metric_keys for m in COLUMN[key].metric}
    return [lang for lang in results.languages
            if any(r.metric in wanted and r.lang == lang and r.scope == "language" for r in results.metrics)]


def _constant_label(results: Results, lang: str | None) -> dict | None:
    """The best constant label's scores for one language (None: all languages), from the metrics blocks."""
    model = results.base or (results.models[0] if results.models else None)
    metrics: dict[str, Any] = dict(model.metrics or {}) if model else {}
    block = ((metrics.get("languages") or {}).get(lang) if lang else metrics.get("overall")) or {}
    baselines = block.get("label_baselines")
    return baselines if baselines and baselines.get("balanced_accuracy") is not None else None


def plot_decision(results: Results, path: str | Path) -> Path | None:
    """Label balanced accuracy and macro-F1 per model, per language and over all, with the constant-label lines."""
    langs = _languages(results, ["label_bal"])
    if not langs:
        return None
    panels: list[str | None] = [None, *langs] if len(langs) > 1 else [*langs]
    rows, cols = _grid(len(panels), max_cols=3)
    width = max(4.5, 1.0 * len(results.models) + 2.5)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, 3.6 * rows + 0.9), squeeze=False, sharey=True,
                             layout="constrained")
    groups = list(model_labels(results.models).values())
    spec = [("Label balanced accuracy", "label_bal", {"color": "#2ca02c"}),
            ("Label macro-F1", "label_f1", {"color": "#98df8a", "hatch": "//", "edgecolor": "#2ca02c"})]
    for index, lang in enumerate(panels):
        ax = axes[index // cols][index % cols]
        scope = "language" if lang else "overall"
        _bars(ax, groups, [(label, [_stat(results, m.name, scope, lang, COLUMN[key]) for m in results.models], style)
                           for label, key, style in spec])
        baseline = _constant_label(results, lang)
        if baseline is not None:
            ax.axhline(baseline["balanced_accuracy"] * 100, color="black", linestyle="--", linewidth=1,
                       label=f"best constant label ({baseline['label']}): balanced accuracy")
            if baseline.get("macro_f1") is not None:
                ax.axhline(baseline["macro_f1"] * 100, color="grey", linestyle=":", linewidth=1,
                           label="best constant label: macro-F1")
        ax.set_title(LANG_NAMES.get(lang, lang) if lang else "all languages")
        ax.set_ylabel("%")
    for index in range(len(panels), rows * cols):
        axes[index // cols][index % cols].set_axis_off()
    fig.suptitle("The decision: GENDERED where the source states a gender, NEUTRAL where it does not (95% CI)")
    return _finish(fig, Path(path), axes[0][0], ncol=2)


def plot_label_vs_gnt(results: Results, path: str | Path) -> Path | None:
    """Fig. 3: per language, label and GNT accuracy on Set-G and Set-N for every model."""
    langs = _languages(results, ["label_g", "label_n"])
    if not langs:
        return None
    has_gnt = results.has("gnt_accuracy") and any(
        _stat(results, m.name, "language", lang, COLUMN["gnt_n"]) for m in results.models for lang in langs
    )
    rows, cols = _grid(len(langs))
    width = max(5.0, 1.2 * len(results.models) + 2.5)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, 3.6 * rows + 0.8), squeeze=False, sharey=True,
                             layout="constrained")
    groups = list(model_labels(results.models).values())
    blue, orange = "#1f77b4", "#ff7f0e"
    # GNT bars count an inadequate translation as a failure: a model that does not translate (a base model writing
    # back its demonstrations) would otherwise score its copied text as neutral or gendered
    strict = {set_: Column(f"gnt_{set_[-1].lower()}_strict", f"GNT acc. {set_}, inadequate = wrong",
                           ("gnt_accuracy_adequate",), (set_,)) for set_ in ("Set-G", "Set-N")}
    series_spec = [
        ("Label acc. Set-G", COLUMN["label_g"], {"color": blue}),
        ("GNT acc. Set-G, inadequate = wrong", strict["Set-G"], {"color": "#aec7e8", "hatch": "//", "edgecolor": blue}),
        ("Label acc. Set-N", COLUMN["label_n"], {"color": orange}),
        ("GNT acc. Set-N, inadequate = wrong", strict["Set-N"],
         {"color": "#ffbb78", "hatch": "//", "edgecolor": orange}),
    ]
    if not has_gnt:
        series_spec = [s for s in series_spec if not s[0].startswith("GNT")]
    _language_panels(axes, langs, groups, "accuracy (%)", lambda lang: [
        (label, [_stat(results, m.name, "language", lang, column) for m in results.models], style)
        for label, column, style in series_spec
    ])
    title = "Label accuracy vs GNT accuracy by set (mean over evaluated cells, 95% CI)"
    if not has_gnt:
        title += "\nGNT accuracy: judge not run"
    fig.suptitle(title)
    return _finish(fig, Path(path), axes[0][0], ncol=len(series_spec))


def _language_panels(axes: Any, langs: list[str], groups: list[str], ylabel: str,
                     series_for: Callable[[str], list]) -> None:
    """One bar panel per language (models along x), the y label on the first column, spare panels hidden."""
    cols = len(axes[0])
    for index, lang in enumerate(langs):
        ax = axes[index // cols][index % cols]
        _bars(ax, groups, series_for(lang))
        ax.set_title(f"en→{lang} ({LANG_NAMES.get(lang, lang)})")
        ax.set_xlabel("model (stage@step, or its run where two share one)")
        if index % cols == 0:
            ax.set_ylabel(ylabel)
    for index in range(len(langs), len(axes) * cols):
        axes[index // cols][index % cols].set_axis_off()


def plot_coherence(results: Results, path: str | Path) -> Path | None:
    """Fig. 4: share of outputs whose translation form agrees with the generated label, by label."""
    gendered = Column("coh_g", "Coherence (GENDERED label)", ("coherence",), ("GENDERED",))
    langs = [lang for lang in results.languages if any(
        _stat(results, m.name, "language", lang, COLUMN["coh_n"]) or _stat(results, m.name, "language", lang, gendered)
        for m in results.models)]
    if not langs:
        return None
    rows, cols = _grid(len(langs))
    width = max(5.0, 0.9 * len(results.models) + 2.5)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, 3.4 * rows + 0.8), squeeze=False, sharey=True,
                             layout="constrained")
    groups = list(model_labels(results.models).values())
    _language_panels(axes, langs, groups, "coherent outputs (%)", lambda lang: [
        ("label GENDERED", [_stat(results, m.name, "language", lang, gendered) for m in results.models],
         {"color": "#1f77b4"}),
        ("label NEUTRAL", [_stat(results, m.name, "language", lang, COLUMN["coh_n"]) for m in results.models],
         {"color": "#2ca02c"}),
    ])
    fig.suptitle("Label–translation coherence by generated label (95% CI)")
    return _finish(fig, Path(path), axes[0][0], ncol=2)


def headline_shots(results: Results) -> int | None:
    """The shot count the by-configuration view uses: 4 (the paper's headline) when evaluated, else the most."""
    shots = {r.shots for r in results.metrics if r.scope == "cell" and r.shots is not None}
    return 4 if 4 in shots else (max(shots) if shots else None)


def plot_setn_by_config(results: Results, path: str | Path) -> Path | None:
    """Fig. 5: Set-N GNT accuracy per prompt configuration at the headline shot count, per language and model."""
    shots = headline_shots(results)
    column = COLUMN["gnt_n"]
    if shots is None:
        return None
    langs = [lang for lang in results.languages if any(
        _stat(results, m.name, "cell", lang, column, f"{lang}/{c}/{shots}") for m in results.models for c in CONFIGS)]
    if not langs:
        return None
    configs = [c for c in CONFIGS if any(
        _stat(results, m.name, "cell", lang, column, f"{lang}/{c}/{shots}")
        for m in results.models for lang in langs)]
    rows, cols = _grid(len(langs))
    width = max(5.0, 0.35 * len(configs) * len(results.models) + 2.5)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, 3.4 * rows + 0.8), squeeze=False, sharey=True,
                             layout="constrained")
    colors = plt.get_cmap("tab10")
    labels = model_labels(results.models)
    for index, lang in enumerate(langs):
        ax = axes[index // cols][index % cols]
        series = [
            (labels[m.name], [_stat(results, m.name, "cell", lang, column, f"{lang}/{c}/{shots}") for c in configs],
             {"color": colors(k % 10)})
            for k, m in enumerate(results.models)
        ]
        _bars(ax, configs, series)
        ax.set_title(f"en→{lang} ({LANG_NAMES.get(lang, lang)})")
        ax.set_xlabel("prompt configuration")
        if index % cols == 0:
            ax.set_ylabel("Set-N GNT accuracy (%)")
    for index in range(len(langs), rows * cols):
        axes[index // cols][index % cols].set_axis_off()
    fig.suptitle(f"Set-N GNT accuracy by prompt configuration ({shots}-shot, 95% CI)")
    return _finish(fig, Path(path), axes[0][0], ncol=min(6, len(results.models)))


CURVE_KEYS = ("label_bal", "label_n", "label_g", "chrf", "gnt_n_adequate", "gnt_n", "gnt_g", "coh_n", "xcomet", "errors")


def plot_learning_curves(results: Results, directory: str | Path) -> list[Path]:
    """Per training stage, every available headline metric against ``global_step`` (one line per language)."""
    directory = Path(directory)
    base = results.base
    stages: dict[str, list[ModelResult]] = {}
    for model in results.models:
        if not model.is_base and model.global_step is not None:
            stages.setdefault(model.stage, []).append(model)
    written = []
    colors = plt.get_cmap("tab10")
    for stage, models in stages.items():
        models = sorted(models, key=lambda m: m.global_step or 0)
        lines = [*results.languages, None]
        keys = [k for k in CURVE_KEYS if any(
            _stat(results, m.name, "language" if lang else "overall", lang, COLUMN[k]) for m in models for lang in lines)]
        if not keys:
            continue
        start = [base] if base is not None and stage == "sft" else []
        rows, cols = _grid(len(keys), max_cols=3)
        fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.2 * rows + 0.9), squeeze=False,
                                 layout="constrained")
        for index, key in enumerate(keys):
            ax = axes[index // cols][index % cols]
            column = COLUMN[key]
            scale = 1.0 if column.kind in ("score", "points") else 100.0
            for k, lang in enumerate(lines):
                points = []
                for model in start + models:
                    stat = _stat(results, model.name, "language" if lang else "overall", lang, column)
                    if stat is not None:
                        points.append((0 if model.is_base else model.global_step, stat))
                if not points:
                    continue
                xs = [p[0] for p in points]
                ys = [p[1][0] * scale for p in points]
                style = {"color": "black", "linestyle": "--", "linewidth": 2} if lang is None else {"color": colors(k)}
                ax.plot(xs, ys, marker="o", markersize=4, label=lang or "all languages", **style)
                if lang is None:
                    ax.fill_between(xs, [p[1][1] * scale for p in points], [p[1][2] * scale for p in points],
                                    color="grey", alpha=0.2, label="all languages 95% CI")
            if key == "label_bal" and (constant := _constant_label(results, None)) is not None:
                ax.axhline(constant["balanced_accuracy"] * 100, color="black", linestyle="-.", linewidth=1,
                           label="best constant label")
            if base is not None and not start:
                stat = _stat(results, base.name, "overall", None, column)
                if stat is not None:
                    ax.axhline(stat[0] * scale, color="grey", linestyle=":", label="base (all languages)")
            ax.set_title(column.title)
            ax.set_xlabel("global step")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            if column.kind != "score":  # percent: a readable range even for flat curves, never beyond 0–100
                low, high = ax.dataLim.y0, ax.dataLim.y1
                pad = max(5.0, (10.0 - (high - low)) / 2)
                ax.set_ylim(max(-1.0, low - pad), min(101.0, high + pad))
            ax.set_ylabel({"percent": "%", "errors": "rate (%)", "score": "score", "points": "chrF++"}[column.kind])
            ax.grid(alpha=0.3)
        for index in range(len(keys), rows * cols):
            axes[index // cols][index % cols].set_axis_off()
        fig.suptitle(f"Learning curves — {stage} checkpoints (step 0 = base model)" if start
                     else f"Learning curves — {stage} checkpoints")
        handles: dict[str, Any] = {}
        for ax in axes.flat:
            for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
                handles.setdefault(label, handle)
        fig.legend(list(handles.values()), list(handles.keys()), loc="outside lower center",
                   ncol=min(7, len(handles)), frameon=False)
        path = directory / f"learning_curves_{stage}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=DPI)
        plt.close(fig)
        written.append(path)
    return written


def all_figures(results: Results, directory: str | Path) -> dict[str, Path | list[Path] | None]:
    """Draw every figure into ``directory``; None for a figure whose data is missing."""
    directory = Path(directory)
    return {
        "decision": plot_decision(results, directory / "decision.png"),
        "fig3_label_vs_gnt": plot_label_vs_gnt(results, directory / "fig3_label_vs_gnt.png"),
        "fig4_coherence": plot_coherence(results, directory / "fig4_coherence.png"),
        "fig5_setn_by_config": plot_setn_by_config(results, directory / "fig5_setn_by_config.png"),
        "learning_curves": plot_learning_curves(results, directory),
    }
