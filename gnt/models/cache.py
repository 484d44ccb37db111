"""Where offline models are cached, and how a model folder is built into the cache atomically."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from gnt.io import disk_full_error, folder_damage, is_disk_full, plain_mode

MARKER = "gnt_model.json"
"""Every finished model folder carries this file; a folder without it is not a finished build."""


def default_cache_dir() -> Path:
    """``$GNT_CACHE_DIR/models`` when the variable is set, else ``~/.cache/gnt-align/models``."""
    root = os.environ.get("GNT_CACHE_DIR")
    base = Path(root).expanduser() if root else Path.home() / ".cache" / "gnt-align"
    return base / "models"


def fingerprint(*parts: str | bytes, files: Iterable[Path] = ()) -> str:
    """Short content hash of strings/bytes and file contents: the cache key of a builder."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8") if isinstance(part, str) else part)
        h.update(b"\0")
    for f in files:
        h.update(Path(f).read_bytes())
        h.update(b"\0")
    return h.hexdigest()[:12]


def is_built(folder: Path) -> bool:
    return (folder / MARKER).is_file()


class DamagedModel(ValueError):
    """A finished model folder of the cache whose files no longer read whole: one line saying what to delete."""

    exit_code = 2


def build_cached(final: Path, build: Callable[[Path], object]) -> Path:
    """Return ``final``, building it with ``build(tmp_dir)`` first if it is not there yet.

    The build goes into a temporary sibling folder that is renamed into place only once it is complete, so a
    crash never leaves a half-written model behind and concurrent builders do not see each other's partial work
    (the loser of a race discards its copy). A finished folder whose files were damaged since (a truncated
    tokenizer) is :class:`DamagedModel`, naming the folder to delete: rerunning alone would only fail again. A disk
    that fills during the build is an ``OSError(ENOSPC)`` naming the cache folder. The folder gets the permissions
    of a plainly made one (the umask's), so a group sharing the cache can read it.
    """
    final = Path(final)
    if is_built(final):
        damage = folder_damage(final)
        if damage:
            raise DamagedModel(f"the cached model {final} is damaged ({damage}): delete that folder (rm -r {final}) "
                               "and run the command again; it is rebuilt")
        return final
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    plain_mode(tmp, folder=True)
    try:
        try:
            build(tmp)
        except Exception as exc:
            if is_disk_full(exc) and not (isinstance(exc, OSError) and exc.filename):
                raise disk_full_error(exc, final.parent, f"building the model {final.name} into the cache") from exc
            raise
        if not is_built(tmp):
            raise RuntimeError(f"builder did not write {MARKER} into {tmp}")
        if final.exists() and not is_built(final):
            shutil.rmtree(final, ignore_errors=True)  # leftover of an interrupted, non-atomic copy
        try:
            os.rename(tmp, final)
        except OSError:
            if not is_built(final):
                raise
            # another process finished first: keep theirs
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return final
