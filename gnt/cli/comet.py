"""Score an evaluation results folder with xCOMET (set-matching references and Ref-G for every row).

    python eval/comet.py outputs/eval                                  # every model folder, Unbabel/XCOMET-XL
    python eval/comet.py outputs/eval xcomet_gpus=4 xcomet_batch_size=64 models=base,run/checkpoint-8
    python eval/comet.py outputs/eval xcomet_model=Unbabel/XCOMET-XXL
    python eval/comet.py outputs/eval tiny=true                        # offline smoke run, random tiny XCOMET
    python eval/comet.py outputs/eval recipes/xcomet.yaml              # the same keys from a YAML recipe
    python eval/comet.py --help                                        # every key, its default and meaning

Per model folder it writes ``xcomet.jsonl`` (per generation: score_matching, score_ref_g, error spans, failure)
and, last, ``xcomet_summary.json`` (the ``xcomet`` metric per block, which a reader of the folder composes into its
metrics; ``metrics.json`` itself is the grid's and is never rewritten here). Scores are cached
in ``<results>/cache/xcomet.jsonl``: a rerun scores nothing twice; what is missing is scored in one pass of the
comet environment for every folder. The comet environment (.venv-comet, transformers < 5) is built on first use
unless ``xcomet_auto_install=false``. Extraction errors are scored 0.0 and counted (``n_failures``), never dropped.
Exit status 2 on a usage or input problem, 1 when the comet environment fails.
"""

from __future__ import annotations

import json

from gnt.cli.command import Call, Command, Subject


def _settings() -> tuple[type, ...]:
    from gnt.comet.config import CometConfig

    return (CometConfig,)


def _run(call: Call) -> None:
    from gnt.comet.config import CometConfig
    from gnt.comet.folder import score_folder
    from gnt.results.folder import ResultsFolder

    summaries = score_folder(ResultsFolder.on_disk(call.subject), call.build(CometConfig).validate())
    for name, summary in summaries.items():
        line = {k: summary[k] for k in ("n", "n_failures", "system_matching", "system_ref_g")}
        line["scored"], line["cached"] = summary["scoring"]["scored"], summary["scoring"]["cached"]
        print(f"{name}: {json.dumps(line)}")


COMMAND = Command(
    name="comet", script="eval/comet.py", line="score a results folder with xCOMET", settings=_settings, run=_run,
    summary=__doc__ or "", subject=Subject("RESULTS", "results folder of eval/evaluate.py (one folder per model)"),
    exits={ValueError: 2, FileNotFoundError: 2},
)


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)
