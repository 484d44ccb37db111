"""The text pieces of ``--help`` (:meth:`gnt.cli.command.Command.help` puts them together), generated from a
command's recipe schema, so each key's type, default and meaning are written once (the config field and its
``help`` metadata) and the help can never disagree with what the command accepts.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from gnt.deprecated import Deprecated
from gnt.recipe import KeySpec, RecipeSchema

WIDTH = 100


def describe_type(annotation: Any) -> str:
    """A short, readable type (``int | None``, ``list[str]``, ``offline | online``) for the help line of a key."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(describe_type(arg) for arg in args)
    if origin is typing.Literal:
        return " | ".join(map(str, args))
    if origin in (list, tuple):
        return f"list[{describe_type(args[0]) if args else 'Any'}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def describe_default(value: Any) -> str:
    """A default as a user would type it on the command line (lists comma-separated, ``null``, ``true``); ``null``
    rather than ``none`` because a text key reads ``none`` as the word."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) if value else "(empty)"
    if isinstance(value, dict):
        return "{}" if not value else str(value)
    return str(value)


def key_lines(spec: KeySpec, synonyms: Sequence[str] = ()) -> list[str]:
    """The help entry of one key: ``name = default  (type)`` then its meaning, indented."""
    kind = describe_type(spec.annotation)
    if spec.choices:
        kind = " | ".join(map(str, spec.choices))
    head = f"  {spec.name} = {describe_default(spec.default)}  ({kind})"
    if synonyms:
        head += f"  also {', '.join(synonyms)}"
    meaning = spec.help or "(no description)"
    body = textwrap.wrap(meaning, WIDTH - 6, initial_indent="      ", subsequent_indent="      ")
    return [head, *body]


def keys_section(title: str, schema: RecipeSchema, synonyms: Mapping[str, Sequence[str]] | None = None) -> str:
    """A titled block listing the keys of ``schema`` in the order they were declared."""
    lines = [f"{title}:"]
    for name, spec in schema.keys.items():
        lines += key_lines(spec, (synonyms or {}).get(name, ()))
    return "\n".join(lines)


def synonyms_by_key(schema: RecipeSchema, switches: Mapping[str, Deprecated]) -> dict[str, list[str]]:
    """Old spellings per key (deprecated, see gnt/deprecated.py): renamed keys and fixed-value flags."""
    found: dict[str, list[str]] = {}
    for alias, key in schema.aliases.items():
        found.setdefault(key, []).append(f"--{alias.replace('_', '-')}")
    for flag, entry in switches.items():
        found.setdefault(entry.new, []).append(
            f"--{flag.replace('_', '-')} (= {entry.new}={describe_default(entry.value)})")
    return found


def attribute_docs(klass: type) -> dict[str, str]:
    """The docstrings written under a class's fields (``x: int = 1`` then ``\"\"\"meaning\"\"\"``), by field name:
    the meaning of a key whose field has no ``help`` metadata, so it is not written a second time for the help."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
    except (OSError, TypeError, SyntaxError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs = {}
    for before, after in zip(body, body[1:], strict=False):
        if (isinstance(before, ast.AnnAssign) and isinstance(before.target, ast.Name) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            docs[before.target.id] = " ".join(after.value.value.split())
    return docs


CONVENTION = (
    "Every key is set as key=value or --key value (the same keys can come from a YAML recipe; the command line\n"
    "wins). A list is comma-separated (langs=it,es); a list key given twice on the command line collects both.\n"
    "A boolean key is switched off with key=false or --no-KEY. An unknown key is an error (exit status 2) naming\n"
    "the closest valid keys; an old spelling (\"also ...\") still works and warns once (gnt/deprecated.py)."
)
