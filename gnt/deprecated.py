"""Every old spelling the project still accepts, in one dated table, and the one warning each of them gives.

Three kinds of old spelling exist, and each row says which:

- ``key``: a renamed recipe key (``http_max_retries`` → ``http_retries``). It is accepted wherever the new key is a
  key (in recipe files and on the command line alike), so every recipe kind that has the new key takes the old one
  too. Where two rows share an old key, the first whose new key the recipe kind has wins (``max_retries`` is the
  judge's ``judge_retries`` in a judge recipe, ``http_retries`` elsewhere).
- ``switch``: a command-line flag that set a key to a fixed value (``--all-rows`` → ``max_rows=null``); accepted
  wherever its key is a key.
- ``word``: a command-line word that changed place or shape (``--recipe FILE`` → the positional recipe); the command
  layer rewrites it before parsing.

Each spelling warns once per process (a recipe that repeats it, or a command that resolves several recipes, says
it once). ``since`` is the day the new spelling landed: a spelling may be dropped when it has been deprecated for a
while (the test suite checks that no shipped recipe and no command the demo runs uses an old spelling).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

log = logging.getLogger("gnt.deprecated")

Kind = Literal["key", "switch", "word"]


@dataclass(frozen=True)
class Deprecated:
    """One old spelling: what to write instead, since when, and why it changed."""

    kind: Kind
    old: str
    """The key (``out``), flag (``all_rows`` for ``--all-rows``) or word (``--recipe``) as it was written."""
    new: str
    """The key it stands for (``key``, ``switch``), or the new spelling in words (``word``)."""
    since: str
    why: str = ""
    value: Any = None
    """``switch``: the value the flag set its key to; ``key``: ``append`` where the old key's command-line values
    added to the recipe's list instead of replacing it (they still do); ``word``: ``drop`` for a word that is now
    left out, or the key the old option's next word (taken as written, even ``--x y``) is the value of; None for
    the recipe flags."""
    commands: tuple[str, ...] = ()
    """``word``: the commands that took it (empty: every command)."""

    def message(self) -> str:
        shown = f"--{self.old.replace('_', '-')}" if self.kind == "switch" else self.old
        instead = f"{self.new}={_text(self.value)}" if self.kind == "switch" else self.new
        because = f" ({self.why})" if self.why else ""
        return f"'{shown}' is deprecated since {self.since}: write {instead}{because}"


def _text(value: Any) -> str:
    if value is None:
        return "null"
    return str(value).lower() if isinstance(value, bool) else str(value)


DEPRECATED: tuple[Deprecated, ...] = (
    # --- recipe keys (in files and on the command line) ---
    Deprecated("key", "torch_dtype", "dtype", "2026-11-30", "transformers 5 renamed it"),
    Deprecated("key", "gradient_checkpointing", "activation_checkpointing", "2026-11-30", "transformers 5 renamed it"),
    Deprecated("key", "gradient_checkpointing_kwargs", "activation_checkpointing_kwargs", "2026-11-30",
               "transformers 5 renamed it"),
    Deprecated("key", "peft", "use_peft", "2026-11-30", "TRL's name"),
    Deprecated("key", "http_max_retries", "http_retries", "2026-12-01", "the HTTP retries have one name everywhere"),
    Deprecated("key", "max_retries", "judge_retries", "2026-12-01",
               "it also named the evaluator's HTTP retries (now http_retries)"),
    Deprecated("key", "max_retries", "http_retries", "2026-12-01",
               "it also named the judge's re-asks (now judge_retries)"),
    Deprecated("key", "out", "out_dir", "2026-12-01", "the folder a command writes is out_dir in every command"),
    Deprecated("key", "out", "validation", "2026-12-02",
               "the judge's validation report is one key: validate writes it, judging attaches it"),
    Deprecated("key", "run", "runs", "2026-12-02", "runs=a,b; on the command line run= added to the recipe's runs",
               value="append"),
    Deprecated("key", "adapter", "adapters", "2026-12-02", "adapters=a,b; on the command line adapter= added to the "
               "recipe's adapters", value="append"),
    Deprecated("key", "cell", "cells", "2026-12-01", "cells is a list key: --cell a --cell b is cells=a,b"),
    Deprecated("key", "prompts", "prompts_dir", "2026-12-01", "every folder key ends in _dir"),
    Deprecated("key", "judge_exemplars", "judge_exemplars_dir", "2026-12-01", "every folder key ends in _dir"),
    Deprecated("key", "poll", "poll_s", "2026-12-01", "every duration key ends in _s"),
    Deprecated("key", "timeout", "timeout_s", "2026-12-01", "every duration key ends in _s"),
    Deprecated("key", "stale_claim", "stale_claim_s", "2026-12-01", "every duration key ends in _s"),
    Deprecated("key", "bootstrap", "bootstrap_samples", "2026-12-01", "the resample count has one name everywhere"),
    Deprecated("key", "name", "outputs_name", "2026-12-02", "the outputs file's system name, beside outputs"),
    Deprecated("key", "main_ip", "main_process_ip", "2026-12-02", "accelerate's name, as in node_command's output"),
    Deprecated("key", "main_port", "main_process_port", "2026-12-02", "accelerate's name"),
    # --- command-line flags that set a key ---
    Deprecated("switch", "all_rows", "max_rows", "2026-12-01", value=None),
    Deprecated("switch", "include_non_common", "common_only", "2026-12-01", value=False),
    Deprecated("switch", "no_base", "include_base", "2026-12-01", value=False),
    Deprecated("switch", "quiet", "progress", "2026-12-01", value=False),
    # --- command-line words ---
    Deprecated("word", "--recipe", "the recipe file as a positional argument", "2026-12-01"),
    Deprecated("word", "--config", "the recipe file as a positional argument", "2026-11-30", "TrlParser's flag"),
    Deprecated("word", "--set", "KEY=VALUE (STEP.KEY=VALUE for one step's key)", "2026-12-01"),
    Deprecated("word", "judge", "eval/judge.py RESULTS ... (the results folder first)", "2026-12-01",
               commands=("judge",)),
    Deprecated("word", "--", "the training keys as key=value after the launch keys (no --)", "2026-12-02",
               "gnt launch hands every key it does not know to the training", value="drop", commands=("launch",)),
    Deprecated("word", "--launch-arg", "launch_args='--option value' (a list key)", "2026-12-02",
               value="launch_args", commands=("launch",)),
)

_warned: set[tuple[str, str, str]] = set()


def warn_once(entry: Deprecated, where: str = "") -> str:
    """Log the entry's warning the first time it is used in this process; return the message (for records)."""
    message = f"{where}: {entry.message()}" if where else entry.message()
    seen = (entry.kind, entry.old, entry.new)
    if seen not in _warned:
        _warned.add(seen)
        log.warning("%s", message)
    return message


def key_renames(keys: Iterable[str]) -> dict[str, Deprecated]:
    """The old key spellings a recipe kind with ``keys`` accepts, each with its row (the first row per old key)."""
    known = set(keys)
    found: dict[str, Deprecated] = {}
    for entry in DEPRECATED:
        if entry.kind == "key" and entry.new in known and entry.old not in known:
            found.setdefault(entry.old, entry)
    return found


def switches(keys: Iterable[str]) -> dict[str, Deprecated]:
    """The old flags that set one of ``keys`` to a fixed value, by flag name (``all_rows``)."""
    known = set(keys)
    return {e.old: e for e in DEPRECATED if e.kind == "switch" and e.new in known and e.old not in known}


def word(token: str, command: str) -> Deprecated | None:
    """The row of an old command-line word (``--recipe``, ``--set``...) where ``command`` took it."""
    for entry in DEPRECATED:
        if entry.kind == "word" and entry.old == token and (not entry.commands or command in entry.commands):
            return entry
    return None
