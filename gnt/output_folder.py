"""One rule for every folder the project writes into: an empty (or new) folder, or one it wrote itself, of the
same kind. Never a folder of the user's, never one of another kind, never a source tree reached through a link.

Training (``output_dir`` of train/sft.py and train/dpo.py), the data build, an evaluation's results folder and a
report each write many files under fixed names (``README.md``, ``adapter_model.safetensors``, ``report.md``,
``figures/``...). Pointed at a folder that holds a user's files (``output_dir=.`` from a repository root, a paper's
folder) they would overwrite or delete them; pointed at a folder of another kind (DPO into its own SFT adapter's
run) they would mix two runs and overwrite the first. So each writer claims its folder first:

- a new or empty folder is claimed: :data:`MARKER` is written into it, naming its kind;
- a folder whose marker names the same kind is the writer's own (a resumed run, a rerun, a rebuilt report);
- a folder written by a version of the project that had no marker is recognised by the files it wrote;
- anything else is refused, before anything is written, with one line that names the folder, what it holds and
  what to do: :class:`OutputFolderError` (exit status 2, like every input error);
- a path that leads through a symbolic link into a source tree (a git work tree) is refused too: a link is an
  easy way to write into ``docs/`` without meaning to.

Files the project keeps beside its output for bookkeeping (:data:`BOOKKEEPING`: the marker, a run lock) do not
make a folder "not empty".
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from gnt.filenames import (
    CACHE_DIR,
    GENERATIONS,
    MANIFEST,
    RECORD,
    REPORT_DATA,
    REPORT_MARKDOWN,
    RUN_RECORD,
    SUMMARY,
)
from gnt.recipe import RecipeError

MARKER = ".gnt-folder.json"
"""Written into a claimed folder: ``{"format": ..., "kind": ...}``."""
MARKER_FORMAT = "gnt-align/output-folder/1"
DATA_MARKER = ".gnt-data-build"
"""The data build's own marker (it also lists the files the build wrote): a folder with it is a data build."""
BOOKKEEPING = frozenset({MARKER, ".gnt-run.lock"})

KINDS = {
    "sft": "an SFT run (train/sft.py)",
    "dpo": "a DPO run (train/dpo.py)",
    "grpo": "a GRPO run (train/grpo.py)",
    "onpolicy": "an on-policy alignment folder (train/onpolicy.py)",
    "data": "a data build (data/build.py)",
    "merged": "a merged model (merge_adapter: true of a training run)",
    "results": "an evaluation results folder (eval/evaluate.py)",
    "report": "a report (eval/report.py)",
}
"""Every kind of folder the project writes, with how it is named in messages."""


class OutputFolderError(RecipeError):
    """An output folder the command may not write into; the message says which and what to do (exit status 2)."""


def folder_kind(folder: str | Path) -> str | None:
    """The kind of project folder ``folder`` is: its marker's, else the kind earlier versions' files show; None
    for a folder the project did not write (or an empty one)."""
    folder = Path(folder)
    try:
        marked = json.loads((folder / MARKER).read_text(encoding="utf-8")).get("kind")
    except (OSError, ValueError, AttributeError):
        marked = None
    if marked in KINDS:
        return marked
    if (folder / DATA_MARKER).is_file() or _json_field(folder / MANIFEST, "format") == "gnt-align/data/1":
        return "data"
    stage = _json_field(folder / RUN_RECORD, "stage")
    if stage in ("sft", "dpo"):
        return stage
    if (folder / REPORT_DATA).is_file() and (folder / REPORT_MARKDOWN).is_file():
        return "report"
    if (folder / SUMMARY).is_file() or (folder / CACHE_DIR / GENERATIONS).is_file() or any(
            next(folder.glob(pattern), None) is not None
            for pattern in (f"*/{RECORD}", f"*/*/{RECORD}", f"*/{GENERATIONS}", f"*/*/{GENERATIONS}")):
        return "results"
    return None


def _json_field(path: Path, key: str) -> object:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data.get(key) if isinstance(data, dict) else None


def _through_link(path: Path) -> bool:
    """Whether any existing component of ``path`` (made absolute, not resolved) is a symbolic link."""
    current = Path(os.path.abspath(path))
    return any(part.is_symlink() for part in (current, *current.parents))


def source_tree(path: Path) -> Path | None:
    """The git work tree ``path`` lies in (the nearest folder above it holding ``.git``), or None."""
    for folder in (path, *path.parents):
        if (folder / ".git").exists():
            return folder
    return None


def _bookkeeping(name: str) -> bool:
    """A bookkeeping file, or one being written: an atomic write fills ``.NAME.XXXX`` beside ``NAME`` first, so a
    second process claiming the folder while the first writes the marker (two evaluation shards started together)
    must not take that file for one of the user's."""
    return name in BOOKKEEPING or any(name.startswith(f".{kept}.") for kept in BOOKKEEPING)


def contents(folder: Path) -> list[str]:
    """What a folder holds, bookkeeping left out, sorted (names of its entries)."""
    return sorted(p.name for p in folder.iterdir() if not _bookkeeping(p.name))


def check_output_folder(path: str | Path, kind: str, key: str = "out_dir", *, replaced_whole: bool = False) -> Path:
    """``path`` resolved, if ``kind``'s files may be written there; else :class:`OutputFolderError`. Writes nothing.

    ``replaced_whole``: the writer swaps the folder in whole (the data build), so it must not be the folder a
    shell or this process is in, nor a folder above it.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown folder kind {kind!r}; known: {', '.join(KINDS)}")
    given = Path(path)
    resolved = given.resolve()
    what = KINDS[kind]
    if _through_link(given):
        tree = source_tree(resolved)
        if tree is not None:
            raise OutputFolderError(
                f"{key}={path} leads through a symbolic link to {resolved}, inside the source tree {tree}: "
                f"{what} is never written into a source tree through a link; give a folder outside it")
    if replaced_whole:
        here = Path.cwd().resolve()
        if resolved == here or resolved in here.parents:
            raise OutputFolderError(
                f"{key}={path} is the folder you are in{'' if resolved == here else ' (or one above it)'}: "
                f"{what} is written to a new folder and swapped in whole; give a folder below it "
                f"(e.g. {key}={Path(path) / 'data' if resolved == here else 'outputs/data'})")
    if not resolved.exists():
        return resolved
    if not resolved.is_dir():
        raise OutputFolderError(f"{key}={path} is a file, not a folder: give a folder for {what}")
    found = folder_kind(resolved)
    if found == kind:
        return resolved
    if found is not None:
        raise OutputFolderError(
            f"{key}={path} holds {KINDS[found]}, not {what}: writing there would overwrite or mix its files; "
            "give a new or empty folder")
    held = contents(resolved)
    if held:
        more = f" and {len(held) - 3} more" if len(held) > 3 else ""
        raise OutputFolderError(
            f"{key}={path} already holds files this project did not write ({', '.join(held[:3])}{more}): "
            f"{what} goes into a new or empty folder, so that no file of yours is overwritten or deleted; give "
            "another folder")
    return resolved


def mark(folder: Path, kind: str) -> None:
    """Write ``kind``'s marker into ``folder`` (a folder a writer fills before swapping it in whole)."""
    from gnt.io import write_json

    write_json(folder / MARKER, {"format": MARKER_FORMAT, "kind": kind})


def claim_output_folder(path: str | Path, kind: str, key: str = "out_dir") -> Path:
    """:func:`check_output_folder`, then create the folder and mark it as ``kind``'s; returns the folder."""
    folder = check_output_folder(path, kind, key)
    folder.mkdir(parents=True, exist_ok=True)
    if not (folder / MARKER).is_file():
        mark(folder, kind)
    return folder
