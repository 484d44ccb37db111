"""Build all training and evaluation data of a run from mGeNTE (sample, TSV or hub) plus templated inputs.

Output directory layout (written atomically: a failed build leaves nothing behind)::

    sft/train.jsonl  sft/dev.jsonl          TRL conversational prompt–completion rows
    dpo/train.jsonl  dpo/dev.jsonl          TRL conversational preference rows with a ``kind``
    dpo/test.jsonl                          preference pairs of the held-out entries (preference accuracy)
    eval/mgente_test.jsonl                  held-out mGeNTE entries (the evaluator's rows)
    eval/mgente_dev.jsonl                   dev mGeNTE entries (for choosing settings, never the test rows)
    eval/templated_{test,dev}.jsonl         held-out templated entries, scorable in the grid's format
    eval/{mgente,templated}_train.jsonl     the training entries with their references (on-policy alignment's prompts)
    eval/templated_suite.jsonl              held-out templated pairs (the sensitivity suite)
    manifest.json                           counts, seeds, input hashes, ids and source keys per split
    .gnt-data-build                         marker: the files this build wrote (what a rebuild may replace)

Rows for other consumers (the judge's training rows, ``judge/``) are written by a :class:`BuildExtra` the command
hands in: the data layer splits and writes, the layer that owns a row format renders it.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from tqdm.auto import tqdm

from gnt.data.entry import LANGUAGES, source_key
from gnt.data.errors import DataError
from gnt.data.mgente import load_mgente
from gnt.data.splits import SPLITS, Split, check_no_leak, split_entries
from gnt.data.training_rows import DPO_KINDS, TrainingPrompts, dpo_rows, sft_rows
from gnt.filenames import MANIFEST
from gnt.io import atomic_directory, read_json, sha256_file, write_json
from gnt.output_folder import check_output_folder
from gnt.paths import JUDGE_DIR, SAMPLE_DIR
from gnt.prompts.grid import CONFIGS, SHOT_COUNTS, PromptGrid
from gnt.records import environment_record

if TYPE_CHECKING:
    from gnt.data.templated import TemplatedPair

MARKER = ".gnt-data-build"
"""Written into every build's output folder, listing the files the build wrote: the build replaces an existing
``out_dir`` only when this marker is there and the folder holds nothing else (a user's files are never deleted)."""


@dataclass
class BuildConfig:
    """Everything a data build depends on; saved in the manifest. These fields are also the keys of
    ``data/build.py`` (``gnt build``): each default and meaning is written here once."""

    out_dir: str = field(default="outputs/data", metadata={
        "help": "output folder; replaced as a whole, and only if an earlier build wrote it (never a user's files)"})
    mgente: str = field(default=str(SAMPLE_DIR), metadata={
        "help": "mGeNTE: a folder of en-xx.tsv files, one TSV, or a hub id (FBK-MT/mGeNTE, gated: log in first)"})
    langs: tuple[str, ...] = field(default=LANGUAGES, metadata={"help": "target languages (comma-separated)"})
    seed: int = field(default=0, metadata={"help": "seed of the splits, the templated pairs and the prompt draws"})
    test_fraction: float = field(default=0.2, metadata={
        "help": "share of English sources held out for evaluation, in [0, 1)"})
    dev_fraction: float = field(default=0.1, metadata={"help": "share of English sources kept for dev, in [0, 1)"})
    align_fraction: float = field(default=0.0, metadata={
        "help": "share of English sources kept out of SFT and the preference rows for on-policy alignment to "
                "sample (train/onpolicy.py prompt_split=align), in [0, 1); 0: none"})
    templated_pairs: int = field(default=400, metadata={"help": "templated pairs to generate (0: none)"})
    templated_dev_pairs: int = field(default=0, metadata={
        "help": "more templated pairs for the dev side only, to tell settings apart on more rows: one per language, "
                "template and dev adjective that the sample left out (its gender drawn with the seed); training "
                "rows and the judge's rows do not change (0: none)"})
    dpo_kinds: tuple[str, ...] = field(default=DPO_KINDS, metadata={
        "help": f"kinds of preference pairs to write (comma-separated; known: {', '.join(DPO_KINDS)})"})
    train_configs: tuple[str, ...] = field(default=CONFIGS, metadata={
        "help": "prompt configurations training prompts are drawn from"})
    train_shots: tuple[int, ...] = field(default=SHOT_COUNTS, metadata={
        "help": "shot counts training prompts are drawn from"})
    prompts_dir: str | None = field(default=None, metadata={
        "help": "prompt texts: a folder with common.yaml and {lang}.yaml, or the mGeNTE release's "
                "prompt_en-{lang}.yaml files (null: the bundled data/prompts)"})
    judge_exemplars_dir: str | None = field(default=str(JUDGE_DIR / "exemplars"), metadata={
        "help": "folder of the judge's {lang}.jsonl exemplars, whose sources are kept out of every split"})
    progress: bool = field(default=True, metadata={"help": "show progress bars"})
    extra: dict = field(default_factory=dict)

    def validate(self) -> BuildConfig:
        """Refuse settings that would build something useless, with the key and the valid values named."""
        bad = [lang for lang in self.langs if lang not in LANGUAGES]
        if bad:
            raise DataError(f"langs: unknown language(s) {bad}; valid: {', '.join(LANGUAGES)}")
        if not self.langs:
            raise DataError(f"langs selects no language; valid: {', '.join(LANGUAGES)}")
        for key in ("test_fraction", "dev_fraction", "align_fraction"):
            if not 0 <= getattr(self, key) < 1:
                raise DataError(f"{key} {getattr(self, key)} must be in [0, 1)")
        if self.test_fraction + self.dev_fraction + self.align_fraction >= 1:
            raise DataError("test_fraction + dev_fraction + align_fraction must stay below 1 (no room left for "
                            "training rows)")
        for key in ("templated_pairs", "templated_dev_pairs"):
            if getattr(self, key) < 0:
                raise DataError(f"{key} {getattr(self, key)} must be 0 (none) or a positive count")
        if self.templated_dev_pairs and not (self.templated_pairs and self.dev_fraction):
            raise DataError("templated_dev_pairs adds pairs of the dev side's templated adjectives: it needs "
                            "templated_pairs > 0 and dev_fraction > 0")
        unknown = [kind for kind in self.dpo_kinds if kind not in DPO_KINDS]
        if unknown or not self.dpo_kinds:
            raise DataError(f"dpo_kinds: unknown kind(s) {unknown or list(self.dpo_kinds)}; valid: {', '.join(DPO_KINDS)}")
        _check_train_cells(self)
        return self


@dataclass(frozen=True)
class BuildParts:
    """What a build split, handed to its extras: every loaded entry by side (all languages the build and its
    extras loaded), and each source key's side."""

    sides: dict[str, list]
    source_sides: dict[str, str]


class BuildExtra(Protocol):
    """Rows a build writes for another consumer, in that consumer's format (e.g. the judge's training rows).

    ``langs`` are languages to load and split beside the build's own (one English source stays on one side for
    every language); ``write`` renders the extra's files into the build's folder before it is swapped in and
    returns what the manifest records about them under ``name``. It may raise DataError: nothing is written.
    """

    name: str
    langs: tuple[str, ...]

    def write(self, parts: BuildParts, out: Path) -> dict: ...


def judge_exemplar_sources(directory: str | Path | None, langs: Iterable[str]) -> dict[str, str]:
    """Source keys of the judge's exemplars (``{lang}.jsonl`` with a ``source`` field): excluded from all splits."""
    if not directory or not Path(directory).is_dir():
        return {}
    keys = {}
    for lang in langs:
        path = Path(directory) / f"{lang}.jsonl"
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    try:
                        keys[source_key(json.loads(line)["source"])] = "judge exemplar"
                    except (json.JSONDecodeError, KeyError):
                        continue  # the judge loader reports malformed exemplars; here we only need sources
    return keys


def _input_hashes(config: BuildConfig) -> dict[str, str]:
    """Content hashes of every input file the build read (so a run record pins its data exactly)."""
    hashes = {}
    source = Path(config.mgente)
    files = sorted(source.rglob("*.tsv")) if source.is_dir() else [source] if source.is_file() else []
    for path in files:
        hashes[str(path)] = sha256_file(path)
    if not files:
        hashes[config.mgente] = "hub"
    return hashes


def _counts(rows: list[dict], *keys: str) -> dict[str, int]:
    return dict(sorted(Counter("/".join(str(r[k]) for k in keys) for r in rows).items()))


def build_dataset(config: BuildConfig, extras: Sequence[BuildExtra] = ()) -> dict:
    """Build everything into ``config.out_dir``; return the manifest. Raises DataError(s) before writing anything.

    ``extras`` add rows in other formats (:class:`BuildExtra`); their languages are loaded and split with the
    build's own, so an extra's rows never hold a source another side of the build holds."""
    started = time.perf_counter()
    config.validate()
    langs = tuple(config.langs)
    loaded = tuple(dict.fromkeys((*langs, *(lang for extra in extras for lang in extra.langs))))
    check_replaceable(config)
    all_entries = load_mgente(config.mgente, loaded)
    grid = PromptGrid(langs, config.prompts_dir, seed=config.seed)
    excluded = {key: "prompt demonstration" for key in grid.demonstration_keys()}
    excluded.update(judge_exemplar_sources(config.judge_exemplars_dir, loaded))
    fractions = {"test_fraction": config.test_fraction, "dev_fraction": config.dev_fraction,
                 "align_fraction": config.align_fraction}
    every = split_entries(all_entries, config.seed, excluded_sources=excluded, **fractions)
    check_no_leak(every)
    split = Split(*([e for e in every.side(side) if e.lang in langs] for side in SPLITS),
                  [(e, why) for e, why in every.excluded if e.lang in langs])

    templated = Split()
    every_templated = Split()
    pairs = []
    pairs_added_to_dev = 0
    notes: list[str] = []
    if config.templated_pairs:
        from gnt.data.templated import generate_pairs, pairs_to_entries

        pairs = generate_pairs(langs, max_pairs=config.templated_pairs, seed=config.seed)
        if len(pairs) < config.templated_pairs:
            notes.append(f"templated_pairs={config.templated_pairs} asks for more pairs than the templates give for "
                         f"{', '.join(langs)}: all {len(pairs)} written")
        templated = split_entries(pairs_to_entries(pairs), config.seed, **fractions)
        every_templated = templated
        if set(loaded) != set(langs):  # the extras' languages get as many pairs each as the build's own
            more = tuple(lang for lang in loaded if lang not in langs)
            extra_pairs = generate_pairs(more, max_pairs=config.templated_pairs * len(more) // len(langs),
                                         seed=config.seed)
            every_templated = split_entries(pairs_to_entries([*pairs, *extra_pairs]), config.seed, **fractions)
        if config.templated_dev_pairs:  # the translator's dev side only: the extras above keep the sampled pairs
            dev_pairs = more_dev_pairs(pairs, langs, config.templated_dev_pairs, config.seed, fractions)
            if len(dev_pairs) < config.templated_dev_pairs:
                notes.append(f"templated_dev_pairs={config.templated_dev_pairs} asks for more pairs than the dev "
                             f"adjectives give: all {len(dev_pairs)} written")
            templated = replace(templated, dev=templated.dev + pairs_to_entries(dev_pairs))
            pairs_added_to_dev = len(dev_pairs)

    prompts = TrainingPrompts(grid, config.seed, config.train_configs, config.train_shots)
    rows: dict[str, dict[str, list[dict]]] = {"sft": {}, "dpo": {}}
    for side in ("train", "dev", "test"):
        side_entries = split.side(side) + templated.side(side)
        if side != "test":  # SFT rows of the test side would only be a temptation
            rows["sft"][side] = list(sft_rows(side_entries, prompts))
        rows["dpo"][side] = list(
            dpo_rows(tqdm(side_entries, desc=f"rows ({side})", unit="entry", disable=not config.progress),
                     prompts, config.dpo_kinds)
        )
    # the align side's prompts, rendered as its SFT rows would be, for on-policy sampling only: no trainer reads
    # this folder (its targets are there because a prompt row is an SFT row without a trainer)
    align_prompts = list(sft_rows(split.align + templated.align, prompts))

    manifest = _manifest(config, split, templated, rows, started)
    manifest["counts"]["templated_pairs"] = {"asked": config.templated_pairs, "written": len(pairs),
                                             "dev_added": pairs_added_to_dev}
    manifest["counts"]["onpolicy_prompts"] = {"align": _counts(align_prompts, "lang", "set")}
    manifest["notes"] = notes
    parts = BuildParts(
        {side: every.side(side) + every_templated.side(side) for side in SPLITS},
        {e.source_key: side for side in SPLITS for e in every.side(side) + every_templated.side(side)},
    )
    with atomic_directory(config.out_dir) as tmp:
        for extra in extras:
            manifest[extra.name] = extra.write(parts, tmp)
        for kind in ("sft", "dpo"):
            for side, side_rows in rows[kind].items():
                _write_lines(tmp / kind / f"{side}.jsonl", side_rows)
        if align_prompts:
            _write_lines(tmp / "onpolicy" / "align.jsonl", align_prompts)
        for side in SPLITS:  # train or align: the entries on-policy alignment samples for
            if side == "align" and not config.align_fraction:
                continue
            _write_lines(tmp / "eval" / f"mgente_{side}.jsonl", [e.to_record() for e in split.side(side)])
            _write_lines(tmp / "eval" / f"templated_{side}.jsonl", [e.to_record() for e in templated.side(side)])
        if pairs:
            from gnt.data.templated import write_suite

            held_out = {e.meta.get("pair_id") for e in templated.test}
            write_suite([p for p in pairs if p.pair_id in held_out], tmp / "eval" / "templated_suite.jsonl")
        write_json(tmp / MANIFEST, manifest)
        files = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
        write_json(tmp / MARKER, {"format": "gnt-align/data-build-marker/1", "files": files})
    return manifest


def more_dev_pairs(sampled: Sequence[TemplatedPair], langs: Sequence[str], count: int, seed: int,
                   fractions: dict[str, float]) -> list[TemplatedPair]:
    """Up to ``count`` templated pairs of the dev side beyond ``sampled``, each with an ambiguous (Set-N) source
    that no sampled pair has.

    A templated group is one adjective, so a pair of a dev adjective is dev whatever else is built, and no
    training or test source can be among them. Both genders of a language, template and adjective share one
    ambiguous source: one gender is drawn per combination, so the extra Set-N rows are all distinct.
    """
    from gnt.data.templated import generate_pairs, pairs_to_entries

    taken = {(p.lang, p.ambiguous_source) for p in sampled}
    candidates = [p for p in generate_pairs(langs, seed=seed) if (p.lang, p.ambiguous_source) not in taken]
    dev_ids = {e.meta["pair_id"] for e in split_entries(pairs_to_entries(candidates), seed, **fractions).dev}
    by_source: dict[tuple[str, str], list[TemplatedPair]] = {}
    for pair in candidates:
        if pair.pair_id in dev_ids:
            by_source.setdefault((pair.lang, pair.ambiguous_source), []).append(pair)
    rng = random.Random(seed)
    one_each = [rng.choice(group) for _, group in sorted(by_source.items())]
    chosen = one_each if count >= len(one_each) else rng.sample(one_each, count)
    return sorted(chosen, key=lambda p: p.pair_id)


def _check_train_cells(config: BuildConfig) -> None:
    """Unknown or empty training cells are input errors, reported before anything is built."""
    bad = [c for c in config.train_configs if c not in CONFIGS]
    bad += [str(s) for s in config.train_shots if s not in SHOT_COUNTS]
    if bad or not config.train_configs or not config.train_shots:
        raise DataError(
            f"training cells: unknown or empty {', '.join(map(repr, bad)) or 'selection'}; configurations are "
            f"{', '.join(CONFIGS)} and shot counts {', '.join(map(str, SHOT_COUNTS))}"
        )


LEGACY_FILES = ("sft/train.jsonl", "sft/dev.jsonl", "dpo/train.jsonl", "dpo/dev.jsonl", "eval/mgente_test.jsonl",
                "eval/templated_suite.jsonl", MANIFEST)
"""What builds made before the marker existed wrote: such a folder (recognised by its manifest) is still ours."""


def _legacy_build(out: Path) -> bool:
    try:
        return read_json(out / MANIFEST).get("format") == "gnt-align/data/1"
    except (OSError, ValueError, AttributeError):
        return False


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def check_replaceable(config: BuildConfig) -> None:
    """Refuse an ``out_dir`` that holds an input or anything the build did not write itself, before any work.

    The build swaps its output folder in whole, so replacing a folder of the user's (``out_dir=.``, ``out_dir=runs``,
    the mGeNTE folder itself) would delete their files. Only a folder carrying the build's marker, with no file
    beside those the marker lists, is replaced; an empty folder is filled.
    """
    out = Path(config.out_dir).resolve()
    inputs = [("mgente", config.mgente), ("prompts_dir", config.prompts_dir),
              ("judge_exemplars_dir", config.judge_exemplars_dir)]
    for flag, value in inputs:
        if value and Path(value).exists() and _inside(Path(value).resolve(), out):
            raise DataError(f"out_dir={config.out_dir} contains the input {flag}={value}; the build replaces its output "
                            "folder whole, so write it elsewhere (e.g. out_dir=outputs/data)")
    check_output_folder(config.out_dir, "data", "out_dir", replaced_whole=True)  # the rule every writer follows
    if not out.exists():
        return
    present = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() or p.is_symlink()}
    if not present and not any(out.iterdir()):
        return
    marker = out / MARKER
    listed = None
    if marker.is_file():
        try:
            listed = set(read_json(marker)["files"])
        except (ValueError, KeyError, TypeError):
            listed = None
    elif _legacy_build(out):
        listed = set(LEGACY_FILES)
    if listed is None:
        raise DataError(f"out_dir={config.out_dir} already exists and was not written by data/build.py (its {MARKER} "
                        "marker is unreadable); the build replaces its output folder whole, so choose a new out_dir "
                        "or move that folder away yourself")
    foreign = sorted(present - listed - {MARKER})
    if foreign:
        more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
        raise DataError(f"out_dir={config.out_dir} holds files the build did not write ({', '.join(foreign[:3])}{more}); "
                        "rebuilding would delete them: move them out or choose a new out_dir")


def _write_lines(path: Path, records: list[dict]) -> None:
    """Plain (non-atomic) JSONL write: the whole directory is swapped in atomically at the end."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def _manifest(config: BuildConfig, split: Split, templated: Split, rows: dict, started: float) -> dict:
    mgente_ids = {side: sorted(e.id for e in split.side(side)) for side in SPLITS}
    keys = {
        side: sorted({e.source_key for e in split.side(side) + templated.side(side)}) for side in SPLITS
    }
    return {
        "format": "gnt-align/data/1",
        "config": asdict(config),
        "inputs": _input_hashes(config),
        "counts": {
            "mgente": {side: _counts([e.to_record() for e in split.side(side)], "lang", "set") for side in SPLITS},
            "templated": {side: _counts([e.to_record() for e in templated.side(side)], "lang", "set") for side in SPLITS},
            "excluded": dict(Counter(reason for _, reason in split.excluded)),
            "sft": {side: _counts(r, "lang", "set") for side, r in rows["sft"].items()},
            "dpo": {side: _counts(r, "lang", "kind") for side, r in rows["dpo"].items()},
            "totals": {f"{kind}/{side}": len(r) for kind in ("sft", "dpo") for side, r in rows[kind].items()},
        },
        "ids": {**mgente_ids, "excluded": sorted(e.id for e, _ in split.excluded)},
        "source_keys": keys,
        "templated_adjectives": {
            side: sorted({e.meta.get("adjective", "") for e in templated.side(side)}) for side in SPLITS
        },
        "environment": environment_record(),
        "seconds": round(time.perf_counter() - started, 3),
    }
