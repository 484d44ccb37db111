"""Model cards: a Hugging Face ``README.md`` in every adapter folder a training run writes, saying what it is.

TRL and PEFT leave a generic card in a run's folders ("This model is a fine-tuned version of [None]"). A published
adapter should say what it does: its base model, the data build it was trained on (the manifest's sha256), the
recipe, how to load it, and, once an evaluation has scored it, its GNT metrics. So:

- at the end of training the runner calls :func:`write_run_cards`, which writes the card of the run folder and of
  every ``checkpoint-N/`` from that folder's ``gnt_run.json`` (the run record is the single source);
- the report step calls :func:`record_evaluation_in_cards` for the results folder it reported: every evaluated
  adapter that gnt trained gets that evaluation's metrics as ``model-index`` results (and so does its run folder when
  it holds the same weights as the evaluated checkpoint).

The card is rendered whole each time from the run record and the card's own results, so rewriting it at the end of
a resumed or extended run keeps what an evaluation added. A folder whose ``README.md`` gnt did not write (no
``gnt-align`` tag) is left alone by the evaluation: it may be the user's own card. The format is the Hub's: YAML front
matter (``base_model``, ``library_name: peft``, ``tags``, ``datasets``, ``language``, ``license`` where the base
model's is known, ``model-index``), built and parsed with ``huggingface_hub``'s ``ModelCard``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gnt.filenames import RECORD, RUN_RECORD
from gnt.io import read_json_or_none, write_text_atomic
from gnt.paths import SAMPLE_DIR

log = logging.getLogger(__name__)

CARD = "README.md"
TAG = "gnt-align"
"""The tag that marks a card as gnt's own (rewritten freely; a card without it is never touched by an evaluation)."""
MGENTE = "FBK-MT/mGeNTE"

ALIASES = {"gnt:gemma": "google/gemma-3-270m", "gnt:smollm": "HuggingFaceTB/SmolLM2-135M-Instruct"}
"""Hub ids of the models behind the offline aliases (gnt:tiny is a random model built here: no hub id)."""
LICENSES = {
    "Qwen/Qwen2.5-7B-Instruct": "apache-2.0",
    "meta-llama/Llama-3.1-8B-Instruct": "llama3.1",
    "google/gemma-2-9b-it": "gemma",
    "google/gemma-3-270m": "gemma",
    "HuggingFaceTB/SmolLM2-135M-Instruct": "apache-2.0",
}
"""The licence of the base models the shipped recipes train: an adapter is a derivative of its base model, so the
base's terms apply to it. Other bases get no ``license`` field rather than a guess."""

CARD_METRICS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("label_balanced_accuracy", "Label balanced accuracy", ("label_balanced_accuracy",)),
    ("label_accuracy_set_g", "Label accuracy, Set-G", ("label_accuracy", "Set-G")),
    ("label_accuracy_set_n", "Label accuracy, Set-N", ("label_accuracy", "Set-N")),
    ("label_macro_f1", "Label macro-F1", ("label_macro_f1",)),
    ("gnt_accuracy_set_n", "GNT accuracy, Set-N", ("gnt_accuracy", "Set-N")),
    ("gnt_accuracy_set_g", "GNT accuracy, Set-G", ("gnt_accuracy", "Set-G")),
    ("gnt_accuracy_set_n_inadequate_wrong", "GNT accuracy, Set-N, inadequate = wrong", ("gnt_accuracy_adequate", "Set-N")),
    ("coherence_neutral", "Label-translation coherence, NEUTRAL", ("coherence", "NEUTRAL")),
    ("xcomet_matching", "xCOMET, set-matching reference", ("xcomet", "matching")),
    ("chrf", "chrF++", ("adequacy", "chrf")),
    ("adequate", "Adequate translations (chrF++ >= 30)", ("adequacy", "adequate")),
    ("extraction_error_rate", "Extraction errors", ("extraction_errors", "rate")),
)
"""What a card reports from the ``overall`` block of ``metrics.json`` (docs/metrics.md): metric type, name, path.
Preference accuracy comes from its own block. A metric the evaluation did not compute is left out."""
JUDGED = frozenset({"gnt_accuracy_set_n", "gnt_accuracy_set_g", "gnt_accuracy_set_n_inadequate_wrong",
                    "coherence_neutral"})


# ------------------------------------------------------------------------------------------------ what the card says
def _hub_id(spec: str | None) -> str | None:
    """A hub model id for the card's ``base_model``, or None (a local folder, the tiny model, nothing)."""
    if not spec:
        return None
    if spec in ALIASES:
        return ALIASES[spec]
    path = Path(spec)
    if spec.startswith("gnt:") or path.is_absolute() or spec.count("/") != 1 or path.exists():
        return None
    return spec


def base_model_of(record: Mapping[str, Any]) -> tuple[str | None, str]:
    """(hub id or None, what the body calls the base model). DPO records name the SFT adapter's resolved base; the
    SFT run's own record keeps how its recipe wrote it (``gnt:gemma``), so that is read when it is there."""
    spec = record.get("base_model_spec") or record.get("base_model")
    if record.get("sft_adapter") and not _hub_id(spec):
        for folder in (Path(record["sft_adapter"]), Path(record["sft_adapter"]).parent):
            sft = read_json_or_none(folder / RUN_RECORD)
            if isinstance(sft, dict) and sft.get("base_model_spec"):
                spec = sft["base_model_spec"]
                break
    return _hub_id(spec), str(spec or record.get("base_model") or "unknown")


def data_build_of(record: Mapping[str, Any]) -> dict[str, Any]:
    """What the card says about the training data: source, languages, manifest hash (from the data build's own
    manifest when it is still there)."""
    manifest = read_json_or_none(Path(str(record.get("data_dir") or "")) / "manifest.json") or {}
    config = manifest.get("config") if isinstance(manifest, dict) else None
    config = config if isinstance(config, dict) else {}
    source = str(config.get("mgente") or "")
    if not source:
        kind = "unknown"
    elif source == MGENTE:
        kind = "hub"
    elif Path(source).resolve() == SAMPLE_DIR.resolve():
        kind = "sample"
    else:
        kind = "folder"
    return {"source": source, "kind": kind, "langs": list(config.get("langs") or []),
            "manifest_sha256": record.get("data_manifest_sha256"), "data_dir": record.get("data_dir"),
            "counts": record.get("data_counts") or {}}


def _source_text(data: Mapping[str, Any]) -> str:
    return {"hub": f"mGeNTE from the hub ([{MGENTE}](https://huggingface.co/datasets/{MGENTE}))",
            "sample": "the mGeNTE-format sample bundled with gnt-align (`data/sample`; not mGeNTE itself)",
            "folder": f"an mGeNTE copy at `{data['source']}`",
            "unknown": "a data build whose manifest is no longer at hand"}[data["kind"]]


def _card_data(record: Mapping[str, Any], name: str, results: list) -> Any:
    from huggingface_hub import ModelCardData

    base, _ = base_model_of(record)
    data = data_build_of(record)
    stage = str(record.get("stage") or "sft")
    model_config = record.get("model_config") or {}
    tags = [TAG, "gender-neutral-translation", "translation", "lora", stage, "trl", "peft"]
    if model_config.get("load_in_4bit"):
        tags.append("qlora")
    return ModelCardData(
        base_model=base, library_name="peft", pipeline_tag="text-generation", tags=tags,
        datasets=[MGENTE] if data["kind"] in ("hub", "folder") else None,
        language=["en", *data["langs"]] if data["langs"] else None,
        license=LICENSES.get(base or ""), model_name=name, eval_results=results or None,
    )


def _training_lines(record: Mapping[str, Any]) -> list[str]:
    recipe = record.get("recipe") or {}
    data = data_build_of(record)
    stage = str(record.get("stage") or "sft").upper()
    used = sum(int((c or {}).get("used") or 0) for c in data["counts"].values() if isinstance(c, dict))
    keys = ("lora_r", "lora_alpha", "lora_target_modules", "learning_rate", "per_device_train_batch_size",
            "gradient_accumulation_steps", "max_steps", "num_train_epochs", "max_length", "packing", "beta",
            "pair_kinds", "balance_label_batches", "decision_token_weight", "load_in_4bit", "seed")
    settings = ", ".join(f"`{k}: {recipe[k]}`" for k in keys if k in recipe)
    environment = record.get("environment") or {}
    git = environment.get("git") or {}
    packages = environment.get("packages") or {}
    versions = ", ".join(f"{p} {packages[p]}" for p in ("transformers", "trl", "peft", "torch") if p in packages)
    lines = [
        f"- **Stage**: {stage}"
        + (f", continued from the SFT adapter `{record['sft_adapter']}` (a frozen copy of it was the DPO reference)"
           if record.get("sft_adapter") else "")
        + f"; optimizer step {record.get('global_step')}.",
        f"- **Data build**: {_source_text(data)}"
        + (f", languages en→{', '.join(data['langs'])}" if data["langs"] else "")
        + f"; manifest sha256 `{data['manifest_sha256']}` (`{data['data_dir']}`)"
        + (f"; {used} training rows used." if used else "."),
        f"- **Recipe**: `{record.get('recipe_path') or '(none)'}`"
        + (f" with `{' '.join(record.get('overrides') or [])}`" if record.get("overrides") else "")
        + (f"; {settings}" if settings else "") + ".",
        f"- **Code**: gnt-align commit `{git.get('commit', 'unknown')}`"
        + (" (with uncommitted changes)" if git.get("dirty") else "") + (f"; {versions}" if versions else "") + ".",
        f"- The full resolved recipe, data hashes and training source keys are in `{RUN_RECORD}` beside this card.",
    ]
    return lines


def _results_table(results: list) -> list[str]:
    if not results:
        return ["Not evaluated yet. `eval/evaluate.py` with a recipe whose steps end in `report` adds this "
                "checkpoint's GNT metrics here and to the card's `model-index`."]
    lines = ["| metric | value | 95% CI | split | grid | results |", "|---|---|---|---|---|---|"]
    for result in results:
        args = result.metric_args or {}
        ci = args.get("ci95") or []
        lines.append(f"| {result.metric_name or result.metric_type} | {result.metric_value} | "
                     f"{f'[{ci[0]}, {ci[1]}]' if len(ci) == 2 else ''} | {result.dataset_split or ''} | "
                     f"{result.metric_config or ''} | {args.get('results', '')} |")
    return lines + ["", "Fractions are shares of held-out rows (1 = all); chrF++ is 0-100. Definitions: "
                        "gnt-align's docs/metrics.md."]


def render(record: Mapping[str, Any], name: str, results: list | None = None) -> Any:
    """The card of an adapter folder: front matter and body from its run record, ``results`` as ``model-index``."""
    from huggingface_hub import ModelCard

    results = list(results or [])
    data = _card_data(record, name, results)
    _, base_text = base_model_of(record)
    base_hub = _hub_id(base_text) or data.base_model
    base_link = f"[{base_hub}](https://huggingface.co/{base_hub})" if base_hub else f"`{base_text}`"
    body = [
        f"# {name}",
        "",
        f"A LoRA adapter of {base_link}, trained with gnt-align for **gender-neutral "
        "translation** from English: given a prompt of the mGeNTE prompt grid it answers "
        "`<lang> **GENDERED** [translation]` when the source states the referent's gender and "
        "`<lang> **NEUTRAL** [translation]`, with a gender-neutral translation, when it does not.",
        "",
        "## Training",
        "",
        *_training_lines(record),
        "",
        "## How to load it",
        "",
        "```python",
        "from peft import AutoPeftModelForCausalLM",
        "from transformers import AutoTokenizer",
        "",
        'model = AutoPeftModelForCausalLM.from_pretrained("PATH_OR_REPO_OF_THIS_FOLDER")',
        'tokenizer = AutoTokenizer.from_pretrained("PATH_OR_REPO_OF_THIS_FOLDER")',
        "```",
        "",
        f"Served by vLLM as a LoRA adapter over its base model (`vllm serve {base_hub or 'BASE'} --enable-lora "
        f"--lora-modules {name.replace('/', '-')}=PATH`), or evaluated by gnt-align with "
        "`eval/evaluate.py RECIPE adapters=PATH`. Prompts must follow the grid's format (gnt-align's "
        "docs/prompt-grid.md); the adapter adds no tokens to the base tokenizer.",
        "",
        "## Evaluation",
        "",
        *_results_table(results),
        "",
    ]
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(body))


def existing_results(folder: Path) -> list | None:
    """The ``model-index`` results of the card gnt wrote in ``folder``; None when the card there is not gnt's
    (absent: [])."""
    from huggingface_hub import ModelCard

    path = folder / CARD
    if not path.is_file():
        return []
    try:
        card = ModelCard.load(path, ignore_metadata_errors=True)
    except (OSError, ValueError) as exc:
        log.warning("%s: not a readable model card (%s); left as it is", path, exc)
        return None
    if TAG not in (card.data.tags or []):
        return None
    return list(card.data.eval_results or [])


def write_card(folder: Path, results: list | None = None, *, replace_foreign: bool = False) -> Path | None:
    """Write ``folder/README.md`` from ``folder/gnt_run.json``; ``results`` replace those with the same metric, split,
    grid and dataset, the card's other results are kept. None when the folder has no run record, or (unless
    ``replace_foreign``: the training run replacing TRL's and PEFT's cards) holds a card gnt did not write."""
    record = read_json_or_none(folder / RUN_RECORD)
    if not isinstance(record, dict):
        return None
    kept = existing_results(folder)
    if kept is None:
        if not replace_foreign:
            return None
        kept = []
    merged = _merge(kept, results or [])
    name = f"{Path(str(record.get('output_dir') or folder)).name}" + (
        f"/{folder.name}" if folder.name.startswith("checkpoint-") else "")
    path = folder / CARD
    write_text_atomic(path, str(render(record, name, merged)))
    return path


def _key(result: Any) -> tuple:
    return result.dataset_name, result.dataset_split, result.metric_config, result.metric_type


def _merge(kept: list, new: list) -> list:
    replaced = {_key(r) for r in new}
    return [r for r in kept if _key(r) not in replaced] + list(new)


def write_run_cards(output_dir: str | Path) -> list[Path]:
    """At the end of training: the card of the run folder and of every checkpoint in it (replacing TRL's and PEFT's
    generic cards; results an evaluation already added to a gnt card are kept)."""
    root = Path(output_dir)
    folders = [root, *sorted(p for p in root.glob("checkpoint-*") if p.is_dir())]
    return [path for folder in folders if (path := write_card(folder, replace_foreign=True)) is not None]


# ------------------------------------------------------------------------------------------------ evaluation results
def _value(block: Any, path: tuple[str, ...]) -> tuple[float, dict] | None:
    """The statistic at ``path``: its value and the arguments that say how far to trust it (CI, rows)."""
    for step in path:
        block = block.get(step) if isinstance(block, Mapping) else None
    if not (isinstance(block, Mapping) and isinstance(block.get("value"), (int, float))):
        return None
    args = {"ci95": [round(float(x), 4) for x in block["ci"]]} if block.get("ci") else {}
    return float(block["value"]), {**args, **({"n": block["n"]} if isinstance(block.get("n"), int) else {})}


def _grid(record: Mapping[str, Any]) -> str:
    recipe = record.get("eval_recipe") or {}
    parts = [f"{key}={','.join(str(v) for v in recipe[key])}" for key in ("langs", "configs", "shots")
             if isinstance(recipe.get(key), list)]
    return " ".join(parts) or ", ".join((record.get("grid") or {}).get("cells") or [])


def _judge(metrics: Mapping[str, Any]) -> str | None:
    block = metrics.get("judge")
    if not isinstance(block, Mapping):
        return None
    who = block.get("judge_model") or block.get("kind") or "judge"
    return f"{who} {block.get('format') or ''}".strip()


def evaluation_results(metrics: Mapping[str, Any], record: Mapping[str, Any], source: str) -> list:
    """The ``model-index`` results of one evaluated model: its overall GNT metrics on the held-out split, each
    with its 95% CI, its row count and the results folder it came from (``source``) as ``metric_args`` (the Hub's
    ``source`` field needs a URL, which a local evaluation does not have)."""
    from huggingface_hub import EvalResult

    overall = metrics.get("overall") or {}
    recipe = record.get("eval_recipe") or {}
    split = str(recipe.get("split") or "test")
    run = record.get("run_record") or {}
    data = data_build_of(run) if run else {"kind": "unknown", "manifest_sha256": None}
    sha = str(data.get("manifest_sha256") or "")[:12]
    dataset_type = MGENTE if data["kind"] in ("hub", "folder") else "gnt-align/data-sample"
    dataset_name = f"mGeNTE held-out {split} rows" + (f" (data build {sha})" if sha else "")
    judge = _judge(metrics)
    found = [(t, name, _value(overall, path)) for t, name, path in CARD_METRICS]
    preference = metrics.get("preference_accuracy")
    found.append(("preference_accuracy", "Preference accuracy, held-out pairs",
                  _value(preference, ("all",)) if isinstance(preference, Mapping) else None))
    results = []
    for metric_type, name, value in found:
        if value is None:
            continue
        if metric_type in JUDGED and judge:
            name = f"{name} (judge: {judge})"
        results.append(EvalResult(
            task_type="translation", task_name="Gender-neutral translation (mGeNTE prompt grid)",
            dataset_type=dataset_type, dataset_name=dataset_name, dataset_split=split,
            metric_type=metric_type, metric_name=name, metric_value=round(value[0], 4),
            metric_config=_grid(record), metric_args={**value[1], "results": source},
        ))
    return results


def record_evaluation_in_cards(results_dir: str | Path) -> list[Path]:
    """For every adapter a results folder evaluated and gnt trained: add its metrics to its card, and to its run
    folder's when the run ended at that checkpoint's step (the run's final adapter is then the same weights).
    Returns the cards written; a card that cannot be written is logged and skipped (the report does not depend on
    it)."""
    from gnt.results.folder import ResultsError, ResultsFolder

    root = Path(results_dir)
    try:
        results_folder = ResultsFolder.on_disk(root)
    except ResultsError:
        return []
    written: list[Path] = []
    for name in results_folder.models:
        metrics, _ = results_folder.model(name).metrics()  # composed: the grid's, the judge's and xCOMET's parts
        record = read_json_or_none(root / name / RECORD)
        adapter = ((record or {}).get("model") or {}).get("adapter") if isinstance(record, dict) else None
        if not isinstance(adapter, dict) or not adapter.get("path") or not isinstance(metrics, dict):
            continue
        folder = Path(adapter["path"])
        results = evaluation_results(metrics, record, f"{root.name}/{name}")
        for target in (folder, *_same_final_adapter(folder)):
            try:
                path = write_card(target, results)
            except OSError as exc:
                log.warning("%s: model card not updated (%s)", target, exc)
                continue
            if path is not None:
                written.append(path)
    return written


def _same_final_adapter(checkpoint: Path) -> list[Path]:
    """The run folder of ``checkpoint`` when the run finished at that checkpoint's step: its final adapter (saved at
    the end of training) then holds the checkpoint's weights."""
    if not checkpoint.name.startswith("checkpoint-"):
        return []
    run, mine = read_json_or_none(checkpoint.parent / RUN_RECORD), read_json_or_none(checkpoint / RUN_RECORD)
    if not (isinstance(run, dict) and isinstance(mine, dict) and (checkpoint.parent / "adapter_config.json").is_file()):
        return []
    finished = run.get("status") == "complete" and run.get("global_step") == mine.get("global_step")
    return [checkpoint.parent] if finished else []
