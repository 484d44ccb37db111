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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gnt.data.build import BuildConfig, build_dataset  # noqa: E402
from gnt.data.entry import LANGUAGES  # noqa: E402
from gnt.data.errors import DataError, DataErrors  # noqa: E402
from gnt.data.training_rows import DPO_KINDS  # noqa: E402
from gnt.paths import SAMPLE_DIR  # noqa: E402


def parse_args(argv: list[str] | None = None) -> BuildConfig:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mgente", default=str(SAMPLE_DIR), help="directory of en-xx.tsv, one TSV, or a hub id")
    parser.add_argument("--out", default="outputs/data", help="output directory (replaced atomically)")
    parser.add_argument("--langs", default=",".join(LANGUAGES), help="comma-separated target languages")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--test-fraction", type=float, default=0.2, help="share of English sources held out")
    parser.add_argument("--dev-fraction", type=float, default=0.1)
    parser.add_argument("--templated-pairs", type=int, default=400, help="templated pairs to generate (0: none)")
    parser.add_argument("--dpo-kinds", default=",".join(DPO_KINDS))
    parser.add_argument("--prompts", default=None, help="directory with common.yaml and {lang}.yaml prompt texts")
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
    )
    if args.judge_exemplars:
        config.judge_exemplars_dir = args.judge_exemplars
    return config


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
