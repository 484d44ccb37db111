"""The rows a sweep evaluates: a run's held-out test rows, or the whole of mGeNTE for a base-only sweep.

Checkpoints are scored on the held-out mGeNTE rows of the data build they were trained from
(``<data_dir>/eval/mgente_test.jsonl``), and the base model on the same rows, so every comparison is paired.
Without runs, rows come from mGeNTE itself (``mgente``: a folder/TSV or the hub id), minus the prompt
demonstrations and judge exemplars, which are excluded from evaluation (docs/prompt-grid.md, docs/judge.md).
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gnt.data.entry import Entry
from gnt.evaluation.config import EvalConfig
from gnt.evaluation.discovery import ModelUnderTest
from gnt.evaluation.preference import pairs_path, select_pairs
from gnt.filenames import DRAWN_FROM, MANIFEST
from gnt.io import hash_json, read_json, read_json_or_none, read_jsonl, sha256_file
from gnt.paths import JUDGE_DIR
from gnt.prompts.grid import PromptGrid
from gnt.recipe import RecipeError

log = logging.getLogger("gnt.evaluation")

TEST_ROWS = Path("eval") / "mgente_test.jsonl"


@dataclass(frozen=True)
class HeldOut:
    """Everything a sweep reads from where its rows come from, read in one place before anything is decided.

    ``info`` describes the rows for the run record; ``guarded_keys`` are the source keys the leakage guard checks
    (a data build's own dev keys are left out when the dev side is scored: the build keeps them apart from its
    training keys, and run records list them as seen for the validation loss); ``pairs`` are the held-out
    preference pairs (``preference: true``; only a data build has them).
    """

    entries: tuple[Entry, ...]
    info: dict[str, Any]
    guarded_keys: frozenset[str]
    pairs: tuple[dict, ...] = ()


def split_rows(split: str, origin: str = "mgente") -> Path:
    """A data build's held-out entries of one side (``test``/``dev``) and origin (``mgente``/``templated``)."""
    return Path("eval") / f"{origin}_{split}.jsonl"


def drawn_from(folder: Path) -> Path | None:
    """The build a derived data folder names as its source (``drawn_from`` in its manifest): an on-policy round's
    pairs folder holds the model's own samples, not held-out rows."""
    manifest = read_json_or_none(folder / MANIFEST)
    build = manifest.get(DRAWN_FROM) if isinstance(manifest, dict) else None
    return Path(build) if isinstance(build, str) else None


def held_out_identity(data_dir: Path, split: str, origins: Sequence[str], preference: bool) -> str:
    """What a sweep reads from a data build, as one hash: the held-out rows of ``split`` per origin, the build's dev
    keys and (``preference``) its held-out pairs. Runs whose builds agree on it are scored on the same rows wherever
    the builds lie: a copied or moved outputs folder (a run record keeps the absolute path it was trained from)
    is the same build, not another one."""
    manifest = read_json_or_none(data_dir / MANIFEST)
    keys = manifest.get("source_keys", {}).get(split, []) if isinstance(manifest, dict) and split == "dev" else []
    files = [data_dir / split_rows(split, origin) for origin in origins]
    if preference:
        files.append(pairs_path(data_dir, split))
    parts = {str(f.relative_to(data_dir)): sha256_file(f) if f.is_file() else None for f in files}
    return hash_json({"files": parts, "dev_keys": keys})


def _resolve_data_dir(model: ModelUnderTest) -> Path:
    raw = Path(model.data_dir)  # type: ignore[arg-type]
    candidates = [raw] if raw.is_absolute() else [raw, Path(model.run_dir or ".") / raw, Path(model.run_dir or ".").parent / raw]
    for candidate in candidates:
        if (candidate / TEST_ROWS).is_file():
            return candidate.resolve()
        source = drawn_from(candidate)
        if source is not None and (source / TEST_ROWS).is_file():
            return source.resolve()
    raise RecipeError(f"{model.name}: its data build {raw} has no {TEST_ROWS} (looked in {', '.join(map(str, candidates))})")


def limit_per_lang(entries: list[Entry], n: int | None) -> list[Entry]:
    """The first ``n`` rows of each language, half Set-G and half Set-N where possible (file order kept)."""
    if n is None:
        return entries
    by_lang_set: dict[tuple[str, str], list[Entry]] = defaultdict(list)
    for entry in entries:
        by_lang_set[(entry.lang, entry.set)].append(entry)
    chosen: set[int] = set()
    for lang in dict.fromkeys(e.lang for e in entries):
        gendered, neutral = by_lang_set[(lang, "Set-G")], by_lang_set[(lang, "Set-N")]
        take_g = min(len(gendered), max((n + 1) // 2, n - len(neutral)))
        take_n = min(len(neutral), n - take_g)
        chosen.update(id(e) for e in gendered[:take_g] + neutral[:take_n])
    return [e for e in entries if id(e) in chosen]


def load_rows(config: EvalConfig, models: list[ModelUnderTest]) -> HeldOut:
    """Evaluated entries (selected languages), where they came from, the keys to guard and the held-out pairs."""
    langs = set(config.langs)
    dev_keys: list[str] = []
    pairs: list[dict] | None = None
    if config.mgente:
        from gnt.data.build import judge_exemplar_sources
        from gnt.data.mgente import load_mgente

        excluded = PromptGrid(config.langs, config.prompts_dir).demonstration_keys() | set(judge_exemplar_sources(JUDGE_DIR / "exemplars", config.langs))
        loaded = load_mgente(config.mgente, tuple(config.langs))  # type: ignore[arg-type]
        entries = [e for e in loaded if e.source_key not in excluded]
        info: dict[str, Any] = {"source": str(config.mgente), "excluded_demos_and_exemplars": len(loaded) - len(entries)}
    else:
        data_dirs = sorted({str(_resolve_data_dir(m)) for m in models if m.adapter is not None and m.data_dir})
        if not data_dirs:
            raise RecipeError(
                "no rows to evaluate: the models name no data build; give mgente= (a folder, a TSV or FBK-MT/mGeNTE)"
            )
        origins = ("mgente", "templated") if config.templated_rows else ("mgente",)
        builds: dict[str, list[str]] = defaultdict(list)
        for found in data_dirs:
            builds[held_out_identity(Path(found), config.split, origins, config.preference)].append(found)
        if len(builds) > 1:
            raise RecipeError(
                f"the runs were trained on different data builds ({'; '.join(' = '.join(d) for d in builds.values())}"
                f"): their held-out {config.split} rows differ; evaluate them in separate sweeps, or give mgente= to "
                "score all on the same rows"
            )
        data_dir = Path(data_dirs[0])
        pairs_file = pairs_path(data_dir, config.split)
        entries, files = [], {}
        for origin in origins:
            path = data_dir / split_rows(config.split, origin)
            if not path.is_file():
                raise RecipeError(
                    f"{path} is missing: the data build predates split={config.split}"
                    f"{' and templated_rows' if origin == 'templated' else ''}; rebuild it with data/build.py"
                )
            entries += [e for e in (Entry.from_record(r) for r in read_jsonl(path)) if e.lang in langs]
            files[str(path)] = sha256_file(path)
        if config.split == "dev":
            dev_keys = read_json(data_dir / MANIFEST).get("source_keys", {}).get("dev", [])
        if config.preference:
            pairs = read_jsonl(pairs_file) if pairs_file.is_file() else []
        info = {"source": str(data_dir / split_rows(config.split)), "sha256": files[str(data_dir / split_rows(config.split))],
                "data_dir": str(data_dir), "split": config.split, "files": files}
        if len(data_dirs) > 1:
            info["same_rows_in"] = data_dirs[1:]
    entries = limit_per_lang(entries, config.rows_per_lang)
    if not entries:
        raise RecipeError(f"no rows for languages {', '.join(config.langs)} in {info['source']}")
    counts: dict[str, int] = defaultdict(int)
    for entry in entries:
        counts[f"{entry.lang}/{entry.set}"] += 1
    info["counts"] = dict(sorted(counts.items()))
    info["rows_per_lang"] = config.rows_per_lang
    guarded = frozenset(e.source_key for e in entries) - frozenset(dev_keys)
    return HeldOut(tuple(entries), info, guarded, tuple(_preference_pairs(config, info, pairs)))


def _preference_pairs(config: EvalConfig, info: dict[str, Any], pairs: list[dict] | None) -> list[dict]:
    """The held-out preference pairs to score (``preference: true``), from the runs' data build."""
    if not config.preference:
        return []
    if pairs is None:
        log.warning("preference: needs the runs' data build (held-out DPO pairs); not computed for --mgente rows")
        return []
    selected = select_pairs(pairs, config.langs, config.preference_pairs_per_kind)
    if not selected:
        log.warning("preference: %s has no dpo/%s.jsonl pairs for %s; rebuild it with data/build.py",
                    info["data_dir"], config.split, ",".join(config.langs))
    return selected
