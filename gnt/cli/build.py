"""Build SFT/DPO training data and held-out evaluation files from mGeNTE plus templated inputs.

    python data/build.py                                        # bundled sample → outputs/data
    python data/build.py mgente=path/to/tsv_dir                 # your mGeNTE copy → outputs/data (the recipes read it)
    python data/build.py mgente=FBK-MT/mGeNTE langs=it,es        # the hub (gated: log in first)
    python data/build.py recipes/my-data.yaml seed=1             # the same keys from a YAML file

The keys are the fields of gnt.data.build.BuildConfig and, for the judge's training rows,
gnt.judge.training_rows.JudgeRowSettings. Exit status 2 on invalid input (each problem printed as
file:line:column), with nothing written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gnt.cli.command import Call, Command


def _settings() -> tuple[type, ...]:
    from gnt.data.build import BuildConfig
    from gnt.judge.training_rows import JudgeRowSettings

    return (BuildConfig, JudgeRowSettings)


def build_config(call: Call) -> Any:
    """The build's config from a resolved command line (validated: bad input raises before anything is read)."""
    from gnt.data.build import BuildConfig

    return call.build(BuildConfig).validate()


def _run(call: Call) -> None:
    from gnt.data.build import build_dataset
    from gnt.judge.training_rows import JudgeRowSettings, JudgeRowsExtra

    config = build_config(call)
    judge = call.build(JudgeRowSettings).validate()
    manifest = build_dataset(config, [JudgeRowsExtra(judge, tuple(config.langs))] if judge.judge_rows else [])
    for note in manifest.get("notes", []):
        print(f"note: {note}", flush=True)
    totals = manifest["counts"]["totals"]
    print(f"data written to {Path(config.out_dir).resolve()} in {manifest['seconds']} s")
    for name, count in totals.items():
        print(f"  {name:<12} {count:>7} rows")
    held_out = sum(manifest["counts"]["mgente"]["test"].values())
    print(f"  held-out mGeNTE rows: {held_out}; excluded: {manifest['counts']['excluded']}")
    if "judge" in manifest:
        counts = manifest["judge"]["counts"]
        print(f"  judge rows ({manifest['judge']['format']}): train {counts['train']['rows']}, dev "
              f"{counts['dev']['rows']}; held-out references {sum(counts['references'].values())} entries")


COMMAND = Command(
    name="build", script="data/build.py", line="build SFT/DPO training data and held-out evaluation files",
    settings=_settings, run=_run, summary=__doc__ or "", exclude=("extra",),
)


def main(argv: list[str] | None = None) -> int:
    return COMMAND.main(argv)
