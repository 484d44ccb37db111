"""Weights & Biases for ``report_to: wandb``: online with an API key, offline without one, never a prompt.

The run is started here (rank 0, before training) rather than by transformers' WandbCallback, so that its id can be
chosen, saved in ``gnt_run.json`` and reused: a resumed run continues the same W&B run, and the evaluator can later
log checkpoint metrics into it (``wandb.init(id=run_id, resume="allow", dir=dir, project=project)``, logging with
``train/global_step`` as the step metric, which the callback defines). The callback then finds the active run and
only adds the trainer's config to it.
"""

from __future__ import annotations

import netrc
import os
import secrets
import string
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnt.training.world import say

KEY_ENV = "WANDB_API_KEY"
MODES = {"online", "offline", "disabled", "dryrun"}


def reports_to_wandb(report_to: Any) -> bool:
    values = [report_to] if isinstance(report_to, str) else list(report_to or [])
    return "wandb" in values or "all" in values


def has_api_key() -> bool:
    """Whether a W&B key is configured (env or ``~/.netrc`` from ``wandb login``); the key itself is never read out."""
    if os.environ.get(KEY_ENV):
        return True
    host = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai").split("://")[-1].split("/")[0]
    try:
        return netrc.netrc().authenticators(host) is not None
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False


@dataclass
class WandbPlan:
    """How W&B will run: mode, why, and the run's identity."""

    mode: str
    reason: str
    project: str
    entity: str | None
    group: str | None
    name: str
    tags: list[str]
    dir: str
    run_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def choose_mode() -> tuple[str, str]:
    """``(mode, reason)``: an explicit WANDB_MODE wins; else online with a key, offline without."""
    explicit = os.environ.get("WANDB_MODE", "").strip().lower()
    if explicit in MODES:
        return ("offline" if explicit == "dryrun" else explicit), f"WANDB_MODE={explicit} is set"
    if has_api_key():
        return "online", "an API key is configured"
    return "offline", f"no API key found ({KEY_ENV} or ~/.netrc)"


def plan_wandb(
    *, project: str, entity: str | None, group: str | None, name: str, tags: list[str], output_dir: Path,
    previous_run_id: str | None,
) -> WandbPlan:
    """Decide the mode and set ``WANDB_MODE`` for every W&B client in this process before any ``init``."""
    mode, reason = choose_mode()
    os.environ["WANDB_MODE"] = mode
    os.environ.setdefault("WANDB_PROJECT", project)
    return WandbPlan(mode, reason, project, entity, group, name, tags, str(output_dir), previous_run_id)


def new_run_id() -> str:
    """A W&B-style run id (8 lowercase letters/digits), chosen here so it can be recorded before ``init``."""
    alphabet = string.ascii_lowercase + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(8))


PROBE_TIMEOUT_S = 5.0
"""How long the reachability check of the W&B server may take before training starts."""


def unreachable(base_url: str | None = None, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why the W&B server cannot be reached from here (a TCP connection to it fails), or None.

    Behind an HTTP(S) proxy the direct check says nothing, so it is skipped there (``wandb.init`` failing is then
    what falls back)."""
    import socket
    from urllib.parse import urlsplit

    if any(os.environ.get(name) for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")):
        return None
    url = urlsplit(base_url or os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai")
    host, port = url.hostname or "api.wandb.ai", url.port or (80 if url.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return None
    except OSError as exc:
        return f"{host}:{port} cannot be reached ({exc.strerror or type(exc).__name__})"


def go_offline_if_unreachable(plan: WandbPlan) -> None:
    """An online plan whose server cannot be reached: offline (said), or, where ``WANDB_MODE=online`` was set
    explicitly, an error at once (instead of a W&B traceback after a minute and a half of retries)."""
    if plan.mode != "online":
        return
    why = unreachable()
    if why is None:
        return
    if plan.reason.startswith("WANDB_MODE="):
        from gnt.training.config import TrainingError

        raise TrainingError(f"W&B: {plan.reason} but {why}; unset WANDB_MODE to fall back to an offline run, or set "
                            "WANDB_MODE=offline (upload later with wandb sync)")
    say(f"warning: W&B: {plan.reason}, but {why}: logging offline instead")
    plan.mode, plan.reason = "offline", f"{plan.reason} but {why}"
    os.environ["WANDB_MODE"] = "offline"


def start_run(plan: WandbPlan, config: dict[str, Any]) -> dict[str, Any]:
    """Start (or resume) the run on this process; return what ``gnt_run.json`` records about it. An online run
    that cannot reach its server goes offline (said), or fails at once where ``WANDB_MODE=online`` asked for it."""
    import wandb

    run_id = plan.run_id or new_run_id()
    Path(plan.dir).mkdir(parents=True, exist_ok=True)
    go_offline_if_unreachable(plan)

    def init() -> Any:
        return wandb.init(
            project=plan.project, entity=plan.entity, group=plan.group, name=plan.name, tags=plan.tags or None,
            dir=plan.dir, id=run_id, resume="allow", config=config, mode=plan.mode, job_type="train",
        )

    try:
        run = init()
    except Exception as exc:  # noqa: BLE001 - wandb's CommError/UsageError: online failed, offline still logs
        if plan.mode != "online" or plan.reason.startswith("WANDB_MODE="):
            from gnt.training.config import TrainingError

            raise TrainingError(f"W&B could not start a {plan.mode} run: {type(exc).__name__}: {exc}") from None
        say(f"warning: W&B: the online run could not start ({type(exc).__name__}: {exc}): logging offline instead")
        plan.mode, plan.reason = "offline", f"{plan.reason} but the online run could not start"
        os.environ["WANDB_MODE"] = "offline"
        run = init()
    run_dir = str(Path(run.dir).parent) if run is not None and plan.mode != "disabled" else None
    if plan.mode == "offline":
        say(f"W&B: {plan.reason} -> offline run in {run_dir} (upload later: wandb sync {run_dir})")
    elif plan.mode == "online":
        say(f"W&B: {plan.reason} -> online run {getattr(run, 'url', '')} (local files in {run_dir})")
    else:
        say(f"W&B: {plan.reason} -> disabled")
    return {
        "project": plan.project, "entity": plan.entity, "group": plan.group, "name": plan.name, "tags": plan.tags,
        "run_id": run_id, "mode": plan.mode, "dir": plan.dir, "run_dir": run_dir,
        "url": getattr(run, "url", None) if plan.mode == "online" else None,
    }


def disabled_record() -> dict[str, Any]:
    return {"project": None, "run_id": None, "mode": "disabled", "dir": None}


def finish_run(summary: dict[str, Any] | None = None) -> None:
    """Write ``summary`` into the active run (if any) and close it."""
    import wandb

    if wandb.run is not None:
        if summary:
            for key, value in summary.items():
                wandb.run.summary[key] = value
        wandb.finish()


def run_config(record: dict[str, Any], manifest: dict[str, Any]) -> dict[str, Any]:
    """The W&B run config: the resolved recipe and the data manifest (id lists reduced to counts: they can hold
    tens of thousands of entries and are in the manifest file the record points to)."""
    compact = {k: v for k, v in manifest.items() if k not in ("ids", "source_keys", "environment")}
    compact["source_keys"] = {split: len(keys) for split, keys in manifest.get("source_keys", {}).items()}
    return {
        "gnt": {
            "stage": record["stage"], "base_model": record["base_model"], "recipe": record["recipe"],
            "recipe_path": record["recipe_path"], "overrides": record["overrides"],
            "data_dir": record["data_dir"], "data_manifest_sha256": record["data_manifest_sha256"],
            "sft_adapter": record["sft_adapter"], "seed": record["seed"],
        },
        "data_manifest": compact,
    }
