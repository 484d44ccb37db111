"""Context attribution of an evaluated model: which prompt parts drive its label and its translation (docs/attribution.md).

    # grad×input on the 4-shot G+S cell of every language in the result, 50 rows per (set, label outcome)
    python eval/attribute.py outputs/eval/<model>

    # AttnLRP (lxt 2.1; Qwen2/Qwen3/Llama) on Set-N only, balanced by the judge's neutral/gendered outcome
    python eval/attribute.py outputs/eval/<model> --method attnlrp --cell it/G+S/4 --sets Set-N --balance-by judged

    # contrastive: log p(Ref-N answer) − log p(Ref-G answer) on the sample's common-set rows
    python eval/attribute.py --contrastive --data data/sample --model <model dir> --langs it --out outputs/attr

Results go to <result>/attribution/<cell>/<method>/ (or --out): scores.jsonl, aggregate.csv/json, PNG figures and
record.json. Exit status 2 on a usage or input problem (including AttnLRP being unavailable), with the reason.
"""

from __future__ import annotations

import argparse
import json
import sys

EXIT_USAGE = 2


def _csv(value: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in value.split(",") if x.strip())


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("result", nargs="?", help="evaluation result folder <out>/<model> (generations.jsonl, record.json)")
    parser.add_argument("--contrastive", action="store_true", help="contrastive mode (Ref-N vs Ref-G answers)")
    parser.add_argument("--cell", action="append", default=[], help="grid cell such as it/G+S/4 (repeatable; default <lang>/G+S/4)")
    parser.add_argument("--langs", type=_csv, default=(), help="contrastive: languages when no --cell is given")
    parser.add_argument("--sets", type=_csv, default=("Set-G", "Set-N"), help="comma-separated sets (default both)")
    parser.add_argument("--max-rows", type=int, default=None, help="row cap per (set, outcome) [50]; contrastive: per cell [20]")
    parser.add_argument("--all-rows", action="store_true", help="no row cap")
    parser.add_argument("--balance-by", default="label", choices=("label", "judged", "gnt", "none"),
                        help="outcome the row sample is balanced over (judged/gnt need judgments.jsonl)")
    parser.add_argument("--method", default="gradxinput", choices=("gradxinput", "attnlrp"))
    parser.add_argument("--targets", type=_csv, default=("S_L", "S_T"))
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-batch-tokens", type=int, default=32768, help="cap on padded tokens per batch")
    parser.add_argument("--model", help="model path or hub id (default: the result's record.json)")
    parser.add_argument("--adapter", help="LoRA adapter folder (default: the result's record.json); merged before attribution")
    parser.add_argument("--data", help="evaluation rows (Entry .jsonl or mGeNTE TSV/dir) when generations hold no sources")
    parser.add_argument("--prompts", help="prompt texts directory (default: the result's record, else data/prompts)")
    parser.add_argument("--grid-seed", type=int, help="shot-order seed (default: the result's record, else 0)")
    parser.add_argument("--sample-seed", type=int, default=0, help="seed of the row sample")
    parser.add_argument("--labels", default="matching", choices=("matching", "NEUTRAL", "GENDERED"),
                        help="contrastive answer labels: matching (NEUTRAL for Ref-N, GENDERED for Ref-G) or one for both")
    parser.add_argument("--include-non-common", action="store_true", help="contrastive: also rows outside the common set")
    parser.add_argument("--min-refs", type=int, default=1, help="contrastive: only rows with at least this many neutral references")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--dtype", default="auto", help="auto (bf16 on GPU, fp32 on CPU), bf16, fp32")
    parser.add_argument("--out", help="output root (default <result>/attribution)")
    parser.add_argument("--top-tokens", type=int, default=20, help="top tokens kept per row for inspection")
    parser.add_argument("--keep-token-scores", action="store_true", help="also save every ranked token's score")
    parser.add_argument("--no-plots", action="store_true")
    args = parser.parse_args(argv)
    if not args.contrastive and not args.result:
        parser.error("give an evaluation result folder (or --contrastive with --data)")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from gnt.attribution.attnlrp import AttnLRPUnavailable
    from gnt.attribution.results import ResultError
    from gnt.attribution.run import AttributionConfig, ContrastiveConfig, run_attribution, run_contrastive
    from gnt.data.errors import DataError, DataErrors

    try:
        if args.contrastive:
            config = ContrastiveConfig(
                model=args.model, result_dir=args.result, data=args.data, cells=tuple(args.cell), langs=args.langs,
                sets=args.sets, common_only=not args.include_non_common, min_refs=args.min_refs,
                max_rows=None if args.all_rows else (args.max_rows if args.max_rows is not None else 20),
                labels=args.labels, adapter=args.adapter, device=args.device, dtype=args.dtype, prompts_dir=args.prompts,
                grid_seed=args.grid_seed, sample_seed=args.sample_seed, out_dir=args.out, plots=not args.no_plots,
            )
            summary = run_contrastive(config)
        else:
            config = AttributionConfig(
                result_dir=args.result, cells=tuple(args.cell), sets=args.sets,
                max_rows=None if args.all_rows else (args.max_rows if args.max_rows is not None else 50),
                balance_by=args.balance_by, method=args.method, targets=args.targets, batch_size=args.batch_size,
                max_batch_tokens=args.max_batch_tokens, device=args.device, dtype=args.dtype, model=args.model,
                adapter=args.adapter, data=args.data, prompts_dir=args.prompts, grid_seed=args.grid_seed,
                sample_seed=args.sample_seed, out_dir=args.out, top_tokens=args.top_tokens,
                keep_token_scores=args.keep_token_scores, plots=not args.no_plots,
            )
            summary = run_attribution(config)
    except AttnLRPUnavailable as exc:
        print(f"error: AttnLRP unavailable: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (ResultError, DataError, DataErrors, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(summary, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
