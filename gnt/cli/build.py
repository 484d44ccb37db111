"""Build SFT/DPO training data and held-out evaluation files from mGeNTE plus templated inputs.

    python data/build.py                                        # bundled sample → outputs/data
    python data/build.py mgente=path/to/tsv_dir out_dir=outputs/data-full
    python data/build.py mgente=FBK-MT/mGeNTE langs=it,es        # the hub (gated: log in first)
    python data/build.py recipes/my-data.yaml seed=1             # the same keys from a YAML file

The keys are the fields of gnt.data.build.BuildConfig. Exit status 2 on invalid input (each problem printed as
file:line:column), with nothing written.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gnt.cli.convention import Command, construct, run_help, schema_of
from gnt.data.build import BuildConfig, build_dataset
from gnt.data.errors import DataError, DataErrors
from gnt.recipe import EXIT_USAGE, RecipeError

COMMAND = Command(
    script="data/build.py",
    summary=__doc__ or "",
    schema=schema_of([BuildConfig], exclude=("extra",), aliases={
        "out": "out_dir", "prompts": "prompts_dir", "judge_exemplars": "judge_exemplars_dir",
    }),
)


def parse_args(argv: list[str] | None = None) -> BuildConfig | None:
    """The build's config from the command line (None when only the help was asked for); raises RecipeError."""
    invocation = COMMAND.parse(sys.argv[1:] if argv is None else argv)
    if run_help(COMMAND, invocation):
        return None
    return construct(BuildConfig, COMMAND.resolve(invocation)).validate()


def main(argv: list[str] | None = None) -> int:
    try:
        config = parse_args(argv)
        if config is None:
            return 0
        manifest = build_dataset(config)
    except (RecipeError, DataError, DataErrors) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    totals = manifest["counts"]["totals"]
    print(f"data written to {Path(config.out_dir).resolve()} in {manifest['seconds']} s")
    for name, count in totals.items():
        print(f"  {name:<12} {count:>7} rows")
    held_out = sum(sum(v.values()) for v in [manifest["counts"]["mgente"]["test"]])
    print(f"  held-out mGeNTE rows: {held_out}; excluded: {manifest['counts']['excluded']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
