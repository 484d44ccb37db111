"""Context attribution of an evaluated model: which prompt parts drive its label and its translation (docs/attribution.md).

    # grad×input on the 4-shot G+S cell of every language in the result, 50 rows per (set, label outcome)
    python eval/attribute.py outputs/eval/<model>

    # AttnLRP (lxt 2.1; Qwen2/Qwen3/Llama) on Set-N only, balanced by the judge's neutral/gendered outcome
    python eval/attribute.py outputs/eval/<model> method=attnlrp cells=it/G+S/4 sets=Set-N balance_by=judged

    # contrastive: log p(Ref-N answer) − log p(Ref-G answer) on the sample's common-set rows
    python eval/attribute.py contrastive=true data=data/sample model=<model dir> langs=it out_dir=outputs/attr

Results go to <result>/attribution/<cell>/<method>/ (or out_dir): scores.jsonl, aggregate.csv/json, PNG figures
and record.json. The keys are the fields of gnt.attribution.run.AttributionConfig, or of ContrastiveConfig with
contrastive=true. Exit status 2 on a usage or input problem (including AttnLRP being unavailable), with the reason.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from typing import Any

from gnt.attribution.run import AttributionConfig, ContrastiveConfig
from gnt.cli.convention import Command, Subject, construct, run_help, schema_of
from gnt.recipe import EXIT_USAGE, RecipeError


@dataclass
class AttributeMode:
    """The one key that picks which of the two configs the other keys fill."""

    contrastive: bool = field(default=False, metadata={
        "help": "contrastive mode: log p(Ref-N answer) − log p(Ref-G answer), keys of ContrastiveConfig"})


NOT_KEYS = ("result_dir", "extra")  # the result folder is the positional RESULT; extra is for code
ATTRIBUTION = schema_of([AttributeMode, AttributionConfig], exclude=NOT_KEYS)
CONTRASTIVE = schema_of([ContrastiveConfig], exclude=NOT_KEYS)
COMMAND = Command(
    script="eval/attribute.py",
    summary=__doc__ or "",
    schema=schema_of([AttributeMode, AttributionConfig, ContrastiveConfig], exclude=NOT_KEYS,
                     aliases={"cell": "cells", "prompts": "prompts_dir", "out": "out_dir"}),
    subject=Subject("RESULT", "evaluation result folder <out>/<model> (generations.jsonl, record.json); "
                              "contrastive mode: optional (data= instead)", required=False),
    flags={"all_rows": ("max_rows", None), "include_non_common": ("common_only", False)},
    sections=(("keys (attribution: grad×input or AttnLRP)", ATTRIBUTION),
              ("keys with contrastive=true (their defaults there)", CONTRASTIVE)),
)


def build_config(argv: list[str]) -> AttributionConfig | ContrastiveConfig | None:
    """The run's config from the command line (None when only the help was asked for); raises RecipeError."""
    invocation = COMMAND.parse(argv)
    if run_help(COMMAND, invocation):
        return None
    values = COMMAND.resolve(invocation)
    contrastive = bool(values.pop("contrastive", False))
    klass: Any = ContrastiveConfig if contrastive else AttributionConfig
    valid = set((CONTRASTIVE if contrastive else ATTRIBUTION).keys)
    misplaced = sorted(set(values) - valid)
    if misplaced:
        mode = "contrastive=true" if contrastive else "attribution (without contrastive=true)"
        raise RecipeError(f"{', '.join(misplaced)}: not a key of {mode}; `{COMMAND.prog()} --help` lists both")
    if not contrastive and invocation.subject is None:
        raise RecipeError(f"give an evaluation result folder (or contrastive=true with data=...)\n{COMMAND.usage()}")
    return construct(klass, values, result_dir=invocation.subject)


def main(argv: list[str] | None = None) -> int:
    from gnt.attribution.attnlrp import AttnLRPUnavailable
    from gnt.attribution.results import ResultError
    from gnt.attribution.run import run_attribution, run_contrastive
    from gnt.data.errors import DataError, DataErrors

    try:
        config = build_config(list(sys.argv[1:] if argv is None else argv))
        if config is None:
            return 0
        summary = run_contrastive(config) if isinstance(config, ContrastiveConfig) else run_attribution(config)
    except AttnLRPUnavailable as exc:
        print(f"error: AttnLRP unavailable: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (RecipeError, ResultError, DataError, DataErrors, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
