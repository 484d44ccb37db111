"""Context attribution of an evaluated model: which prompt parts drive its label and its translation (docs/attribution.md).

    # grad×input on the 4-shot G+S cell of every language in the result, 50 rows per (set, label outcome)
    python eval/attribute.py outputs/eval/<model>

    # AttnLRP (lxt 2.1; Qwen2/Qwen3/Llama) on Set-N only, balanced by the judge's neutral/gendered outcome
    python eval/attribute.py outputs/eval/<model> method=attnlrp cells=it/G+S/4 sets=Set-N balance_by=judged

    # contrastive: log p(Ref-N answer) − log p(Ref-G answer) on the sample's common-set rows
    python eval/attribute.py contrastive=true data=data/sample model=<model dir> langs=it out_dir=outputs/attr

Results go to <result>/attribution/<cell>/<method>/ (or out_dir): scores.jsonl, aggregate.csv/json, PNG figures
and record.json. The keys are the fields of gnt.attribution.config.AttributionConfig, or of ContrastiveConfig with
contrastive=true. Exit status 2 on a usage or input problem (including AttnLRP being unavailable), with the reason.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from gnt.cli.command import Call, Command, Subject
from gnt.recipe import RecipeError, RecipeSchema

NOT_KEYS = ("result_dir", "extra")  # the result folder is the positional RESULT; extra is for code


@dataclass
class AttributeMode:
    """The one key that picks which of the two configs the other keys fill."""

    contrastive: bool = field(default=False, metadata={
        "help": "contrastive mode: log p(Ref-N answer) − log p(Ref-G answer), keys of ContrastiveConfig"})


def _settings() -> tuple[type, ...]:
    from gnt.attribution.config import AttributionConfig, ContrastiveConfig

    return (AttributeMode, AttributionConfig, ContrastiveConfig)


def _mode_keys(contrastive: bool) -> set[str]:
    from gnt.attribution.config import AttributionConfig, ContrastiveConfig

    klass = ContrastiveConfig if contrastive else AttributionConfig
    return {f.name for f in klass.__dataclass_fields__.values()} - set(NOT_KEYS) | {"contrastive"}


def _sections(schema: RecipeSchema) -> list[tuple[str, RecipeSchema]]:
    attribution, contrastive = _mode_keys(False), _mode_keys(True)
    return [("keys (attribution: grad×input or AttnLRP)", schema.subset(lambda spec: spec.name in attribution)),
            ("keys with contrastive=true (their defaults there)",
             schema.subset(lambda spec: spec.name in contrastive - {"contrastive"}))]


def build_config(call: Call) -> Any:
    """The run's config (attribution, or contrastive with ``contrastive=true``), checked against its mode."""
    from gnt.attribution.config import AttributionConfig, ContrastiveConfig

    values = dict(call.values)
    contrastive = bool(values.pop("contrastive", False))
    misplaced = sorted(set(values) - _mode_keys(contrastive))
    if misplaced:
        mode = "contrastive=true" if contrastive else "attribution (without contrastive=true)"
        raise RecipeError(f"{', '.join(misplaced)}: not a key of {mode}; `{call.command.prog} --help` lists both")
    if not contrastive and call.subject is None:
        raise RecipeError(f"give an evaluation result folder (or contrastive=true with data=...)\n{call.command.usage()}")
    klass: Any = ContrastiveConfig if contrastive else AttributionConfig
    return call.build(klass, result_dir=call.subject).validate()


def _run(call: Call) -> None:
    from gnt.attribution.config import ContrastiveConfig

    config = build_config(call)
    if isinstance(config, ContrastiveConfig):
        from gnt.attribution.contrast_run import run_contrastive as run
    else:
        from gnt.attribution.run import run_attribution as run
    print(json.dumps(run(config), indent=2, ensure_ascii=False))


COMMAND = Command(
    name="attribute", script="eval/attribute.py",
    line="context attribution: which prompt parts drive label and translation", settings=_settings, run=_run,
    summary=__doc__ or "", exclude=NOT_KEYS, sections=_sections,
    subject=Subject("RESULT", "evaluation result folder <out>/<model> (generations.jsonl, record.json); "
                              "contrastive mode: optional (data= instead)", required=False),
    exits={ValueError: 2, FileNotFoundError: 2},
)


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)
