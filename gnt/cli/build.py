"""Build SFT/DPO training data and held-out evaluation files from mGeNTE plus templated inputs.

    python data/build.py                                  # bundled sample → outputs/data
    python data/build.py --mgente path/to/tsv_dir --out outputs/data-full
    python data/build.py --mgente FBK-MT/mGeNTE --langs it,es   # the hub (gated: log in first)

Exit status 2 on invalid input (each problem printed as file:line:column), with nothing written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gnt.data.build import BuildConfig, build_dataset
from gnt.data.entry import LANGUAGES
from gnt.data.errors import DataError, DataErrors
from gnt.data.training_rows import DPO_KINDS
from gnt.prompts.grid import CONFIGS, SHOT_COUNTS


def parse_args(argv: list[str] | None = None) -> BuildConfig:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mgente", default=BuildConfig.mgente, help="directory of en-xx.tsv, one TSV, or a hub id")
    parser.add_argument("--out", default="outputs/data", help="output directory (replaced atomically)")
    parser.add_argument("--langs", default=",".join(BuildConfig.langs), help="comma-separated target languages")
    parser.add_argument("--seed", type=int, default=BuildConfig.seed)
    parser.add_argument("--test-fraction", type=float, default=BuildConfig.test_fraction, help="share of English sources held out")
    parser.add_argument("--dev-fraction", type=float, default=BuildConfig.dev_fraction)
    parser.add_argument("--templated-pairs", type=int, default=BuildConfig.templated_pairs, help="templated pairs to generate (0: none)")
    parser.add_argument("--dpo-kinds", default=",".join(BuildConfig.dpo_kinds))
    parser.add_argument("--train-configs", default=",".join(CONFIGS),
                        help="prompt configurations training prompts are drawn from (default: all)")
    parser.add_argument("--train-shots", default=",".join(map(str, SHOT_COUNTS)),
                        help="shot counts training prompts are drawn from (default: all)")
    parser.add_argument(
        "--prompts", default=None,
        help="prompt texts: a directory with common.yaml and {lang}.yaml, or the mGeNTE release's prompt_en-{lang}.yaml files",
    )
    parser.add_argument("--judge-exemplars", default=None, help="directory of {lang}.jsonl judge exemplars to exclude")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    langs = tuple(x.strip() for x in args.langs.split(",") if x.strip())
    bad = [x for x in langs if x not in LANGUAGES]
    if bad:
        parser.error(f"unknown language(s) {bad}; valid: {', '.join(LANGUAGES)}")
    if not langs:
        parser.error(f"--langs {args.langs!r} selects no language; valid: {', '.join(LANGUAGES)}")
    for flag, value in (("--test-fraction", args.test_fraction), ("--dev-fraction", args.dev_fraction)):
        if not 0 <= value < 1:
            parser.error(f"{flag} {value} must be in [0, 1)")
    if args.test_fraction + args.dev_fraction >= 1:
        parser.error("--test-fraction + --dev-fraction must stay below 1 (no room left for training rows)")
    if args.templated_pairs < 0:
        parser.error(f"--templated-pairs {args.templated_pairs} must be 0 (none) or a positive count")
    kinds = tuple(k.strip() for k in args.dpo_kinds.split(",") if k.strip())
    unknown = [k for k in kinds if k not in DPO_KINDS]
    if unknown or not kinds:
        parser.error(f"--dpo-kinds: unknown kind(s) {unknown or [args.dpo_kinds]}; valid: {', '.join(DPO_KINDS)}")
    config = BuildConfig(
        out_dir=args.out, mgente=args.mgente, langs=langs, seed=args.seed, test_fraction=args.test_fraction,
        dev_fraction=args.dev_fraction, templated_pairs=args.templated_pairs,
        dpo_kinds=kinds,
        prompts_dir=args.prompts, progress=not args.no_progress,
        train_configs=tuple(c.strip() for c in args.train_configs.split(",") if c.strip()),
        train_shots=tuple(_shot(parser, s) for s in args.train_shots.split(",") if s.strip()),
    )
    if args.judge_exemplars:
        config.judge_exemplars_dir = args.judge_exemplars
    return config


def _shot(parser: argparse.ArgumentParser, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        parser.error(f"--train-shots: {text.strip()!r} is not a shot count ({', '.join(map(str, SHOT_COUNTS))})")


def main(argv: list[str] | None = None) -> int:
    config = parse_args(argv)
    try:
        manifest = build_dataset(config)
    except (DataError, DataErrors) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    totals = manifest["counts"]["totals"]
    print(f"data written to {Path(config.out_dir).resolve()} in {manifest['seconds']} s")
    for name, count in totals.items():
        print(f"  {name:<12} {count:>7} rows")
    held_out = sum(sum(v.values()) for v in [manifest["counts"]["mgente"]["test"]])
    print(f"  held-out mGeNTE rows: {held_out}; excluded: {manifest['counts']['excluded']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
