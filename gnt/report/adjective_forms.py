"""Templated outputs read by the suite's classifier instead of the judge: which form the adjective took.

Why: a report's GNT figures come from a judge, and the small learned judge has known blind spots on templated
sentences (a gendered adjective after a rewritten noun called neutral; an unseen epicene adjective called gendered).
On a templated entry with a gender-marked adjective the lexicon forms are known, so the templated suite's
classifier (:mod:`gnt.templated_suite.entry_forms`) reads the translation without the judge: a Set-N translation
should give the adjective its neutral form, a Set-G one the stated gender's. Rows where the classifier finds no form
of the adjective (the model chose another word, or did not translate) are counted as ``unknown``, not guessed.
The report shows this reading per checkpoint beside the judge's (:func:`adjective_form_blocks`); the alignment
bench records it per seed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gnt.data.entry import Entry
from gnt.filenames import JUDGMENTS
from gnt.io import read_jsonl, sha256_file
from gnt.report.blocks import Block, Heading, Para, Table
from gnt.report.significance import PairedResult, holm, paired_bootstrap
from gnt.templated_suite.entry_forms import adjective_class, gender_marked

if TYPE_CHECKING:
    from gnt.report.collect import Results


@dataclass(frozen=True)
class Reading:
    """One output of a gender-marked templated row: its set, the adjective's class (``M``, ``F``, ``N``,
    ``unknown``; for Set-G, ``own``/``other`` instead of M/F against the stated gender) and the judge's label."""

    set: str
    form: str
    judge: str | None


def read_entries(path: str | Path) -> dict[str, Entry]:
    """The entries of a build's JSON-lines file by id (``eval/templated_test.jsonl`` and the like)."""
    return {str(r["id"]): Entry.from_record(r) for r in read_jsonl(path)}


def readings(results_dir: str | Path, entries: Mapping[str, Entry]) -> dict[str, dict[str, Reading]]:
    """Per model of a results folder, ``{lang|row id|cell: Reading}`` for its outputs of gender-marked templated
    entries among ``entries`` (the keys match :func:`gnt.report.significance.row_values`)."""
    from gnt.results.folder import model_names
    from gnt.results.model_folder import ModelFolder

    found: dict[str, dict[str, Reading]] = {}
    for name in model_names(results_dir):
        folder = ModelFolder(Path(results_dir), name)
        judged = ({str(j.get("key")): j.get("label") for j in folder.iter_lines(JUDGMENTS)}
                  if (folder.path / JUDGMENTS).is_file() else {})
        rows: dict[str, Reading] = {}
        for row in folder.generations():
            entry = entries.get(str(row["id"]))
            if entry is None or not gender_marked(entry):
                continue
            form = adjective_class(row.get("translation"), entry)
            if entry.set == "Set-G" and form in ("M", "F"):
                form = "own" if form == entry.gender else "other"
            rows[f"{row['lang']}|{row['id']}|{row['cell']}"] = Reading(entry.set, form, judged.get(row["key"]))
        found[name] = rows
    return found


RIGHT_FORM = {"Set-N": "N", "Set-G": "own"}
"""The form a right translation gives the adjective, per set."""


def right_form_values(rows: Mapping[str, Reading], set_name: str) -> dict[str, float]:
    """1.0 where an output of ``set_name`` gives the adjective the right form, 0.0 elsewhere (unknown included):
    per-row values for a paired bootstrap."""
    return {key: float(r.form == RIGHT_FORM[set_name]) for key, r in rows.items() if r.set == set_name}


def summary(rows: Mapping[str, Reading]) -> dict[str, Any]:
    """Counts of the adjective's forms per set, the right form's share, and where judge and classifier disagree:
    ``judge_neutral_gendered_adjective`` (the judge said NEUTRAL, the adjective is masculine or feminine) and
    ``judge_gendered_neutral_adjective`` (any gendered verdict, the adjective neutral: the other words may still
    gender the referent there), both on Set-N rows."""
    out: dict[str, Any] = {}
    for set_name, right in RIGHT_FORM.items():
        of_set = [r for r in rows.values() if r.set == set_name]
        forms = Counter(r.form for r in of_set)
        out[set_name] = {"rows": len(of_set), "forms": dict(sorted(forms.items())),
                         "right_form_share": forms[right] / len(of_set) if of_set else None}
    setn = [r for r in rows.values() if r.set == "Set-N"]
    out["Set-N"]["judge_neutral_gendered_adjective"] = sum(r.judge == "NEUTRAL" and r.form in ("M", "F") for r in setn)
    out["Set-N"]["judge_gendered_neutral_adjective"] = sum(r.judge not in (None, "NEUTRAL") and r.form == "N"
                                                            for r in setn)
    return out


def paired_forms(before: Mapping[str, Reading], after: Mapping[str, Reading]) -> dict[str, PairedResult | None]:
    """Per set, ``after`` minus ``before`` in the share of outputs whose adjective takes the right form, paired
    bootstrap over the rows both have (None: no shared row)."""
    return {set_name: paired_bootstrap(right_form_values(before, set_name), right_form_values(after, set_name))
            for set_name in RIGHT_FORM}


def templated_entries(records: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Entry], list[str]]:
    """The templated build rows some evaluations were scored on, read from the files their records name
    (``rows.files``), and a note for each file that is gone or changed since (its rows are not read: a reading
    against other entries would be wrong, not missing)."""
    entries: dict[str, Entry] = {}
    notes: list[str] = []
    files: dict[str, str] = {}
    for record in records:
        rows = record.get("rows")
        for path, digest in (rows.get("files", {}) if isinstance(rows, dict) else {}).items():
            if Path(path).name.startswith("templated_"):
                files.setdefault(str(path), str(digest))
    for path, digest in sorted(files.items()):
        if not Path(path).is_file() or sha256_file(path, len(digest)) != digest:
            notes.append(f"{path} is missing or changed since the evaluation (sha256 {digest} recorded)")
            continue
        entries.update(read_entries(path))
    return entries, notes


def folder_records(results_dir: str | Path, names: Iterable[str]) -> list[Mapping[str, Any]]:
    """The evaluation records of the named models of a results folder (those that have one)."""
    from gnt.results.model_folder import ModelFolder

    found: list[Mapping[str, Any]] = []
    for name in names:
        try:
            found.append(ModelFolder(Path(results_dir), name).record())
        except (OSError, ValueError):
            continue
    return found


def _count(forms: Mapping[str, int], *names: str) -> str:
    return str(sum(forms.get(name, 0) for name in names))


def _share(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f}"


def adjective_form_blocks(results: Results, data: dict) -> list[Block]:
    """The report's section: per model, the forms the classifier reads on the gender-marked templated rows (Set-N:
    the neutral form is right; Set-G: the stated gender's), with the Set-N outputs the judge called NEUTRAL
    whose adjective is gendered; and each model against the base (without one, the first model listed: the
    earliest stage), paired, Holm-adjusted."""
    entries, notes = templated_entries(m.record for m in results.models)
    if not entries:
        return [Heading(3, "Templated rows read without the judge"), *(Para(f"Not read: {n}.", "note") for n in notes)
                ] if notes else []
    found = readings(results.directory, entries)
    shown = [m for m in results.models if found.get(m.name)]
    if not shown:
        return []
    body, data["adjective_forms"] = [], {}
    for model in shown:
        counts = summary(found[model.name])
        data["adjective_forms"][model.name] = counts
        setn, setg = counts["Set-N"], counts["Set-G"]
        body.append([model.name, str(setn["rows"]), _share(setn["right_form_share"]), _count(setn["forms"], "M", "F"),
                     _count(setn["forms"], "unknown"), str(setn["judge_neutral_gendered_adjective"]),
                     str(setg["rows"]), _share(setg["right_form_share"]), _count(setg["forms"], "other"),
                     _count(setg["forms"], "N"), _count(setg["forms"], "unknown")])
    blocks: list[Block] = [
        Heading(3, "Templated rows read without the judge"),
        Para("The templated rows whose adjective has a masculine and a feminine form, read by the templated suite's "
             "classifier from the lexicon forms each row carries, not by the judge: a Set-N translation is right "
             "with the neutral form, a Set-G one with the stated gender's. Unknown: no form of the adjective found "
             "(another word, or no translation), never guessed. The judge column counts Set-N outputs the judge "
             "called NEUTRAL whose adjective is masculine or feminine: where the judge's GNT figure and this one "
             "part, read those rows."),
        Table(["model", "Set-N outputs", "neutral %", "gendered", "unknown", "judge NEUTRAL, adjective gendered",
               "Set-G outputs", "stated gender %", "other gender", "neutral", "unknown"], body,
              name="adjective-forms"),
        *(Para(f"Not read: {n}.", "note") for n in notes),
    ]
    reference = next((m for m in shown if m is results.base), shown[0])
    tests = [(reference.name, after.name, set_name, result) for after in shown if after is not reference
             for set_name, result in paired_forms(found[reference.name], found[after.name]).items() if result]
    if not tests:
        return blocks
    adjusted = holm([t[3].p_value for t in tests])
    rows, data["adjective_forms_paired"] = [], []
    for (before, after, set_name, result), p_adj in zip(tests, adjusted, strict=True):
        mark = ("▲" if result.delta > 0 else "▼") if p_adj < results.alpha and result.delta else ""
        rows.append([after, before, set_name, result.points() + (f" {mark} p={p_adj:.3f}" if mark else ""),
                     str(result.n_pairs)])
        data["adjective_forms_paired"].append({"model": after, "against": before, "set": set_name,
                                               **result.record(), "p_adjusted": p_adj})
    return blocks + [Table(["model", "against", "set", "right form, difference (points, 95% CI)", "pairs"], rows,
                           f"Each model against {reference.name} (the base model, or without one the first "
                           "model listed), paired over the rows both have (▲ a significant rise, ▼ a fall; "
                           f"Holm-adjusted over the table, α = {results.alpha:g}).",
                           name="adjective-forms-paired")]


def stage_choice_form_blocks(choice: Mapping[str, Any], data: dict) -> list[Block]:
    """The stage choice's dev folder read without the judge: SFT and the aligned stage on the gender-marked
    templated dev rows, paired. The choice itself reads the judge's figures; this is the cross-check a reader
    wants beside them (a small judge's gain can be its blind spot: a rewritten noun before a gendered adjective)."""
    results_dir, models = choice.get("results"), choice.get("models") or {}
    sft, aligned = models.get("sft"), models.get("aligned")
    if not results_dir or not sft or not aligned or not Path(results_dir).is_dir():
        return []
    entries, notes = templated_entries(folder_records(results_dir, (sft, aligned)))
    if not entries:
        return [Para(f"Templated dev rows not read: {n}.", "note") for n in notes]
    found = readings(results_dir, entries)
    before, after = found.get(sft), found.get(aligned)
    if not before or not after:
        return []
    counts = {"sft": summary(before), "aligned": summary(after)}
    paired = paired_forms(before, after)
    titles = {"Set-N": "Set-N adjective neutral %", "Set-G": "Set-G adjective in the stated gender %"}
    rows, kept = [], {}
    for set_name, title in titles.items():
        result = paired[set_name]
        change = "—" if result is None else f"{result.points()}, p={result.p_value:.3f}"
        rows.append([title, _share(counts["sft"][set_name]["right_form_share"]),
                     _share(counts["aligned"][set_name]["right_form_share"]), change,
                     "—" if result is None else str(result.n_pairs)])
        kept[set_name] = None if result is None else result.record()
    data["stage_choice_adjective_forms"] = {**counts, "paired": kept}
    return [Table(["templated dev rows, read by the classifier", "SFT", "aligned", "aligned − SFT (95% CI)", "pairs"],
                  rows, "The dev rows whose adjective has a masculine and a feminine form, read by the templated "
                  "suite's classifier instead of the judge (the choice reads the judge's figures; this is their "
                  "cross-check). No form found counts as not right.", name="stage_choice_adjective_forms")]
