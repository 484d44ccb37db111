"""A trained judge: a LoRA adapter of a small model, trained with ``train/sft.py`` on a data build's judge rows.

Such a judge is prompted exactly as its rows were rendered (format, system texts, no exemplars), so before it
judges anything the adapter is checked against the judge recipe: it must exist, have been trained on the recipe's
base model, in the recipe's format and with the same prompt texts. Each mismatch is one clear error: a judge used
with other prompts than it learned would give numbers nobody validated.

One recipe file serves both commands: ``train/sft.py recipes/judge-gemma270m.yaml`` trains the adapter and
``eval/judge.py ... recipes/judge-gemma270m.yaml`` uses it. :func:`judge_recipe_mapping` reads such a training
recipe as a judge recipe: its ``judge:`` section holds the judge's keys, ``judge_model`` defaults to the recipe's
``model_name_or_path`` and ``judge_adapter`` to its ``output_dir``, so where the demo trains the judge is where the
judge finds it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gnt.filenames import RUN_RECORD
from gnt.generation.base import Adapter
from gnt.generation.identity import adapter_weights_hash, is_adapter_dir
from gnt.io import read_json
from gnt.recipe import RecipeError, load_yaml_mapping

TRAINING_KEYS = ("model_name_or_path", "output_dir", "data_dir")
"""Keys that make a recipe file a training recipe (of a judge adapter) rather than a plain judge recipe."""


def judge_recipe_mapping(path: str | Path) -> tuple[dict[str, Any], dict[str, int]]:
    """The judge keys of a recipe file and the line of each: a plain judge recipe as it is, a training recipe's
    ``judge:`` section plus ``judge_model`` (its ``model_name_or_path``) and ``judge_adapter`` (its ``output_dir``)."""
    data, lines = load_yaml_mapping(path)
    if not any(key in data for key in TRAINING_KEYS):
        return data, lines
    section = data.get("judge")
    if not isinstance(section, dict):
        raise RecipeError(f"{path}: a training recipe used as a judge recipe needs a `judge:` section of eval/judge.py "
                          "keys (format, prompts_dir, label_scoring ...); see recipes/judge-gemma270m.yaml")
    keys = {str(k): v for k, v in section.items()}
    at = lines.get("judge", 0)
    keys.setdefault("judge", "llm")
    if "model_name_or_path" in data:
        keys.setdefault("judge_model", data["model_name_or_path"])
    if "output_dir" in data:
        keys.setdefault("judge_adapter", data["output_dir"])
    found = {key: lines.get(key, at) for key in keys}
    found["judge_model"] = lines.get("model_name_or_path", at)
    found["judge_adapter"] = lines.get("output_dir", at)
    return keys, found


def _run_record(folder: Path) -> dict[str, Any]:
    for candidate in (folder / RUN_RECORD, folder.parent / RUN_RECORD):
        if candidate.is_file():
            try:
                record = read_json(candidate)
            except (OSError, ValueError) as exc:
                raise RecipeError(f"{candidate}: not a readable run record ({exc})") from None
            return record if isinstance(record, dict) else {}
    return {}


def _same_model(recorded: str, wanted: str) -> bool:
    if recorded == wanted:
        return True
    a, b = Path(recorded).expanduser(), Path(wanted).expanduser()
    return a.exists() and b.exists() and a.resolve() == b.resolve()


def judge_adapter(path: str | Path, judge_model: str, *, recipe: str | None = None) -> tuple[Adapter, dict[str, Any]]:
    """The adapter at ``path`` and its run record, or one error saying what is wrong and how to get a good one.

    ``judge_model`` is the resolved base model folder or hub id the judge loads.
    """
    folder = Path(path)
    train = f"python train/sft.py {recipe or 'recipes/judge-gemma270m.yaml'}"
    if not is_adapter_dir(folder):
        what = "does not exist" if not folder.exists() else "holds no trained adapter (adapter_config.json + weights)"
        raise RecipeError(f"judge_adapter={path} {what}: train the judge first (`{train}`) or point judge_adapter "
                          "at its output folder")
    record = _run_record(folder)
    base = record.get("base_model")
    if not base:
        config = read_json(folder / "adapter_config.json")
        base = config.get("base_model_name_or_path") if isinstance(config, dict) else None
    spec = str(record.get("base_model_spec") or "")
    if base and not (_same_model(str(base), judge_model) or (spec and _same_model(spec, judge_model))):
        raise RecipeError(f"judge_adapter={path} was trained on the base model {spec or base}, not on judge_model "
                          f"({judge_model}): a LoRA adapter only works on the model it was trained on")
    resolved = folder.resolve()
    adapter = Adapter(name=f"judge/{resolved.parent.name}/{resolved.name}", path=str(resolved),
                      weights_hash=adapter_weights_hash(folder))
    return adapter, record


def check_trained_prompts(record: dict[str, Any], fmt: str, fingerprints: dict[str, str], path: str) -> list[str]:
    """Refuse a judge recipe whose format or prompt texts differ from those the adapter's rows were rendered with
    (the adapter's run record keeps what the data build recorded about its rows); returns the languages of
    ``fingerprints`` the adapter never saw (judged, but worth a warning)."""
    rows = record.get("rows_manifest") or {}
    if not rows:
        return []  # an adapter trained elsewhere: nothing recorded to compare against
    if rows.get("format") and rows["format"] != fmt:
        raise RecipeError(f"judge_adapter={path} was trained on {rows['format']} rows, not format={fmt}: set "
                          f"format: {rows['format']} (or retrain on rows built with judge_format={fmt})")
    trained = rows.get("prompt_fingerprints") or {}
    changed = sorted(lang for lang, fp in fingerprints.items() if lang in trained and trained[lang] != fp)
    if changed:
        raise RecipeError(f"judge_adapter={path} learned other prompt texts for {', '.join(changed)} than this recipe "
                          f"gives (prompts_dir, n_exemplars): use the ones it was trained with "
                          f"({rows.get('prompts_dir')}, no exemplars) or retrain it")
    return sorted(lang for lang in fingerprints if trained and lang not in trained)
