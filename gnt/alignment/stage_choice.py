"""Which stage ends a training chain: the aligned stage only where it beats its SFT start on dev.

An alignment stage earns its place by improving what GNT is about (Set-N translations judged neutral, with an
inadequate translation counted as a failure) without paying for it with the gender decision (label balanced
accuracy), the stated genders (Set-G translations judged correctly gendered: a stage that writes every referent
away gains on Set-N by losing there) or the translation (chrF++). The comparison reads two models of one results
folder scored on the **dev** split (never test: the test rows are what the final stage is reported on), and the
rule is written into the choice so a report can say why the chain ends where it does.

The dev rows mix two origins: real mGeNTE sentences and templated ones (with ``templated_rows``, the dev split alone
being small). The rule reads all of them; the choice also keeps each figure per origin, because a round can move
the templated rows (short sentences with one profession) and not the real ones, and the test rows are all real.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FIGURES: dict[str, tuple[str, str | None, tuple[str, ...]]] = {
    "gnt_n_adequate": ("GNT acc. Set-N, inadequate = wrong", "Set-N", ("gnt_accuracy_adequate", "Set-N")),
    "gnt_g_adequate": ("GNT acc. Set-G, inadequate = wrong", "Set-G", ("gnt_accuracy_adequate", "Set-G")),
    "label_bal": ("label balanced accuracy", None, ("label_balanced_accuracy",)),
    "label_g": ("label accuracy Set-G", "Set-G", ("label_accuracy", "Set-G")),
    "label_n": ("label accuracy Set-N", "Set-N", ("label_accuracy", "Set-N")),
    "chrf": ("chrF++", None, ("adequacy", "chrf")),
}
"""The compared figures: key → (title, set, path in a model's overall metrics block). Accuracies are shares (0–1),
chrF++ is on its 0–100 scale."""


@dataclass(frozen=True)
class StageRule:
    """The aligned stage is kept when its dev Set-N GNT accuracy (inadequate = wrong) is higher than SFT's by more
    than ``min_gain``, its Set-G GNT accuracy (inadequate = wrong) at most ``max_setg_loss`` lower, its label
    balanced accuracy at most ``max_label_loss`` lower and its chrF++ at most ``max_chrf_loss`` points lower."""

    min_gain: float = 0.0
    max_setg_loss: float = 0.02
    max_label_loss: float = 0.02
    max_chrf_loss: float = 1.0

    def failures(self, delta: dict[str, float | None]) -> list[str]:
        """Why the aligned stage does not earn its place (empty: it does), from aligned-minus-SFT figures."""
        why = []
        gain, setg = delta.get("gnt_n_adequate"), delta.get("gnt_g_adequate")
        label, chrf = delta.get("label_bal"), delta.get("chrf")
        if gain is None or gain <= self.min_gain:
            why.append("Set-N GNT accuracy (inadequate = wrong) is not higher than SFT's"
                       + ("" if gain is None else f" ({100 * gain:+.1f} points)"))
        if setg is None or setg < -self.max_setg_loss:
            why.append("Set-G GNT accuracy (inadequate = wrong) falls by more than "
                       f"{100 * self.max_setg_loss:g} points" + ("" if setg is None else f" ({100 * setg:+.1f})"))
        if label is None or label < -self.max_label_loss:
            why.append("label balanced accuracy falls by more than "
                       f"{100 * self.max_label_loss:g} points" + ("" if label is None else f" ({100 * label:+.1f})"))
        if chrf is None or chrf < -self.max_chrf_loss:
            why.append(f"chrF++ falls by more than {self.max_chrf_loss:g} points"
                       + ("" if chrf is None else f" ({chrf:+.1f})"))
        return why


def _value(overall: dict[str, Any], path: tuple[str, ...]) -> float | None:
    value: Any = overall
    for step in path:
        value = value.get(step) if isinstance(value, dict) else None
    value = value.get("value") if isinstance(value, dict) else None
    return float(value) if isinstance(value, int | float) else None


def model_figures(results_dir: str | Path) -> dict[str, dict[str, float | None]]:
    """Per model of a results folder, each compared figure over all its rows, read from its composed metrics
    (None where it was not measured)."""
    from gnt.results.folder import model_names
    from gnt.results.model_folder import ModelFolder

    found = {}
    for name in model_names(results_dir):
        metrics, _ = ModelFolder(Path(results_dir), name).metrics()
        overall: dict[str, Any] = dict((metrics or {}).get("overall") or {})
        found[name] = {key: _value(overall, path) for key, (_, _, path) in FIGURES.items()}
    return found


def setn_misses(results_dir: str | Path) -> dict[str, dict[str, int] | None]:
    """Per model of a results folder, where its Set-N rows land under the GNT figure (inadequate = wrong): ``right``,
    ``inadequate`` (below the adequacy bar or no translation) or ``not_neutral`` (adequate, but the judge did not
    call it neutral). A gain in the figure has to come from the last two; which one holds the misses says what an
    alignment stage would have to teach. None where the judge's part is missing."""
    from gnt.results.folder import model_names
    from gnt.results.model_folder import ModelFolder

    found: dict[str, dict[str, int] | None] = {}
    for name in model_names(results_dir):
        metrics, _ = ModelFolder(Path(results_dir), name).metrics()
        gnt = dict(((metrics or {}).get("overall") or {}).get("gnt_accuracy_adequate") or {})
        whole, adequate = gnt.get("Set-N"), (gnt.get("among_adequate") or {}).get("Set-N")
        if not whole or not adequate:
            found[name] = None
            continue
        right = round(whole["value"] * whole["n"])
        found[name] = {"rows": whole["n"], "right": right, "inadequate": whole["n"] - adequate["n"],
                       "not_neutral": adequate["n"] - right}
    return found


ORIGINS = ("mgente", "templated")
"""The origins of held-out rows, told apart by row id (:data:`gnt.data.templated.pairs.TEMPLATED_ID_PREFIX`)."""


def origin_of(row_id: str) -> str:
    from gnt.data.templated.pairs import TEMPLATED_ID_PREFIX

    return "templated" if row_id.startswith(TEMPLATED_ID_PREFIX) else "mgente"


def origin_figures(results_dir: str | Path) -> dict[str, dict[str, dict[str, float | None]]]:
    """Per model of a results folder and per origin of its rows, each compared figure over that origin's outputs
    (computed from the generations and, where the judge's part is whole, its judgments; None where not measured)."""
    from gnt.evaluation.metrics import compute_metrics
    from gnt.filenames import JUDGMENTS
    from gnt.results.folder import model_names
    from gnt.results.model_folder import JUDGE, ModelFolder

    found: dict[str, dict[str, dict[str, float | None]]] = {}
    for name in model_names(results_dir):
        folder = ModelFolder(Path(results_dir), name)
        rows = folder.generations()
        judgments = ({str(j["key"]): j for j in folder.iter_lines(JUDGMENTS)} if folder.check(JUDGE).ok
                     else None)
        found[name] = {}
        for origin in ORIGINS:
            subset = [row for row in rows if origin_of(str(row["id"])) == origin]
            if subset:
                overall = compute_metrics(subset, judgments)["overall"]
                found[name][origin] = {key: _value(overall, path) for key, (_, _, path) in FIGURES.items()}
    return found


def delta(aligned: dict[str, float | None], sft: dict[str, float | None]) -> dict[str, float | None]:
    return {key: None if aligned.get(key) is None or sft.get(key) is None else aligned[key] - sft[key]  # type: ignore[operator]
            for key in FIGURES}


def origin_delta(aligned: dict[str, dict[str, float | None]],
                 sft: dict[str, dict[str, float | None]]) -> dict[str, dict[str, float | None]]:
    """:func:`delta` per origin, over the origins both models have rows of."""
    return {origin: delta(aligned[origin], sft[origin]) for origin in ORIGINS if origin in aligned and origin in sft}


def choose_stage(results_dir: str | Path, sft: str, aligned: str, rule: StageRule | None = None) -> dict[str, Any]:
    """The stage choice of one chain: which of ``sft`` and ``aligned`` (model names in a dev results folder) ends
    it, their dev figures, the rule and the reasons."""
    rule = rule or StageRule()
    found = model_figures(results_dir)
    missing = [name for name in (sft, aligned) if name not in found]
    if missing:
        raise ValueError(f"{results_dir}: no results for {', '.join(missing)} (models there: {', '.join(found)})")
    change = delta(found[aligned], found[sft])
    why = rule.failures(change)
    origins = origin_figures(results_dir)
    by_origin = {origin: {"sft": origins[sft][origin], "aligned": origins[aligned][origin]}
                 for origin in ORIGINS if origin in origins[sft] and origin in origins[aligned]}
    for origin, pair in origin_delta(origins[aligned], origins[sft]).items():
        by_origin[origin]["delta"] = pair
    misses = setn_misses(results_dir)
    return {
        "format": "gnt-align/stage-choice/1", "split": "dev", "results": str(results_dir),
        "final": "aligned" if not why else "sft", "models": {"sft": sft, "aligned": aligned},
        "figures": {"sft": found[sft], "aligned": found[aligned], "delta": change}, "by_origin": by_origin,
        "setn_misses": {"sft": misses.get(sft), "aligned": misses.get(aligned)},
        "rule": asdict(rule), "reasons": why,
    }


def choice_sentence(choice: dict[str, Any]) -> str:
    """One sentence for a report: where the chain ends and why."""
    models = choice.get("models") or {}
    change = (choice.get("figures") or {}).get("delta") or {}
    gain = change.get("gnt_n_adequate")
    shown = "" if gain is None else f" (dev Set-N GNT accuracy, inadequate = wrong: {100 * gain:+.1f} points)"
    if choice.get("final") == "aligned":
        return (f"The chain ends at the aligned stage `{models.get('aligned')}`: on the dev split it beats its SFT "
                f"start `{models.get('sft')}`{shown} without losing the label, the stated genders or the translation.")
    reasons = "; ".join(choice.get("reasons") or []) or "no reason recorded"
    return (f"The chain ends at SFT `{models.get('sft')}`: on the dev split the aligned stage "
            f"`{models.get('aligned')}` did not earn its place ({reasons}).")
