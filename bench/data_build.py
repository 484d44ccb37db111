"""Data build: all SFT/DPO data from 6,000 synthetic mGeNTE-format rows + 10,000 templated pairs (goal ≤ 20 s).

The baseline is reading and validating the same TSVs alone, so the ratio shows what the build adds on top of I/O.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.record import Timer, print_table, save_record  # noqa: E402
from gnt.data.build import BuildConfig, build_dataset  # noqa: E402
from gnt.data.entry import LANGUAGES  # noqa: E402
from gnt.data.mgente import load_mgente  # noqa: E402
from gnt.data.templated import generate_pairs  # noqa: E402
from gnt.paths import SAMPLE_DIR  # noqa: E402

ROWS_PER_LANGUAGE = 1500
TEMPLATED_PAIRS = 10_000


def write_synthetic_mgente(directory: Path, rows_per_language: int = ROWS_PER_LANGUAGE) -> None:
    """1,500 rows per language made from the sample's rows with distinct ids and sources (parallel across languages)."""
    for lang in LANGUAGES:
        header, *body = (SAMPLE_DIR / f"en-{lang}.tsv").read_text(encoding="utf-8").splitlines()
        lines = [header]
        for index in range(rows_per_language):
            cells = body[index % len(body)].split("\t")
            cells[0], cells[1] = f"{lang.upper()}-{index:05d}", f"ep-synthetic-{index:05d}"
            cells[3] = f"{cells[3]} (item {index})"
            lines.append("\t".join(cells))
        (directory / f"en-{lang}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_synthetic_mgente(root)
        with Timer() as load:
            entries = load_mgente(root)
        config = BuildConfig(out_dir=str(root / "out"), mgente=str(root), templated_pairs=TEMPLATED_PAIRS, progress=False)
        with Timer() as build:
            manifest = build_dataset(config)
        with Timer() as templated:
            generate_pairs(LANGUAGES, max_pairs=TEMPLATED_PAIRS, seed=0)
    figures = {
        "mgente_rows": len(entries),
        "templated_pairs": TEMPLATED_PAIRS,
        "build_seconds": round(build.seconds, 3),
        "load_validate_seconds": round(load.seconds, 3),
        "build_over_load_ratio": round(build.seconds / load.seconds, 2),
        "templated_pairs_seconds": round(templated.seconds, 3),
        "rows_written": manifest["counts"]["totals"],
    }
    goals = {"build_seconds": "<= 20", "templated_pairs_seconds": "<= 5"}
    print_table("data build", [
        ("mGeNTE rows", figures["mgente_rows"], ""),
        ("templated pairs", TEMPLATED_PAIRS, ""),
        ("build seconds", figures["build_seconds"], goals["build_seconds"]),
        ("load+validate seconds", figures["load_validate_seconds"], "baseline"),
        ("build / load", figures["build_over_load_ratio"], ""),
        ("10,000 templated pairs, seconds", figures["templated_pairs_seconds"], goals["templated_pairs_seconds"]),
    ])
    print(f"  rows written: {figures['rows_written']}")
    print(f"record: {save_record('data_build', figures, goals)}")
    return figures


if __name__ == "__main__":
    main()
