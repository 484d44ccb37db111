"""The ``gnt`` command: one entry point with a subcommand per step of the project.

Each subcommand hands the rest of the command line to the same ``main`` as the script it names, so flags, output
and exit status are those of the script (``gnt eval X`` is ``python eval/evaluate.py X``). The command lines
themselves live in this package (``gnt/cli/<name>.py``); training stays in :mod:`gnt.training.cli` because
``accelerate launch`` needs the thin ``train/sft.py`` and ``train/dpo.py`` files.
"""

from __future__ import annotations

import difflib
import importlib
import sys
from collections.abc import Callable, Sequence

EXIT_USAGE = 2

#: subcommand → (module with ``main``, the script it stands for, one line of help)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "build": ("gnt.cli.build", "data/build.py", "build SFT/DPO training data and held-out evaluation files"),
    "sft": ("gnt.training.cli", "train/sft.py", "LoRA/QLoRA supervised fine-tuning (one process; GPUs: accelerate launch)"),
    "dpo": ("gnt.training.cli", "train/dpo.py", "DPO of an SFT adapter (one process; GPUs: accelerate launch)"),
    "eval": ("gnt.cli.evaluate", "eval/evaluate.py", "evaluate the base model and every checkpoint over the prompt grid"),
    "judge": ("gnt.cli.judge", "eval/judge.py", "judge translations (GNT accuracy, coherence), validate or check a judge"),
    "comet": ("gnt.cli.comet", "eval/comet.py", "score a results folder with xCOMET"),
    "attribute": ("gnt.cli.attribute", "eval/attribute.py", "context attribution: which prompt parts drive label and translation"),
    "templated": ("gnt.cli.templated", "eval/templated.py", "templated sensitivity suite (ΔM, ΔF, ΔN, neutral strategies)"),
    "report": ("gnt.cli.report", "eval/report.py", "write the report (Markdown + HTML), optionally log to W&B"),
    "watch": ("gnt.cli.watch", "eval/watch.py", "evaluate checkpoints from the training queue while training runs"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [
        "usage: gnt COMMAND [ARGS ...]",
        "",
        "Fine-tune, align and evaluate LLM translators for gender-neutral translation.",
        "",
        "commands (each takes the flags of the script in brackets; `gnt COMMAND --help` lists them):",
    ]
    lines += [f"  {name:<{width}}  {line} [{script}]" for name, (_, script, line) in COMMANDS.items()]
    lines += ["", "Multi-GPU training: accelerate launch train/sft.py RECIPE (train/dpo.py for DPO)."]
    return "\n".join(lines)


def entry(name: str) -> Callable[[list[str]], int]:
    """The ``main(argv)`` a subcommand dispatches to (imported only when used: torch is slow to import)."""
    module_name = COMMANDS[name][0]
    module = importlib.import_module(module_name)
    if module_name == "gnt.training.cli":
        return lambda argv: module.main(name, argv)
    return module.main


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
    program, sys.argv[0] = sys.argv[0], f"gnt {name}"  # argparse's default prog: usage lines say `gnt build`
    try:
        status = entry(name)(rest)
    finally:
        sys.argv[0] = program
    return int(status or 0)
