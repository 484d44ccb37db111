"""Build the report of a results folder: ``report.md`` + self-contained ``report.html`` + ``figures/*.png``.

Also writes ``report_data.json``: the numbers behind the tables (with p-values) for anyone who wants them without
parsing Markdown. The report folder defaults to ``<results>/report`` and is rebuilt whole each time, so a watcher
can call :func:`build_report` after every checkpoint and the reader always sees the latest complete state.

A build composes the whole report in a staging folder of its own (``.build-*`` inside the report folder) and then,
holding the report folder's lock, moves it into place: the figures folder by one rename, each file by an atomic
replace, ``report.md`` last. Two evaluations or two reports writing into one folder at once therefore never
delete each other's figures half-way (each build is whole; the later one wins), and a build that dies leaves the
previous report as it was.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

from gnt.filenames import REPORT_DATA, REPORT_HTML, REPORT_MARKDOWN
from gnt.io import file_lock, write_text_atomic
from gnt.output_folder import claim_output_folder
from gnt.report.collect import collect
from gnt.report.config import ReportConfig
from gnt.report.document import compose
from gnt.report.html import render_html
from gnt.report.markdown import render_markdown

log = logging.getLogger(__name__)

FIGURES = "figures"
STAGING = ".build-"
"""Prefix of a build's staging folder inside the report folder."""
LOCK = ".report.lock"
STALE_S = 3600.0


def report_folder(results_dir: str | Path, config: ReportConfig) -> Path:
    """Where the report of ``results_dir`` goes: ``out_dir``, else ``<results>/report``."""
    return Path(config.out_dir) if config.out_dir else Path(results_dir) / "report"


def build_report(results_dir: str | Path, config: ReportConfig | None = None) -> Path:
    """Write the report of ``results_dir`` as ``config`` says; return the path of report.md."""
    config = config or ReportConfig()
    results = collect(results_dir, config.judge_validation)
    out = claim_output_folder(report_folder(results_dir, config), "report")  # never a user's folder
    stage = Path(tempfile.mkdtemp(prefix=STAGING, dir=out))
    try:
        document = compose(results, stage, config)
        write_text_atomic(stage / REPORT_DATA, json.dumps(document.data, indent=2, ensure_ascii=False,
                                                          default=str) + "\n")
        write_text_atomic(stage / REPORT_HTML, render_html(document))
        write_text_atomic(stage / REPORT_MARKDOWN, render_markdown(document))
        _move_into_place(stage, out)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    markdown = out / REPORT_MARKDOWN
    log.info("report: %s (and report.html, %d figures)", markdown, len(list((out / FIGURES).rglob("*.png"))))
    return markdown


def _move_into_place(stage: Path, out: Path) -> None:
    """Swap a finished build into the report folder under its lock: figures by one rename, files by replace."""
    with file_lock(out / LOCK):
        retired = out / f"{STAGING}retired-{stage.name}"
        if (out / FIGURES).exists():
            os.rename(out / FIGURES, retired)
        if (stage / FIGURES).exists():
            os.rename(stage / FIGURES, out / FIGURES)
        for name in (REPORT_DATA, REPORT_HTML, REPORT_MARKDOWN):  # report.md last: a folder holding it is complete
            os.replace(stage / name, out / name)
        shutil.rmtree(retired, ignore_errors=True)
        for stale in out.glob(f"{STAGING}*"):  # builds that died long ago (a live one is younger than an hour)
            if stale.is_dir() and time.time() - stale.stat().st_mtime > STALE_S:
                shutil.rmtree(stale, ignore_errors=True)
