"""Score an evaluation results folder with xCOMET (set-matching references and Ref-G for every row).

    python eval/comet.py outputs/eval                                  # every model folder, Unbabel/XCOMET-XL
    python eval/comet.py outputs/eval xcomet_gpus=4 xcomet_batch_size=64 models=base,run/checkpoint-8
    python eval/comet.py outputs/eval xcomet_model=Unbabel/XCOMET-XXL
    python eval/comet.py outputs/eval tiny=true                        # offline smoke run, random tiny XCOMET
    python eval/comet.py outputs/eval recipes/xcomet.yaml              # the same keys from a YAML recipe
    python eval/comet.py --help                                        # every key, its default and meaning

Per model folder it writes ``xcomet.jsonl`` (per generation: score_matching, score_ref_g, error spans, failure)
and ``xcomet_summary.json``, and fills the ``xcomet`` blocks of ``metrics.json`` when it exists. Scores are cached
in ``<results>/cache/xcomet.jsonl``: a rerun scores nothing twice. The comet environment (.venv-comet,
transformers < 5) is built on first use unless ``xcomet_auto_install=false``. Extraction errors are scored 0.0 and
counted (``n_failures``), never dropped. Exit status 2 on a usage or input problem.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

from gnt.cli.convention import Command, Subject, run_help, schema_of
from gnt.recipe import EXIT_USAGE, RecipeError
from gnt.settings import BootstrapSettings


@dataclass
class CometCli(BootstrapSettings):
    """Keys of this command besides the xCOMET settings (gnt.comet.scorer.CometConfig); the bootstrap keys are the
    shared group's."""

    models: list[str] = field(default_factory=list, metadata={"help": "model folders to score; default all"})
    tiny: bool = field(default=False, metadata={"help": "score with the offline tiny XCOMET (smoke test)"})
    update_metrics: bool = field(default=True, metadata={
        "help": "fill the xcomet blocks of each model's metrics.json with the scores"})


def command() -> Command:
    """The command's declaration (built on use: the xCOMET settings live in a module that is slow to import)."""
    from gnt.comet.scorer import CometConfig

    return Command(
        script="eval/comet.py", summary=__doc__ or "", schema=schema_of([CometConfig, CometCli]),
        subject=Subject("RESULTS", "results folder of eval/evaluate.py (one folder per model)"),
    )


def main(argv: list[str] | None = None) -> int:
    from gnt.comet.env import CometEnvMissing
    from gnt.comet.scorer import (
        CometConfig,
        CometScoringError,
        find_model_dirs,
        score_results,
        update_metrics,
    )

    cli = command()
    try:
        invocation = cli.parse(sys.argv[1:] if argv is None else argv)
        if run_help(cli, invocation):
            return 0
        values = cli.resolve(invocation)
        results = Path(invocation.subject)
        comet_cfg = CometConfig(**{k: v for k, v in values.items() if k.startswith("xcomet_")}).validate()
        opts = CometCli(**{k: v for k, v in values.items() if not k.startswith("xcomet_")})
        models = [m for item in opts.models for m in str(item).split(",") if m]
        folders = find_model_dirs(results, models)
    except (RecipeError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if opts.tiny:
        from gnt.comet.env import ensure_comet_env
        from gnt.comet.tiny import ensure_tiny_xcomet

        python = ensure_comet_env(comet_cfg.xcomet_auto_install)
        comet_cfg.xcomet_model = str(ensure_tiny_xcomet(python=python))
    settings = {**comet_cfg.__dict__, **{k: getattr(opts, k) for k in ("bootstrap_samples", "bootstrap_seed", "alpha")}}
    for name in folders:
        try:
            summary = score_results(results, name, settings)
        except (CometEnvMissing, CometScoringError) as exc:
            print(f"error: {name}: {exc}", file=sys.stderr)
            return 1
        if opts.update_metrics:
            update_metrics(results / name, summary)
        line = {k: summary[k] for k in ("n", "n_failures", "system_matching", "system_ref_g")}
        line["scored"], line["cached"] = summary["scoring"]["scored"], summary["scoring"]["cached"]
        print(f"{name}: {json.dumps(line)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
