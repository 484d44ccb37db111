"""Log evaluation results into the *training* run's W&B run, at each checkpoint's global step.

Why the training run and not a new one: a user looks at one run page and sees the loss and the GNT metrics on one
x-axis. The training run record (``<run>/gnt_run.json``) names the W&B project, run id, mode and directory;
:func:`log_eval_to_wandb` reopens that run with ``wandb.init(id=..., resume="allow")`` and logs, per evaluated
checkpoint of the run, ``eval/<lang|all>/<metric>[/<group>]`` together with ``train/global_step`` = the
checkpoint's step; a table of generation samples (``eval/samples``) and the report's figures (``eval/plots/*``).

The step problem (wandb 0.31): W&B's own ``_step`` only moves forward, and a ``log(..., step=s)`` below the run's
current step is dropped with a warning. Training has long passed checkpoint 8 when checkpoint 8 is evaluated, so
evaluation metrics cannot go *at* step 8. They use a custom x-axis instead: ``define_metric("eval/*",
step_metric="train/global_step")`` (the same x-axis transformers' W&B callback gives training metrics), and each
evaluation row carries ``train/global_step``, so the charts put it at the checkpoint's step while ``_step`` keeps
increasing.

Offline (the default without an API key, like training): an offline run cannot resume in place; ``wandb.init``
opens a new ``offline-run-<time>-<id>`` folder with the same id. Its ``_step`` values are made to continue after
the last step of the run's earlier offline folders (read with :mod:`gnt.report.wandb_offline`), so
``wandb sync --append`` can join them in order. Two folders created in the same second would share a name (and the
second would overwrite the first), so the call waits for the clock to leave that second.

A ledger ``<run>/wandb_eval_log.json`` remembers what was logged (model, step, metrics hash) so logging again
after another checkpoint is evaluated does not duplicate earlier rows.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from gnt.evaluation.catalog import BY_NAME
from gnt.filenames import RUN_RECORD
from gnt.io import hash_json, read_json, write_json
from gnt.report.collect import ModelResult, Results, collect, row_key
from gnt.report.wandb_offline import offline_run_dirs, read_offline_run

log = logging.getLogger(__name__)

LEDGER = "wandb_eval_log.json"
STEP_METRIC = "train/global_step"


class WandbLogError(RuntimeError):
    """The training run cannot be found (no run record); the message says what is missing."""


def eval_metrics(results: Results, model: ModelResult, *, cells: bool = False) -> dict[str, float]:
    """``{"eval/<lang|all>/<metric>[/<group>]": value}`` of one model (``eval/cell/<cell>/...`` with ``cells``): the
    metrics the catalog has W&B log, less the groups it skips (:class:`gnt.evaluation.catalog.Wandb`)."""
    out: dict[str, float] = {}
    for row in results.metrics:
        metric = BY_NAME.get(row.metric)
        if row.model != model.name or metric is None or metric.wandb is None or not metric.wandb.logs(row.group):
            continue
        if row.scope == "language":
            prefix = f"eval/{row.lang}"
        elif row.scope == "overall":
            prefix = "eval/all"
        elif cells and row.scope == "cell":
            prefix = f"eval/cell/{row.cell}"
        else:
            continue
        out[f"{prefix}/{row.metric}" + (f"/{row.group}" if row.group else "")] = row.value
    return out


def _belongs(model: ModelResult, run_dir: Path, run_id: str | None) -> bool:
    """Whether a checkpoint was produced by this training run (its record's W&B id, else its path)."""
    if model.is_base:
        return False
    recorded = ((model.run_record or {}).get("wandb") or {}).get("run_id")
    if recorded and run_id:
        return recorded == run_id
    for path in (model.adapter_path, model.run_dir):
        if path:
            try:
                if Path(path).resolve().is_relative_to(run_dir.resolve()):
                    return True
            except OSError:
                continue
    return False


def _wait_for_fresh_second(wandb_root: Path, run_id: str) -> None:
    """Avoid reusing an ``offline-run-<YYYYmmdd_HHMMSS>-<id>`` folder name created in this same second."""
    for _ in range(40):
        now = datetime.now().strftime("%Y%m%d_%H%M%S")
        if not any(p.name == f"offline-run-{now}-{run_id}" for p in offline_run_dirs(wandb_root, run_id)):
            return
        time.sleep(0.05)


def _offline_start_step(wandb_root: Path, run_id: str) -> int:
    """The first ``_step`` after every earlier offline segment of this run (0 when there is none)."""
    last = -1
    for folder in offline_run_dirs(wandb_root, run_id):
        try:
            step = read_offline_run(folder, wait_complete_s=10).last_step
        except (OSError, ValueError) as exc:
            log.warning("W&B: cannot read %s (%s); steps may overlap it", folder, exc)
            continue
        if step is not None:
            last = max(last, step)
    return last + 1


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _samples_table(wandb: Any, results: Results, model: ModelResult, per_cell: int) -> Any:
    columns = ["model", "global_step", "cell", "id", "set", "source", "output", "label", "translation", "judge"]
    judgments = model.judgment_index()
    seen: dict[str, int] = {}
    data = []
    for generation in model.samples:
        cell = generation["cell"]
        if seen.get(cell, 0) >= per_cell:
            continue
        seen[cell] = seen.get(cell, 0) + 1
        judgment = judgments.get(row_key(generation)) or {}
        data.append([
            model.name, model.global_step, cell, str(generation["id"]), str(generation["set"]),
            *(_text(generation.get(name)) for name in ("source", "raw", "label", "translation")),
            _text(judgment.get("label")),
        ])
    return wandb.Table(columns=columns, data=data)


def _figures(results: Results) -> dict[str, Path]:
    """The report's figures if a report was built, else freshly drawn ones (in a temporary folder)."""
    report_figures = results.directory / "report" / "figures"
    pngs = sorted(report_figures.glob("*.png")) if report_figures.is_dir() else []
    if not pngs:
        from gnt.report.plots import all_figures

        folder = Path(tempfile.mkdtemp(prefix="gnt-wandb-figures-"))
        drawn = all_figures(results, folder)
        pngs = [p for v in drawn.values() for p in (v if isinstance(v, list) else [v]) if p]
    return {p.stem: p for p in pngs}


def resolve_mode(record_mode: str | None, mode: str | None) -> str:
    """Explicit argument > ``WANDB_MODE`` > the training run's mode > offline (no API key needed)."""
    chosen = mode or os.environ.get("WANDB_MODE") or record_mode or "offline"
    return {"dryrun": "offline", "run": "online"}.get(chosen, chosen)


def wandb_dir(run_dir: Path, record: dict) -> Path:
    """The run's W&B folder: the record's ``wandb.dir`` when absolute; a relative one is the run folder as
    training saw it from its own working directory, so it is found from ``run_dir``, never from this process's cwd.
    """
    recorded = (record.get("wandb") or {}).get("dir")
    if not recorded:
        return run_dir
    path = Path(recorded)
    if path.is_absolute():
        return path
    n = len(path.parts)
    seen_as = [Path(str(record["output_dir"])).parts] if record.get("output_dir") else []
    if n == 0 or any(parts[-n:] == path.parts for parts in [*seen_as, run_dir.resolve().parts]):
        return run_dir  # training wrote W&B into its output folder, which is run_dir
    return run_dir / path


def _payloads(results: Results, run_dir: Path, record: dict, ledger: dict, include_base: bool | None, cells: bool
              ) -> list[tuple[ModelResult, dict[str, float], str, bool]]:
    """``(model, metrics, their hash, already logged)`` of each model of the run (the base at step 0 too, by
    default for an ``sft`` run, whose step 0 is the base model), in step order."""
    run_id = (record.get("wandb") or {}).get("run_id")
    if include_base is None:
        include_base = record.get("stage") == "sft"
    models = [m for m in results.models if _belongs(m, run_dir, run_id) and m.global_step is not None]
    if include_base and results.base is not None:
        models = [results.base, *models]
    models.sort(key=lambda m: 0 if m.is_base else (m.global_step or 0))
    done = {(e.get("model"), e.get("hash")) for e in ledger.get("logged", []) if isinstance(e, dict)}
    out = []
    for model in models:
        metrics = eval_metrics(results, model, cells=cells)
        digest = hash_json(metrics)
        out.append((model, metrics, digest, (model.name, digest) in done))
    return out


def unlogged(results: Results, run_dir: str | Path, *, mode: str | None = None) -> list[str]:
    """The models of ``run_dir``'s training run whose current metrics its W&B run has not received (per the
    ledger): what a logging killed half-way still owes. Empty for a run without W&B or with W&B disabled."""
    run_dir = Path(run_dir)
    record_path = run_dir / RUN_RECORD
    if not record_path.is_file():
        return []
    record = read_json(record_path)
    settings = record.get("wandb") or {}
    if not settings.get("run_id") or resolve_mode(settings.get("mode"), mode) == "disabled":
        return []
    ledger_path = run_dir / LEDGER
    ledger = read_json(ledger_path) if ledger_path.is_file() else {"logged": []}
    return [model.name for model, metrics, _, done in _payloads(results, run_dir, record, ledger, None, False)
            if metrics and not done]


def log_eval_to_wandb(
    results_dir: str | Path,
    run_dir: str | Path,
    *,
    mode: str | None = None,
    include_base: bool | None = None,
    cells: bool = False,
    samples_per_cell: int = 2,
    images: bool = True,
    force: bool = False,
) -> dict[str, Any]:
    """Log the evaluation of ``run_dir``'s checkpoints (found in ``results_dir``) into that run's W&B run.

    ``include_base``: also log the base model at ``train/global_step`` 0 (default: only for an ``sft`` run, whose
    step 0 *is* the base model). Returns what was logged: run id, mode, the offline folder, and per model the
    global step and W&B ``_step`` used.
    """
    run_dir = Path(run_dir)
    record_path = run_dir / RUN_RECORD
    if not record_path.is_file():
        raise WandbLogError(f"{record_path} not found: point at a training output folder (train/sft.py --output_dir)")
    record = read_json(record_path)
    settings = record.get("wandb") or {}
    run_id, project = settings.get("run_id"), settings.get("project")
    chosen_mode = resolve_mode(settings.get("mode"), mode)
    summary: dict[str, Any] = {"run_id": run_id, "project": project, "mode": chosen_mode, "logged": [],
                               "skipped": []}
    if chosen_mode == "disabled":
        summary["skipped"].append("W&B mode is disabled")
        return summary
    if not run_id:
        summary["mode"] = "disabled"
        summary["skipped"].append(f"{record_path} has no wandb.run_id: the run was trained without W&B "
                                  "(report_to: wandb), so there is no run to log into")
        log.warning("W&B: %s", summary["skipped"][-1])
        return summary

    results = collect(results_dir)
    ledger_path = run_dir / LEDGER
    ledger = read_json(ledger_path) if ledger_path.is_file() else {"logged": []}
    payloads = []
    for model, metrics, digest, done in _payloads(results, run_dir, record, ledger, include_base, cells):
        if not metrics:
            summary["skipped"].append(f"{model.name}: no metrics")
        elif done and not force:
            summary["skipped"].append(f"{model.name}: already logged")
        else:
            payloads.append((model, metrics, digest))
    if not payloads:
        return summary

    import wandb

    wandb_root = wandb_dir(run_dir, record)
    if not wandb_root.is_dir():
        raise WandbLogError(f"{wandb_root}: the W&B folder of run {run_id} (from {record_path}) does not exist; "
                            "nothing was logged")
    active: Any = wandb.run
    run: Any
    reuse = active is not None and active.id == run_id
    if reuse:
        run = active
    else:
        if chosen_mode == "offline":
            _wait_for_fresh_second(wandb_root, run_id)
        run = wandb.init(project=project, id=run_id, resume="allow", dir=str(wandb_root), mode=chosen_mode,  # type: ignore[arg-type]
                         reinit="create_new")
        if getattr(run, "dir", None) and not Path(run.dir).resolve().is_relative_to(wandb_root.resolve()):
            run.finish(exit_code=1)
            raise WandbLogError(f"W&B opened {run.dir}, outside the run's W&B folder {wandb_root}; nothing recorded "
                                "as logged")
    next_step = _offline_start_step(wandb_root, run_id) if chosen_mode == "offline" and not reuse else None
    try:
        run.define_metric(STEP_METRIC)
        run.define_metric("eval/*", step_metric=STEP_METRIC)
        figures = _figures(results) if images else {}
        for index, (model, metrics, digest) in enumerate(payloads):
            step = 0 if model.is_base else int(model.global_step or 0)
            row: dict[str, Any] = {STEP_METRIC: step, **metrics}
            if samples_per_cell and model.samples:
                row["eval/samples"] = _samples_table(wandb, results, model, samples_per_cell)
            if index == len(payloads) - 1:
                for name, path in figures.items():
                    row[f"eval/plots/{name}"] = wandb.Image(str(path), caption=name)
            if next_step is not None:
                run.log(row, step=next_step)
                wandb_step = next_step
                next_step += 1
            else:
                wandb_step = run.step
                run.log(row)
            summary["logged"].append({"model": model.name, "global_step": step, "wandb_step": wandb_step,
                                      "n_metrics": len(metrics)})
            ledger.setdefault("logged", []).append({"model": model.name, "global_step": step, "hash": digest})
        summary["run_path"] = str(Path(run.dir).parent) if getattr(run, "dir", None) else None
    finally:
        if not reuse:
            run.finish()
    write_json(ledger_path, ledger)
    if chosen_mode == "offline":
        summary["sync_hint"] = (f"wandb sync --append {' '.join(str(p) for p in offline_run_dirs(wandb_root, run_id))}")
    log.info("W&B: logged %d evaluation row(s) into run %s (%s)", len(summary["logged"]), run_id, chosen_mode)
    return summary
