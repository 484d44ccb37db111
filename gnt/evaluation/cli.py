"""The command line of the evaluation commands (``gnt eval``, ``gnt templated``): a recipe, then ``key=value``.

    python eval/evaluate.py RECIPE [key=value ...]       e.g. run=runs/sft run=runs/dpo out=outputs/eval

What to evaluate and where the results go are recipe keys like every other (:class:`EvalTargets`, composed with
the command's own config classes), so a recipe may name them and the command line may override them. The flags
these commands used to take are the same keys written as ``--key value`` (``--run runs/sft --quiet``), so old
command lines keep working. ``run`` and ``adapter`` add up (``run=a run=b``, or ``run=a,b``) and add to the
recipe's ``runs``/``adapters``. A key ``step.key=value`` sets one entry of a mapping key (``judge.judge=lexical``).
Recipe and data errors exit 2, a leakage refusal :attr:`LeakageError.exit_code`, a failed step 1.
"""

from __future__ import annotations

import logging
import sys
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from gnt.evaluation.leakage import LeakageError
from gnt.filenames import SUMMARY
from gnt.recipe import RecipeError, RecipeSchema, parse_command_line, resolve_recipe, split_by_owner


@dataclass
class EvalTargets:
    """The keys that name what one evaluation command evaluates, on top of the recipe's ``runs``/``adapters``."""

    run: list[str] = field(default_factory=list, metadata={
        "help": "training output folder to evaluate (base + every checkpoint), added to runs; repeatable"})
    adapter: list[str] = field(default_factory=list, metadata={
        "help": "adapter folder to evaluate, added to adapters; repeatable"})
    out: str | None = field(default=None, metadata={"help": "results folder (wins over out_dir)"})
    quiet: bool = field(default=False, metadata={"help": "no progress bars or table (progress=false)"})


_ADDITIVE = {"run": "runs", "adapter": "adapters"}
"""Target keys whose values accumulate, and the EvalConfig list each one extends."""


@dataclass
class EvalCommand:
    """A resolved evaluation command line: the recipe path and the values, grouped by the class that owns them."""

    recipe: str | None
    groups: dict[str, dict[str, Any]]
    where: dict[tuple[str, str], str] = field(default_factory=dict)
    """Where each key (``(key, "")``) or mapping entry (``(key, entry)``) given on the command line came from."""

    def values(self, owner: type) -> dict[str, Any]:
        """The values of the keys ``owner`` (a config dataclass) consumes."""
        return dict(self.groups.get(owner.__name__, {}))


def command_help(prog: str, summary: str, schema: RecipeSchema) -> str:
    """``--help`` from the schema itself, in every command's layout: every key with its default and meaning,
    grouped by the class owning it."""
    from gnt.cli.help import CONVENTION, keys_section

    blocks = [f"usage: {prog} [RECIPE] [key=value ...]", summary.strip(),
              "positional:\n  RECIPE\n      a YAML file of the same keys"]
    for owner in dict.fromkeys(spec.owner for spec in schema.keys.values()):
        owned = RecipeSchema({name: spec for name, spec in schema.keys.items() if spec.owner == owner})
        blocks.append(keys_section(f"{owner} keys", owned))
    blocks.append(CONVENTION + " A mapping key's entry is set as KEY.ENTRY=value (judge.judge=lexical).")
    return "\n\n".join(blocks)


def _is_mapping_key(schema: RecipeSchema, key: str) -> bool:
    spec = schema.keys.get(key)
    return spec is not None and (typing.get_origin(spec.annotation) or spec.annotation) is dict


def parse_eval_command(argv: Sequence[str], classes: Sequence[type], *, prog: str, summary: str) -> EvalCommand | None:
    """Resolve ``argv`` against :class:`EvalTargets` + ``classes``; None when it asked for ``--help`` (printed).

    The targets are folded into the ``EvalConfig`` group (``run`` → ``runs``, ``out`` → ``out_dir``, ``quiet`` →
    ``progress``), so callers build their configs from the groups alone.
    """
    cli = parse_command_line(argv)
    schema = RecipeSchema.from_dataclasses([EvalTargets, *classes])
    if cli.help:
        called = sys.argv[0] if sys.argv and sys.argv[0].startswith("gnt ") else prog  # `gnt eval` says so
        print(command_help(called, summary, schema))
        return None
    if cli.dry_run:
        raise RecipeError("--dry-run is not an option of this command")
    overrides: list[tuple[str, Any]] = []
    additive: dict[str, list[Any]] = {}
    entries: list[tuple[str, str, Any]] = []
    where: dict[tuple[str, str], str] = {}
    for raw_key, value in cli.overrides:
        key = raw_key.replace("-", "_")
        head, dot, tail = key.partition(".")
        if dot and _is_mapping_key(schema, head):
            entries.append((head, tail, value))
            where[(head, tail)] = f"override '{raw_key}'"
        elif key in _ADDITIVE:
            additive.setdefault(key, []).extend(schema.coerce(key, value, f"override '{raw_key}'"))
        else:
            overrides.append((raw_key, value))
    overrides.extend(additive.items())
    resolved = resolve_recipe(cli.recipe, overrides, schema)
    for head, tail, value in entries:
        resolved.values[head] = {**(resolved.values.get(head) or {}), tail: value}
    where.update({(key, ""): f"override '{key}'" for key, source in resolved.sources.items() if source == "override"})
    groups = split_by_owner(resolved, schema)
    targets = EvalTargets(**groups.pop(EvalTargets.__name__, {}))
    evaluation = groups.setdefault("EvalConfig", {})
    for key, target in _ADDITIVE.items():
        if getattr(targets, key):
            evaluation[target] = [*evaluation.get(target, []), *getattr(targets, key)]
    if targets.out:
        evaluation["out_dir"] = targets.out
    if targets.quiet:
        evaluation["progress"] = False
    return EvalCommand(cli.recipe, groups, where)

Prepared = TypeVar("Prepared")


def eval_main(
    prepare: Callable[[], Prepared | None],
    run: Callable[[Prepared], Path],
    *,
    usage_errors: tuple[type[BaseException], ...] = (RecipeError,),
    failures: tuple[type[BaseException], ...] = (),
) -> int:
    """An evaluation command: ``prepare`` reads its command line (None: it printed ``--help``), then ``run`` runs it
    and returns the results folder; known errors become exit codes.

    ``usage_errors`` (a bad command line or recipe, bad data) exit 2, a leakage refusal exits
    :attr:`LeakageError.exit_code` and ``failures`` (a dead server, a model that does not load, a failed step)
    exit 1; anything else propagates.
    """
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        prepared = prepare()
        if prepared is None:
            return 0
        out = run(prepared)
    except usage_errors as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except LeakageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return LeakageError.exit_code
    except failures as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"results: {out}/{SUMMARY}")
    return 0


def run_eval_main(
    run: Callable[[], Path],
    *,
    usage_errors: tuple[type[BaseException], ...] = (RecipeError,),
    failures: tuple[type[BaseException], ...] = (),
) -> int:
    """:func:`eval_main` for a caller whose configuration is already built: call ``run``, map its errors."""
    return eval_main(lambda: True, lambda _ready: run(), usage_errors=usage_errors, failures=failures)
