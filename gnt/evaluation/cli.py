"""The command line shared by the evaluation entry scripts (``eval/evaluate.py``, ``eval/templated.py``).

Both take a recipe, flags naming what to evaluate (``--run``, ``--adapter``, ``--model``, a row source), ``--out``,
``--allow-leakage`` and ``--quiet``; anything else is a recipe key as ``key=value`` (or ``--key value``). Both map
recipe and data errors to exit code 2, a leakage refusal to :attr:`LeakageError.exit_code`, and print where the
results went.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gnt.evaluation.leakage import LeakageError
from gnt.recipe import RecipeError, parse_command_line


def parse_eval_args(
    argv: list[str],
    *,
    prog: str,
    description: str,
    epilog: str,
    recipe_help: str,
    model_help: str,
    source: tuple[str, str],
    leakage_help: str,
    quiet_help: str,
) -> tuple[argparse.Namespace, list[str]]:
    """The flags of an evaluation script (``source`` is the row-source flag and its help) and the leftover args."""
    parser = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog)
    parser.add_argument("recipe", help=recipe_help)
    parser.add_argument("--run", action="append", default=[], help="training output folder (repeatable)")
    parser.add_argument("--adapter", action="append", default=[], help="an adapter folder (repeatable)")
    parser.add_argument("--model", help=model_help)
    parser.add_argument(source[0], help=source[1])
    parser.add_argument("--out", help="output folder (recipe key out_dir)")
    parser.add_argument("--allow-leakage", action="store_true", help=leakage_help)
    parser.add_argument("--quiet", action="store_true", help=quiet_help)
    return parser.parse_known_args(argv)


def recipe_overrides(rest: list[str]) -> list[tuple[str, Any]]:
    """The ``key=value`` (or ``--key value``) recipe overrides left over after the flags."""
    return parse_command_line(rest).overrides


def run_eval_main(
    run: Callable[[], Path],
    *,
    usage_errors: tuple[type[BaseException], ...] = (RecipeError,),
    failures: tuple[type[BaseException], ...] = (),
) -> int:
    """Configure logging, call ``run`` (which returns the results folder) and turn known errors into exit codes.

    ``usage_errors`` (a bad recipe, bad data) exit 2, a leakage refusal exits :attr:`LeakageError.exit_code` and
    ``failures`` (a dead server, a model that does not load) exit 1; anything else propagates.
    """
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        out = run()
    except usage_errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except LeakageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return LeakageError.exit_code
    except failures as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"results: {out}/summary.json")
    return 0
