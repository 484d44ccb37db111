"""Training rows for a small judge: translations whose label is known by construction, rendered as judge turns.

A learned judge is trained like any adapter (``train/sft.py`` on prompt–completion rows). Its rows come from the
training and dev sides of a data build only, never from a held-out source, a prompt demonstration or a judge
exemplar (the build has already excluded those):

- **mGeNTE references.** Ref-G of a Set-G row is CORRECTLY GENDERED, Ref-G of a Set-N row is WRONGLY GENDERED (it
  assigns a gender the source leaves open), every Ref-N alternative is NEUTRAL (docs/judge.md, Validation);
- **templated pairs**, whose gender marking is known from their M/F/N forms: the neutral target of an ambiguous
  input is NEUTRAL, its masculine-default target WRONGLY GENDERED; the gendered target of a determined input is
  CORRECTLY GENDERED where its adjective is gender-marked, and the same target with the adjective's other gender
  swapped in is WRONGLY GENDERED (it contradicts the source);
- **distilled judgments** (optional): the labels another judge gave (``eval/judge.py``'s judge cache or a model
  folder's ``judgments.jsonl``), so a small judge can learn a large one's verdicts. Their sources must be training
  or dev sources of the build: a held-out source there would leak the test set into the judge.

Phrases (for P+L formats) are derived where the data allows: the annotated gendered words of a gendered reference
(Set-G: the row's gender, correct; Set-N: wrong, gender from the ``<F>``/``<M>`` tags when the annotation has them),
the spans where a neutral reference departs from the gendered one (N, correct), the adjective forms of templated
pairs. A row without derivable phrases is written for L formats only.
"""

from __future__ import annotations

import difflib
import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gnt.data.entry import LANGUAGES, Entry, source_key
from gnt.data.errors import DataError, DataErrors, json_object_lines
from gnt.judge.prompts import JudgePrompt, load_prompt, render_reply
from gnt.judge.schema import (
    CORRECTLY_GENDERED,
    CROSS_LABELS,
    GENDERED,
    MAX_PHRASE_CHARS,
    MAX_PHRASES,
    NEUTRAL,
    WRONGLY_GENDERED,
    JudgeFormat,
    judge_format,
    normalise_label,
    project,
    schema_errors,
)
from gnt.paths import JUDGE_DIR

LEARNED_PROMPTS_DIR = JUDGE_DIR / "prompts-learned"
"""Short system texts for a trained judge: it learns the task from its rows, so the published texts' long rules and
eight exemplars would only make every training step and every judgment longer (and, past Gemma 3's 512-token
sliding window, defeat the shared-prefix reuse that makes label scoring cheap)."""

ROW_FILES = {"train": "judge/train.jsonl", "dev": "judge/dev.jsonl"}
"""Where a data build writes the judge's rows (prompt–completion, like ``sft/``)."""
REFERENCES_FILE = "eval/judge_references.jsonl"
"""The held-out entries of every judge language: what the trained judge is validated on, never trained on."""
DEV_REFERENCES_FILE = "eval/judge_dev_references.jsonl"
"""The dev entries of every judge language: what a judge's settings are chosen on (their rows are dev rows)."""
ORIGINS = ("mgente", "templated", "distilled")


@dataclass(frozen=True)
class JudgeExample:
    """One translation with its known CROSS label (and phrases where derivable), before rendering."""

    lang: str
    source: str
    translation: str
    label: str
    origin: str
    id: str
    set: str = ""
    phrases: tuple[dict[str, str], ...] = ()

    @property
    def source_key(self) -> str:
        return source_key(self.source)

    def annotation(self) -> dict[str, Any]:
        return {"phrases": [dict(p) for p in self.phrases], "label": self.label}


@dataclass
class JudgeRowSettings:
    """Keys of ``data/build.py`` that shape the judge's training rows (the judge recipe must use the same format
    and prompts: the trained adapter's run record carries them and the judge checks them)."""

    judge_rows: bool = field(default=True, metadata={
        "help": "write training rows for a small judge (judge/{train,dev}.jsonl) and its held-out references"})
    judge_langs: tuple[str, ...] | None = field(default=None, metadata={
        "help": "languages of the judge's rows (null: the build's langs; others are loaded beside langs and split "
                "with them: one English source stays on one side for every language)"})
    judge_format: str = field(default="MONO-L", metadata={
        "help": "the judge format the rows are rendered in: MONO-L (the translation alone, GENDERED or NEUTRAL: what "
                "GNT accuracy needs, and what human gold sets of the field label) or CROSS-L, P+L formats; an L format "
                "is scored from its label's log-probability"})
    judge_prompts_dir: str = field(default=str(LEARNED_PROMPTS_DIR), metadata={
        "help": "system texts of the judge's rows ({lang}/{format}.txt); the judge recipe's prompts_dir must match"})
    judge_templated_ratio: float = field(default=0.5, metadata={
        "help": "templated rows per mGeNTE row of a language and side, at most (a stable sample): templated "
                "sentences are short and alike, and would otherwise outnumber the references"})
    judge_templated_balance: bool = field(default=False, metadata={
        "help": "split each language's templated rows evenly between NEUTRAL and gendered text (default: a stable "
                "sample regardless of label, about two gendered rows per neutral one, since a determined input gives "
                "a correct and a swapped gendered row and an ambiguous one a row of each; balanced, the judge "
                "trained on the demo's build was less accurate on the dev references, docs/judge.md)"})
    judge_templated_adjective_swaps: bool = field(default=False, metadata={
        "help": "also write, for each ambiguous templated input with a gender-marked adjective, its neutral target "
                "with the adjective's masculine and feminine forms swapped in for the neutral one, as WRONGLY "
                "GENDERED: a rewritten noun beside a gendered adjective ('Nel mio lavoro di ingegneria, sono "
                "curiosa'), the text the default judge calls neutral. Off: over three seeds on the demo's build "
                "the judge then called neutral rewrites whose adjective agrees with 'persona' gendered, and lost on "
                "dev (docs/judge.md)"})
    judge_templated_genderless_rewrites: bool = field(default=False, metadata={
        "help": "also write, for each determined templated input whose target genders its person only through the "
                "adjective ('«Chi mi conosce dice che sono {adj}», ammise.'), its neutral rewrite as NEUTRAL (and so, "
                "for an epicene adjective, the target itself): neutral text around epicene adjectives and 'una "
                "persona …' in more contexts, the text the default judge calls gendered on its dev references"})
    judge_distill: tuple[str, ...] = field(default=(), metadata={
        "help": "judgments of another judge to learn from: judge caches (cache/judgments.jsonl) or model folders' "
                "judgments.jsonl (their sources must be training or dev sources of this build)"})

    def validate(self) -> JudgeRowSettings:
        try:
            self.judge_format = judge_format(self.judge_format).name
        except ValueError as exc:
            raise DataError(f"judge_format: {exc}") from None
        bad = [lang for lang in self.judge_langs or () if lang not in LANGUAGES]
        if bad:
            raise DataError(f"judge_langs: unknown language(s) {bad}; valid: {', '.join(LANGUAGES)}")
        if not 0 <= self.judge_templated_ratio < 1e6:
            raise DataError(f"judge_templated_ratio must be a number >= 0 (got {self.judge_templated_ratio})")
        if self.judge_rows and not Path(self.judge_prompts_dir).is_dir():
            raise DataError(f"judge_prompts_dir: {self.judge_prompts_dir} is not a folder of {{lang}}/{{format}}.txt files")
        for path in self.judge_distill:
            if not Path(path).is_file():
                raise DataError(f"judge_distill: no such file {path}")
        return self


# ----------------------------------------------------------------------------------------------- examples
def _words(text: str) -> list[str]:
    return text.split()


def departing_spans(text: str, other: str, limit: int = MAX_PHRASES) -> tuple[str, ...]:
    """The spans of ``text`` (whole words) that ``other`` does not have: where a neutral reference departs from the
    gendered one. At most ``limit`` spans, each cut to the schema's phrase length."""
    mine, theirs = _words(text), _words(other)
    spans = []
    matcher = difflib.SequenceMatcher(a=theirs, b=mine, autojunk=False)
    for tag, _, _, start, end in matcher.get_opcodes():
        if tag in ("replace", "insert") and end > start:
            spans.append(" ".join(mine[start:end])[:MAX_PHRASE_CHARS].strip(" ,.;:"))
    return tuple(s for s in spans if s)[:limit]


def _phrases(words: Iterable[str], gender: str, correctness: str) -> tuple[dict[str, str], ...]:
    seen: list[str] = []
    for word in words:
        word = word.strip()[:MAX_PHRASE_CHARS]
        if word and word not in seen:
            seen.append(word)
    return tuple({"phrase": w, "gender": gender, "gender_correctness": correctness} for w in seen[:MAX_PHRASES])


def mgente_examples(entry: Entry) -> Iterator[JudgeExample]:
    """Ref-G (CG on Set-G, WG on Set-N) and every Ref-N alternative (NEUTRAL) of an mGeNTE entry."""
    base = {"lang": entry.lang, "source": entry.source, "origin": "mgente", "set": entry.set}
    if entry.set == "Set-G":
        phrases = _phrases(entry.gendered_words, entry.gender or "", "correct") if entry.gender else ()
        yield JudgeExample(translation=entry.ref_g, label=CORRECTLY_GENDERED, id=f"{entry.id}/ref_g",
                           phrases=phrases, **base)
    else:
        genders = entry.meta.get("gendered_word_genders", "")
        tagged = dict(zip(entry.gendered_words, genders.split(";"), strict=False)) if genders else {}
        phrases = tuple(p for w, g in tagged.items() if g in ("M", "F") for p in _phrases([w], g, "wrong"))
        yield JudgeExample(translation=entry.ref_g, label=WRONGLY_GENDERED, id=f"{entry.id}/ref_g",
                           phrases=phrases[:MAX_PHRASES], **base)
    for number, reference in enumerate(entry.ref_n):
        phrases = _phrases(departing_spans(reference, entry.ref_g), "N", "correct")
        yield JudgeExample(translation=reference, label=NEUTRAL, id=f"{entry.id}/ref_n{number}", phrases=phrases, **base)


def _swap_once(text: str, old: str, new: str) -> str | None:
    """``text`` with the single occurrence of ``old`` replaced, or None when it is absent or ambiguous."""
    return text.replace(old, new) if old and old != new and text.count(old) == 1 else None


def templated_examples(entry: Entry, adjective_swaps: bool = False,
                       genderless_rewrites: bool = False) -> Iterator[JudgeExample]:
    """The labels a templated entry's forms determine (see the module docstring); nothing where they do not.

    ``adjective_swaps``: an ambiguous input's neutral target with the neutral adjective phrase replaced by its
    masculine and its feminine form is WRONGLY GENDERED too (where that text is not the masculine-default target
    already): whatever else the neutral target rewrote, the adjective now genders the person.

    ``genderless_rewrites``: a determined input's neutral rewrite is NEUTRAL where the adjective is the target's only
    gender cue (meta ``cue_on_adjective_only``): the source states a gender, but the rewritten text genders no one,
    and a MONO judge reads the text. Elsewhere the rewrite keeps "la donna", "le" or "Signora" and is no such row."""
    base = {"lang": entry.lang, "source": entry.source, "origin": "templated", "set": entry.set}
    meta = entry.meta
    forms = {"M": meta.get("form_m", ""), "F": meta.get("form_f", ""), "N": meta.get("form_n", "")}
    neutral = entry.ref_n[0] if entry.ref_n else ""
    if entry.set == "Set-N":
        if neutral:
            yield JudgeExample(translation=neutral, label=NEUTRAL, id=f"{entry.id}/ref_n0",
                               phrases=_phrases(departing_spans(neutral, entry.ref_g), "N", "correct"), **base)
        if entry.ref_g and entry.ref_g != neutral:
            yield JudgeExample(translation=entry.ref_g, label=WRONGLY_GENDERED, id=f"{entry.id}/ref_g",
                               phrases=_phrases(departing_spans(entry.ref_g, neutral), "M", "wrong"), **base)
        if adjective_swaps and meta.get("gender_marked") == "true" and neutral:
            for gender in ("M", "F"):
                swapped = _swap_once(neutral, forms["N"], forms[gender])
                if swapped and swapped != entry.ref_g:
                    yield JudgeExample(translation=swapped, label=WRONGLY_GENDERED,
                                       id=f"{entry.id}/ref_n0_{gender.lower()}",
                                       phrases=_phrases([forms[gender]], gender, "wrong"), **base)
        return
    if genderless_rewrites and meta.get("cue_on_adjective_only") == "true" and neutral:
        yield JudgeExample(translation=neutral, label=NEUTRAL, id=f"{entry.id}/ref_n0",
                           phrases=_phrases(departing_spans(neutral, entry.ref_g), "N", "correct"), **base)
    gender = entry.gender or ""
    if meta.get("gender_marked") != "true" or gender not in ("F", "M") or entry.ref_g == neutral:
        return  # an epicene adjective: whether the target genders anyone depends on words the forms do not cover
    marked, other = forms[gender], forms["F" if gender == "M" else "M"]
    if marked and marked in entry.ref_g:
        yield JudgeExample(translation=entry.ref_g, label=CORRECTLY_GENDERED, id=f"{entry.id}/ref_g",
                           phrases=_phrases([marked], gender, "correct"), **base)
        swapped = _swap_once(entry.ref_g, marked, other)
        if swapped:
            wrong = "F" if gender == "M" else "M"
            yield JudgeExample(translation=swapped, label=WRONGLY_GENDERED, id=f"{entry.id}/swapped",
                               phrases=_phrases([other], wrong, "wrong"), **base)


def entry_examples(entries: Iterable[Entry], adjective_swaps: bool = False,
                   genderless_rewrites: bool = False) -> Iterator[JudgeExample]:
    for entry in entries:
        yield from (templated_examples(entry, adjective_swaps, genderless_rewrites) if entry.origin == "templated"
                    else mgente_examples(entry))


# ----------------------------------------------------------------------------------------------- distillation
def _distilled_label(value: Any, cross: bool, where: str, line: int) -> str:
    label = normalise_label(value) if isinstance(value, str) else value
    if label not in CROSS_LABELS and label != GENDERED:
        raise DataError(f"unknown label {value!r}; a judgment's label is one of {', '.join(CROSS_LABELS)} or {GENDERED}",
                        where, line, "label")
    if cross and label == GENDERED:
        raise DataError(f"label {GENDERED} does not say whether the gender is correct: a CROSS judge cannot learn "
                        "from it (distil from a CROSS judge, or build with judge_format=MONO-L)", where, line, "label")
    return str(label)


def _generation_texts(judgments: Path) -> dict[str, dict]:
    """A model folder's generations by key (source and translation of its ``judgments.jsonl`` records)."""
    generations = judgments.parent / "generations.jsonl"
    if not generations.is_file():
        return {}
    found = {}
    for _, record in json_object_lines(generations):
        if isinstance(record, dict) and isinstance(record.get("key"), str):
            found[record["key"]] = record
    return found


def distilled_examples(paths: Sequence[str | Path], sides: Mapping[str, str],
                       cross: bool = False) -> dict[str, list[JudgeExample]]:
    """Examples from other judges' judgments, by the side (train/dev) of their source.

    ``sides`` maps the build's source keys to their side. Judge errors and records without a label are skipped
    (they are no verdict); a label outside the CROSS labels, a record without its texts, or a source that is not
    a training or dev source of the build is an error naming the file and line, and nothing is written.
    """
    out: dict[str, list[JudgeExample]] = {"train": [], "dev": []}
    errors: list[DataError] = []
    for path in map(Path, paths):
        texts = _generation_texts(path)
        for line, record in json_object_lines(path):
            if isinstance(record, DataError):
                errors.append(record)
                continue
            if record.get("error") or record.get("label") is None:
                continue
            try:
                label = _distilled_label(record["label"], cross, str(path), line)
            except DataError as exc:
                errors.append(exc)
                continue
            generation = texts.get(str(record.get("key")), {})
            source = record.get("source") or generation.get("source")
            translation = record.get("translation") or generation.get("translation")
            lang = record.get("lang") or generation.get("lang")
            if not (isinstance(source, str) and isinstance(translation, str) and source and translation):
                errors.append(DataError("judgment without its source and translation (give the judge cache, or a "
                                        "judgments.jsonl beside its generations.jsonl)", str(path), line))
                continue
            side = sides.get(source_key(source))
            if side not in ("train", "dev"):
                where = {"test": "a held-out (test) source", "align": "an align-side source (kept out of training "
                         "for on-policy sampling)"}.get(str(side), "not a source of this build")
                errors.append(DataError(f"source {source[:60]!r} is {where}: distilled judgments must come from the "
                                        "build's training or dev sources", str(path), line, "source"))
                continue
            phrases = tuple(record.get("phrases") or ())
            if phrases and schema_errors({"phrases": list(phrases), "label": label}, "CROSS-P+L"):
                phrases = ()
            out[side].append(JudgeExample(lang=str(lang), source=source, translation=translation, label=label,
                                          origin="distilled", id=f"{path.name}:{line}", phrases=phrases))
    if errors:
        raise errors[0] if len(errors) == 1 else DataErrors(errors)
    return out


# ----------------------------------------------------------------------------------------------- rendering
def render_row(example: JudgeExample, prompt: JudgePrompt) -> dict[str, Any] | None:
    """The TRL prompt–completion row of an example in the prompt's format; None when the format needs phrases and
    the example has none."""
    fmt = prompt.fmt
    if fmt.phrases and not example.phrases:
        return None
    reply = project(example.annotation(), fmt)
    return {
        "prompt": prompt.messages(example.source, example.translation),
        "completion": [{"role": "assistant", "content": render_reply(reply)}],
        "id": example.id,
        "lang": example.lang,
        "set": example.set,
        "origin": example.origin,
        "label": reply["label"],
        "source_key": example.source_key,
        "cell": f"judge/{example.lang}/{fmt.slug}",  # rows of one language share the system text: one prefix
    }


def _capped_templated(examples: list[JudgeExample], ratio: float, balance: bool) -> list[JudgeExample]:
    """At most ``ratio`` templated examples per mGeNTE example of each language, a stable sample (by content hash).

    With ``balance``, as many NEUTRAL as gendered templated examples per language (each half of the budget, fewer
    where one label has fewer). Why it is there: the label-blind sample holds about two gendered templated examples
    per neutral one, and the judge trained on it calls some exact copies of templated neutral references GENDERED.
    Balancing did not mend that on the demo's build: it lowered the judge's gendered recall on templated references
    more than it raised the neutral one (bench/judge_templated_rows.py), so it is off by default.
    """
    from gnt.io import sha256_text

    def stable(found: list[JudgeExample]) -> list[JudgeExample]:
        return sorted(found, key=lambda e: sha256_text(f"{e.id}|{e.translation}"))

    kept = [e for e in examples if e.origin != "templated"]
    for lang in sorted({e.lang for e in examples}):
        templated = [e for e in examples if e.origin == "templated" and e.lang == lang]
        budget = int(ratio * sum(e.origin == "mgente" and e.lang == lang for e in examples))
        if not balance:
            kept += stable(templated)[:budget]
            continue
        neutral = [e for e in templated if e.label == NEUTRAL]
        gendered = [e for e in templated if e.label != NEUTRAL]
        each = min(budget // 2, len(neutral), len(gendered))
        kept += stable(neutral)[:each] + stable(gendered)[:each]
    return kept


def _deduplicated(examples: Iterable[JudgeExample]) -> tuple[list[JudgeExample], int]:
    """One example per (language, source, translation); a text labelled two ways is dropped (both)."""
    by_item: dict[tuple[str, str, str], list[JudgeExample]] = {}
    for example in examples:
        by_item.setdefault((example.lang, example.source, example.translation), []).append(example)
    kept, conflicts = [], 0
    for group in by_item.values():
        if len({e.label for e in group}) > 1:
            conflicts += len(group)
            continue
        kept.append(group[0])
    return kept, conflicts


@dataclass
class JudgeRows:
    """The judge rows of one build, per side, and what the manifest records about them."""

    rows: dict[str, list[dict[str, Any]]]
    manifest: dict[str, Any]


def build_judge_rows(settings: JudgeRowSettings, langs: Sequence[str], sides: Mapping[str, Sequence[Entry]],
                     source_sides: Mapping[str, str]) -> JudgeRows:
    """Render the judge's training and dev rows from the build's entries of those sides (and distilled judgments).

    ``sides`` holds the build's train/dev entries (mGeNTE and templated) of every loaded language; only the judge
    languages are used. ``source_sides`` maps every source key of the build to its side.
    """
    fmt: JudgeFormat = judge_format(settings.judge_format)
    langs = tuple(langs)
    prompts = {lang: load_prompt(lang, fmt, settings.judge_prompts_dir, n_exemplars=0) for lang in langs}
    distilled = distilled_examples(settings.judge_distill, source_sides, fmt.cross)
    rows: dict[str, list[dict[str, Any]]] = {}
    counts: dict[str, Any] = {}
    for side in ("train", "dev"):
        # distinct texts first, so the templated sample's labels stay as balanced as it was drawn
        examples, conflicts = _deduplicated(entry_examples((e for e in sides.get(side, ()) if e.lang in langs),
                                                           settings.judge_templated_adjective_swaps,
                                                           settings.judge_templated_genderless_rewrites))
        examples = _capped_templated(examples, settings.judge_templated_ratio, settings.judge_templated_balance)
        examples, distilled_conflicts = _deduplicated(examples + [e for e in distilled[side] if e.lang in langs])
        conflicts += distilled_conflicts
        rendered = [render_row(e, prompts[e.lang]) for e in examples]
        rows[side] = [r for r in rendered if r is not None]
        counts[side] = {
            "rows": len(rows[side]),
            "by_label": dict(sorted(Counter(r["label"] for r in rows[side]).items())),
            "by_origin": dict(sorted(Counter(r["origin"] for r in rows[side]).items())),
            "by_lang": dict(sorted(Counter(r["lang"] for r in rows[side]).items())),
            "dropped_conflicting_labels": conflicts,
            "dropped_without_phrases": sum(r is None for r in rendered),
        }
    return JudgeRows(rows, {
        "format": fmt.name,
        "labels": list(fmt.labels),
        # the reply of each label (L formats): where they first differ is the token a judge's training weighs
        "replies": {label: render_reply(project({"label": label}, fmt)) for label in fmt.labels} if not fmt.phrases
        else None,
        "langs": list(langs),
        "prompts_dir": settings.judge_prompts_dir,
        "prompt_fingerprints": {lang: p.fingerprint for lang, p in prompts.items()},
        "distilled_from": list(settings.judge_distill),
        "counts": counts,
        "files": {**ROW_FILES, "references": REFERENCES_FILE, "dev_references": DEV_REFERENCES_FILE},
        "settings": asdict(settings),
    })


def write_rows(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


@dataclass
class JudgeRowsExtra:
    """The judge's rows as an extra of a data build (:class:`gnt.data.build.BuildExtra`): ``judge/{train,dev}.jsonl``
    and the held-out references it is validated on (every judge language's test entries)."""

    settings: JudgeRowSettings
    build_langs: tuple[str, ...] = LANGUAGES
    name: str = "judge"

    @property
    def langs(self) -> tuple[str, ...]:
        return tuple(self.settings.judge_langs or self.build_langs)

    def write(self, parts: Any, out: Path) -> dict[str, Any]:
        built = build_judge_rows(self.settings, self.langs, parts.sides, parts.source_sides)
        for side, file in ROW_FILES.items():
            write_rows(out / file, built.rows[side])
        for side, file in (("test", REFERENCES_FILE), ("dev", DEV_REFERENCES_FILE)):
            entries = [e for e in parts.sides[side] if e.lang in self.langs and e.origin != "templated"]
            write_rows(out / file, (e.to_record() for e in entries))
            key = "references" if side == "test" else "dev_references"
            built.manifest["counts"][key] = dict(sorted(Counter(e.lang for e in entries).items()))
        built.manifest["source_keys"] = {
            side: sorted({r["source_key"] for r in built.rows[side]}) for side in ROW_FILES}
        return built.manifest
