"""The ``gnt`` command: one entry point with a subcommand per step of the project.

Every subcommand is a :class:`gnt.cli.command.Command` registered below, and every script of the project
(``data/build.py``, ``train/sft.py``, ``eval/evaluate.py``, ...) runs the same Command, so keys, output and exit
status are the same either way (``gnt eval X`` is ``python eval/evaluate.py X``). Every command line has one
shape, ``[ACTION] [SUBJECT] [RECIPE] [key=value ...]``, parsed, resolved and helped by that one class; old
spellings are in :mod:`gnt.deprecated`. ``accelerate launch`` needs the thin ``train/sft.py`` and
``train/dpo.py`` files for multi-GPU training.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence

from gnt.cli import (
    attribute,
    build,
    comet,
    evaluate,
    judge,
    launch,
    models,
    onpolicy,
    report,
    templated,
    train,
    watch,
)
from gnt.cli.command import Command
from gnt.recipe import EXIT_USAGE

COMMANDS: dict[str, Command] = {command.name: command for command in (
    build.COMMAND, train.SFT, train.DPO, train.GRPO, onpolicy.COMMAND, evaluate.COMMAND, judge.COMMAND, comet.COMMAND, attribute.COMMAND,
    templated.COMMAND, report.COMMAND, watch.COMMAND, models.COMMAND, launch.COMMAND,
)}
"""Every subcommand, in the order ``gnt --help`` lists them."""


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [
        "usage: gnt COMMAND [ARGS ...]",
        "",
        "Fine-tune, align and evaluate LLM translators for gender-neutral translation.",
        "",
        "commands (each is the script in brackets: gnt COMMAND [SUBJECT] [RECIPE] [key=value ...];",
        "`gnt COMMAND --help` lists every key with its default and meaning):",
    ]
    lines += [f"  {name:<{width}}  {command.line} [{command.script}]" for name, command in COMMANDS.items()]
    lines += ["", "Multi-GPU training: accelerate launch train/sft.py RECIPE (train/dpo.py for DPO)."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch ``gnt COMMAND ARGS...``; return the subcommand's exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else EXIT_USAGE
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        close = difflib.get_close_matches(name, COMMANDS, n=1)
        hint = f" Did you mean `gnt {close[0]}`?" if close else ""
        print(f"error: unknown command {name!r}.{hint} Commands: {', '.join(COMMANDS)}", file=sys.stderr)
        return EXIT_USAGE
    return COMMANDS[name].named(f"gnt {name}").main(rest)
