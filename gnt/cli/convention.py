"""The one command-line shape of every entry point: ``SUBJECT? RECIPE? [key=value | --key value ...]``.

A :class:`Command` is declared from the recipe schema of the settings it consumes (fields of config dataclasses
with ``help`` metadata); parsing, old flag spellings, closest-key errors and ``--help`` all come from that one
declaration, so a new setting is a new field and nothing else. The subject is the positional input a command
obviously works on (the results folder of ``report``, the queue of ``watch``); the recipe is a YAML file of the
same keys. Everything raises :class:`gnt.recipe.RecipeError` (exit status 2) before any work starts.
"""

from __future__ import annotations

import dataclasses
import difflib
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gnt.cli.help import CONVENTION, attribute_docs, keys_section, synonyms_by_key
from gnt.recipe import RecipeError, RecipeSchema, parse_command_line, resolve_recipe

HELP_TOKENS = ("-h", "--help")
RECIPE_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class Subject:
    """The positional input of a command, given first (``RESULTS``, ``QUEUE``)."""

    name: str
    help: str
    required: bool = True


@dataclass
class Invocation:
    """What one command line asked for, checked against the command's schema but not yet resolved."""

    subject: str | None
    recipe: str | None
    overrides: list[tuple[str, Any]]
    """Canonical key names, in order; a list key given several times holds all its values."""
    passed_on: list[tuple[str, Any]] = field(default_factory=list)
    """Keys this command does not know, for a command that hands them to another (the watcher's evaluation)."""
    help: bool = False


@dataclass
class Command:
    """One entry point: its script, its settings schema and the old flags kept as synonyms."""

    script: str
    """The file users run (``eval/report.py``); usage lines say ``gnt report`` when started through ``gnt``."""
    action: str = ""
    """A sub-action word that follows the script (``validate`` of ``eval/judge.py validate``)."""
    summary: str = ""
    schema: RecipeSchema = field(default_factory=lambda: RecipeSchema({}))
    subject: Subject | None = None
    recipe: str | None = "a YAML file of the same keys"
    """What the RECIPE positional is; None where the command takes no recipe file."""
    own_recipe: bool = True
    """False where the recipe belongs to another command (the watcher runs an evaluation recipe)."""
    flags: Mapping[str, tuple[str, Any]] = field(default_factory=dict)
    """Old flags that set a key to a fixed value: ``{"all_rows": ("max_rows", None)}`` makes ``--all-rows``."""
    sections: Sequence[tuple[str, RecipeSchema]] = ()
    """Help blocks as (title, schema of the keys shown there); by default one block with every key."""
    pass_on: str | None = None
    """Where unknown keys go instead of failing (their description in the help), or None: unknown keys fail."""

    # -- text ---------------------------------------------------------------------------------------------------

    def prog(self) -> str:
        """``gnt report`` when started through the ``gnt`` dispatcher, else the script's path."""
        started = sys.argv[0] if sys.argv else ""
        program = started if started.startswith("gnt ") else self.script
        return f"{program} {self.action}" if self.action else program

    def usage(self) -> str:
        parts = [self.prog()]
        if self.subject is not None:
            parts.append(self.subject.name if self.subject.required else f"[{self.subject.name}]")
        if self.recipe is not None:
            parts.append("[RECIPE]")
        parts.append("[key=value ...]")
        return "usage: " + " ".join(parts)

    def help(self) -> str:
        """The full ``--help``: usage, summary, positionals, every key with its type, default and meaning."""
        blocks = [self.usage(), self.summary.strip()]
        positionals = []
        if self.subject is not None:
            positionals.append(f"  {self.subject.name}\n      {self.subject.help}")
        if self.recipe is not None:
            positionals.append(f"  RECIPE\n      {self.recipe}")
        if positionals:
            blocks.append("positional:\n" + "\n".join(positionals))
        synonyms = synonyms_by_key(self.schema, self.flags)
        for title, schema in self.sections or (("keys", self.schema),):
            blocks.append(keys_section(title, schema, synonyms))
        if self.pass_on:
            blocks.append(f"Any other key: {self.pass_on}.")
        blocks.append(CONVENTION)
        return "\n\n".join(blocks)

    # -- parsing ------------------------------------------------------------------------------------------------

    def parse(self, argv: Sequence[str]) -> Invocation:
        """Split ``argv`` into subject, recipe and canonical overrides; unknown keys raise (closest keys named)."""
        tokens = list(argv)
        if any(token in HELP_TOKENS for token in tokens):
            return Invocation(None, None, [], help=True)
        subject = None
        if self.subject is not None and tokens and _positional(tokens[0]) and (
                self.subject.required or not tokens[0].endswith(RECIPE_SUFFIXES)):
            subject = tokens.pop(0)  # an optional subject yields to a recipe file in first place
        cli = parse_command_line(tokens)
        if cli.dry_run:
            raise RecipeError(f"{self.prog()} has no --dry-run")
        recipe = cli.recipe
        if recipe is not None and self.recipe is None:
            raise RecipeError(f"unexpected argument '{recipe}': {self.prog()} takes no recipe file\n{self.usage()}")
        overrides: list[tuple[str, Any]] = []
        passed_on: list[tuple[str, Any]] = []
        for raw_key, value in cli.overrides:
            key = raw_key.replace("-", "_")
            if key == "recipe" and self.recipe is not None and recipe is None and isinstance(value, str):
                recipe = value  # --recipe FILE, the old spelling of the positional recipe
                continue
            pair = self._flag(key, value)
            if pair is None:
                continue
            if pair[0] not in self.schema.keys and self.schema.aliases.get(pair[0]) is None and self.pass_on:
                passed_on.append((raw_key, value))
                continue
            overrides.append((self.canonical(pair[0], raw_key), pair[1]))
        if self.subject is not None and self.subject.required and (subject is None or (
                subject.endswith(RECIPE_SUFFIXES) and Path(subject).is_file())):
            raise RecipeError(f"give the {self.subject.name} first ({self.subject.help})\n{self.usage()}")
        return Invocation(subject, recipe, self._collect_lists(overrides), passed_on)

    def canonical(self, key: str, raw_key: str) -> str:
        """The schema name of ``key``; an unknown one fails naming the closest keys, old flag spellings included."""
        name = self.schema.aliases.get(key, key)
        if name in self.schema.keys:
            return name
        spellings = {**{k: k for k in self.schema.keys}, **self.schema.aliases,
                     **{flag: target for flag, (target, _) in self.flags.items()}}
        close = difflib.get_close_matches(key, list(spellings), n=8, cutoff=0.6)
        close += [k for k in spellings if len(k) > 2 and (key in k or k in key) and k not in close]
        suggestions = list(dict.fromkeys(spellings[k] for k in close))[:5]
        message = f"{self.prog()}: unknown key '{raw_key}'."
        if suggestions:
            message += f" Closest valid keys: {', '.join(suggestions)}."
        raise RecipeError(f"{message} `{self.prog()} --help` lists every key.")

    def _flag(self, key: str, value: Any) -> tuple[str, Any] | None:
        """``(key, value)`` after the old flag spellings; None for a flag switched off (``--all-rows=false``)."""
        target = self.flags.get(key)
        negated = key[3:] if key.startswith("no_") else None
        if target is None and negated is not None:
            name = self.schema.aliases.get(negated, negated)
            if name in self.schema.keys and _is_bool(self.schema.keys[name].annotation):
                target = (name, False)
        if target is None:
            return key, value
        on = value is True or (isinstance(value, str) and value.strip().lower() in {"true", "yes", "on", "1"})
        if not on and not (isinstance(value, str) and value.strip().lower() in {"false", "no", "off", "0"}):
            raise RecipeError(f"option '--{key.replace('_', '-')}' is a switch: give it alone, or =true/=false")
        return target if on else None

    def _collect_lists(self, overrides: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        """A list key given several times collects every value (``--cell a --cell b``), in order."""
        merged: dict[str, Any] = {}
        order: list[str] = []
        for key, value in overrides:
            if key in merged and _is_list(self.schema.keys[key].annotation):
                before = self.schema.coerce(key, merged[key], f"option '{key}'") or []
                now = self.schema.coerce(key, value, f"option '{key}'") or []
                merged[key] = [*before, *now]
            else:
                if key in merged:
                    order.remove(key)
                merged[key] = value
            order.append(key)
        return [(key, merged[key]) for key in order]

    def resolve(self, invocation: Invocation) -> dict[str, Any]:
        """The keys set by the recipe file (when it is this command's) and the command line, coerced by type."""
        recipe = invocation.recipe if self.own_recipe else None
        return resolve_recipe(recipe, invocation.overrides, self.schema).values


def construct(klass: type, values: Mapping[str, Any], **fixed: Any) -> Any:
    """``klass(**values)`` with only its own fields taken, and lists turned into tuples where the field is a tuple
    (recipes give lists; the configs keep tuples so they stay hashable and are saved as in code)."""
    hints = typing.get_type_hints(klass)
    kwargs = {}
    for f in dataclasses.fields(klass):
        if f.name not in values or not f.init:
            continue
        value = values[f.name]
        origin = typing.get_origin(hints.get(f.name))
        if isinstance(value, list) and (origin is tuple or any(
                typing.get_origin(arg) is tuple for arg in typing.get_args(hints.get(f.name)))):
            value = tuple(value)
        kwargs[f.name] = value
    kwargs.update(fixed)
    return klass(**kwargs)


def schema_of(classes: Sequence[type], exclude: Sequence[str] = (), **kwargs: Any) -> RecipeSchema:
    """A schema of the init fields of ``classes`` minus ``exclude`` (fields set by the subject or only by code)."""
    schema = RecipeSchema.from_dataclasses(classes, **kwargs)
    for name in exclude:
        schema.keys.pop(name, None)
    docs = {klass.__name__: attribute_docs(klass) for klass in classes}
    for name, spec in schema.keys.items():
        if not spec.help and name in docs.get(spec.owner, {}):
            schema.keys[name] = dataclasses.replace(spec, help=docs[spec.owner][name])
    return schema


def run_help(command: Command, invocation: Invocation) -> bool:
    """Print the help if asked; True when the command should stop there (exit status 0)."""
    if invocation.help:
        print(command.help())
    return invocation.help


def _positional(token: str) -> bool:
    """Not an option and not ``key=value`` (the same test :func:`gnt.recipe.parse_command_line` makes)."""
    if token.startswith("-"):
        return False
    key = token.split("=", 1)[0]
    return "=" not in token or not key.replace("_", "").replace("-", "").replace(".", "").isalnum()


def _members(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _is_bool(annotation: Any) -> bool:
    return bool in _members(annotation)


def _is_list(annotation: Any) -> bool:
    return any((typing.get_origin(m) or m) in (list, tuple) for m in _members(annotation))
