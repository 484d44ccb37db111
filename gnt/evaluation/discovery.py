"""Which models a sweep evaluates: the base model and every ``checkpoint-*`` adapter of the given runs.

A training run folder holds ``gnt_run.json`` (base model, data build, training source keys) and Trainer
``checkpoint-<step>/`` folders, each a PEFT adapter with a copy of the run record carrying its ``global_step``.
Explicit adapter folders are accepted too (their run record, if any, is read from the folder or its parent).

Names are the results layout (``<out>/<name>/``), so they are filesystem-safe and stable:

- ``base`` for the base model (``base-<model name>`` when a sweep spans several base models);
- ``<run folder name>/checkpoint-<step>`` for a run's checkpoints, and ``<run folder name>/final`` for the adapter
  saved at the run's root when it differs from every checkpoint;
- ``<parent folder name>/<folder name>`` for an explicit adapter.

Each path component keeps only ``[A-Za-z0-9._-]`` (anything else becomes ``_``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from gnt.filenames import RUN_RECORD
from gnt.generation.base import Adapter
from gnt.generation.identity import adapter_weights_hash, is_adapter_dir
from gnt.recipe import RecipeError
from gnt.results_schema import ModelDescription, ModelKind

_CHECKPOINT = re.compile(r"^checkpoint-(\d+)$")


def safe_component(text: str) -> str:
    """One filesystem-safe path component."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "_", text).strip(".") or "_"
    return cleaned


@dataclass
class ModelUnderTest:
    """One model of a sweep: a base model, or a base model plus one adapter."""

    name: str
    base_model: str
    adapter: Adapter | None = None
    kind: ModelKind = "base"
    run_dir: str | None = None
    global_step: int | None = None
    run_record: dict = field(default_factory=dict)

    @property
    def data_dir(self) -> str | None:
        return self.run_record.get("data_dir")

    @property
    def stage(self) -> str:
        """``base``, or the training stage of the adapter's run (``sft``/``dpo``, from its run record), else its
        run folder's name, else ``adapter``: decided here, where the run is known, and written into the record."""
        if self.kind == "base":
            return "base"
        return str(self.run_record.get("stage") or (Path(self.run_dir).name if self.run_dir else "adapter"))

    def describe(self) -> ModelDescription:
        return {
            "name": self.name,
            "kind": self.kind,
            "base_model": self.base_model,
            "adapter": None if self.adapter is None else {
                "name": self.adapter.name, "path": self.adapter.path, "weights_hash": self.adapter.weights_hash,
            },
            "run_dir": self.run_dir,
            "global_step": self.global_step,
            "stage": self.stage,
        }


def read_run_record(folder: Path) -> dict:
    """``gnt_run.json`` of a checkpoint (or of its run folder); empty when there is none."""
    for candidate in (folder / RUN_RECORD, folder.parent / RUN_RECORD):
        if candidate.is_file():
            try:
                return json.loads(candidate.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise RecipeError(f"{candidate}: not valid JSON ({exc})") from None
    return {}


def _global_step(folder: Path, record: dict) -> int | None:
    if isinstance(record.get("global_step"), int):
        return record["global_step"]
    state = folder / "trainer_state.json"
    if state.is_file():
        try:
            return int(json.loads(state.read_text(encoding="utf-8")).get("global_step"))
        except (ValueError, TypeError, json.JSONDecodeError):
            pass
    match = _CHECKPOINT.match(folder.name)
    return int(match.group(1)) if match else None


def _adapter_model(folder: Path, name: str, kind: ModelKind, run_dir: Path | None) -> ModelUnderTest | None:
    """The model of one adapter folder (its run record read first); None when the folder holds no adapter weights."""
    record = read_run_record(folder)
    step = _global_step(folder, record)
    if not is_adapter_dir(folder):
        return None
    base = record.get("base_model")
    if not base:
        config = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
        base = config.get("base_model_name_or_path")
    adapter = Adapter(name=name, path=str(folder.resolve()), weights_hash=adapter_weights_hash(folder))
    return ModelUnderTest(
        name=name, base_model=str(base) if base else "", adapter=adapter, kind=kind,
        run_dir=str(run_dir.resolve()) if run_dir else None, global_step=step, run_record=record,
    )


@dataclass(frozen=True)
class _Candidate:
    """A folder that should hold an adapter, named before anything in it is read: a sweep knows every model
    it will score (and can refuse a bad one) before it opens a single adapter."""

    folder: Path
    name: str
    kind: ModelKind
    run_dir: Path | None = None

    @property
    def final(self) -> bool:
        """The adapter saved at a run's root (kept only when it differs from every checkpoint)."""
        return self.run_dir is not None and self.folder == self.run_dir


def _run_candidates(run_dir: str | Path) -> list[_Candidate]:
    """A run's ``checkpoint-*`` folders by step, then its root (the final adapter, if training saved one there)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise RecipeError(f"run folder not found: {run_dir}")
    run_name = safe_component(run_dir.resolve().name)
    folders = sorted(
        (p for p in run_dir.iterdir() if p.is_dir() and _CHECKPOINT.match(p.name)),
        key=lambda p: int(_CHECKPOINT.match(p.name).group(1)),  # type: ignore[union-attr]
    )
    return [_Candidate(p, f"{run_name}/{p.name}", "checkpoint", run_dir) for p in folders] + [
        _Candidate(run_dir, f"{run_name}/final", "checkpoint", run_dir)]


def adapter_name(path: str | Path) -> str:
    """The name (and results subfolder) of an adapter given explicitly (``adapters=``): its parent's name and its
    own, so that two runs' ``round-1`` folders stay apart."""
    resolved = Path(path).resolve()
    return f"{safe_component(resolved.parent.name)}/{safe_component(resolved.name)}"


def _adapters(candidates: list[_Candidate]) -> list[ModelUnderTest]:
    """The models of ``candidates``: every explicit adapter and at least one checkpoint per run, else one clear
    error; a run's final adapter only when it differs from all of its checkpoints."""
    found = [(c, _adapter_model(c.folder, c.name, c.kind, c.run_dir)) for c in candidates]
    models: list[ModelUnderTest] = []
    for candidate, model in found:
        if model is None and candidate.kind == "adapter":
            raise RecipeError(f"{candidate.folder}: not a PEFT adapter folder (needs adapter_config.json and adapter "
                              "weights)")
        if candidate.final:
            checkpoints = [m for c, m in found if c.run_dir == candidate.run_dir and not c.final]
            if not any(checkpoints):
                incomplete = [c.folder.name for c, m in found if c.run_dir == candidate.run_dir and not c.final]
                extra = f" ({', '.join(incomplete)} hold no adapter weights)" if incomplete else ""
                raise RecipeError(f"{candidate.run_dir}: no checkpoint-*/ adapter folders{extra}; is this a training "
                                  "output folder?")
            hashes = {m.adapter.weights_hash for m in checkpoints if m is not None and m.adapter is not None}
            if model is None or model.adapter is None or model.adapter.weights_hash in hashes:
                continue
        if model is not None:
            models.append(model)
    return models


def run_checkpoints(run_dir: str | Path) -> list[ModelUnderTest]:
    """Every ``checkpoint-*`` adapter of a run, by step (and its final adapter); a clear error when there is none."""
    return _adapters(_run_candidates(run_dir))


def explicit_adapter(path: str | Path) -> ModelUnderTest:
    return _adapters([_Candidate(Path(path), adapter_name(path), "adapter")])[0]


def discover_models(
    runs: list[str], adapters: list[str], model: str | None, include_base: bool = True
) -> list[ModelUnderTest]:
    """The models of one sweep, base model(s) first; ``model`` overrides the base recorded by runs/adapters."""
    from gnt.models.aliases import resolve_model

    tuned = _adapters([c for run in runs for c in _run_candidates(run)]
                      + [_Candidate(Path(path), adapter_name(path), "adapter") for path in adapters])
    for item in tuned:
        if model:
            item.base_model = model
        if not item.base_model:
            raise RecipeError(f"{item.adapter.path}: no base model recorded (gnt_run.json or adapter_config.json); "  # type: ignore[union-attr]
                              "give it with --model")
    names = [m.name for m in tuned]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise RecipeError(f"two adapters would share the results folder {duplicates[0]!r}; rename one run folder")
    for item in tuned:
        item.base_model = resolve_model(item.base_model)
    bases = list(dict.fromkeys(m.base_model for m in tuned)) if tuned else [resolve_model(model)] if model else []
    if not bases:
        raise RecipeError("nothing to evaluate: give --run, --adapter or --model")
    base_models = []
    if include_base or not tuned:
        for base in bases:
            name = "base" if len(bases) == 1 else f"base-{safe_component(Path(base).name)}"
            base_models.append(ModelUnderTest(name=name, base_model=base))
    return base_models + tuned
