"""Recipes: a flat YAML file of known keys, plus command-line overrides, checked before anything heavy runs.

A recipe uses the field names of the dataclasses that consume it (TRL's ``SFTConfig``/``DPOConfig`` and
``ModelConfig``, and the project's own keys), so a user who knows TRL already knows the recipe language. What this
module adds over ``TrlParser``:

- the recipe is a **positional** argument (``train/sft.py recipes/qwen.yaml``), and overrides are accepted both as
  ``--key value`` / ``--key=value`` and as ``key=value`` (LLaMA-Factory style; the command line is read by
  :mod:`gnt.cli.command`, this module resolves what it read);
- an old spelling of a key (:mod:`gnt.deprecated`) is accepted where its new key is a key, with one warning;
- an unknown key fails at once, naming the closest valid keys, instead of after a model has loaded;
- malformed YAML, duplicate keys and values of the wrong type are reported with the file and line;
- values are coerced by the field's type (so ``1e-4`` is a float even though YAML 1.1 reads it as a string);
- every number is checked against its range (:class:`Bounds`): a float must be finite (``nan`` or ``inf`` would
  ruin a run without a word), an integer must fit a machine word, and a key with ``bounds`` in its field metadata
  (or given bounds by the schema, for TRL's own fields) must lie within them, so ``bootstrap_samples=1000000000``
  or ``dataloader_num_workers=-1`` is one error line before anything runs, not an exhausted allocator or a hang.

The schema is built from whatever dataclasses the caller passes (TRL's own are plain dataclasses); values are
converted by pydantic, parsed from YAML by PyYAML.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import functools
import json
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ConfigDict, TypeAdapter, ValidationError

from gnt.deprecated import Deprecated, key_renames, warn_once

EXIT_USAGE = 2
"""Exit status of every user-input error (recipe, data, adapter, capability), as argparse uses for bad usage."""


class RecipeError(ValueError):
    """A problem with a recipe or its overrides; the message says where and what to do."""

    exit_code = EXIT_USAGE


# ------------------------------------------------------------------------------------------------------------------
# Schema: which keys exist, their types and where they go
# ------------------------------------------------------------------------------------------------------------------


INT_LIMIT = 2**63 - 1
"""The largest integer (in absolute value) any numeric key takes: what a machine word holds."""


@dataclass(frozen=True)
class Bounds:
    """The range a numeric key's values must lie in, declared once: in the field's metadata (``{"bounds": Bounds(1,
    10**6)}``) or, for fields of classes the project does not own (TRL's), in the schema's ``bounds``.

    ``low``/``high`` are inclusive unless ``above``/``below`` make them strict; ``None`` leaves that side open (up to
    what every number must satisfy anyway: finite, and within :data:`INT_LIMIT`). ``give`` says in words what to give
    instead of the plain range; ``note`` adds what a value means when that helps to choose one.
    """

    low: float | None = None
    high: float | None = None
    above: bool = False
    below: bool = False
    note: str = ""
    give: str = ""

    def describe(self) -> str:
        """What to give: ``give``, else the range (``a value in [1, 1024]``), with the note."""
        if self.give:
            text = self.give
        elif self.low is not None and self.high is not None:
            text = (f"a value in {'(' if self.above else '['}{_number(self.low)}, {_number(self.high)}"
                    f"{')' if self.below else ']'}")
        elif self.low is not None:
            text = f"a value {'>' if self.above else '>='} {_number(self.low)}"
        elif self.high is not None:
            text = f"a value {'<' if self.below else '<='} {_number(self.high)}"
        else:
            text = "a finite number"
        return f"{text} ({self.note})" if self.note else text

    def contains(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.above else value < self.low):
            return False
        return not (self.high is not None and (value >= self.high if self.below else value > self.high))


def number_problem(value: Any, bounds: Bounds | None) -> str | None:
    """Why a number is not acceptable (not finite, too large for a machine word, outside ``bounds``), or None."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    wanted = (bounds or Bounds()).describe()
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value}: not a finite number; give {wanted}"
    if abs(value) > INT_LIMIT:
        return f"{value:.3g}: beyond what a machine holds; give {wanted}"
    if bounds is not None and not bounds.contains(value):
        return f"{_number(value)}: give {wanted}"
    return None


def _number(value: float) -> str:
    """A bound or a value as a person writes it: ``1048576``, ``0.5``, ``1e-08``."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"


@dataclass(frozen=True)
class KeySpec:
    """One recipe key: the dataclass that consumes it, its type annotation, default, allowed choices and range."""

    name: str
    owner: str
    annotation: Any
    default: Any = None
    choices: tuple[Any, ...] | None = None
    help: str = ""
    bounds: Bounds | None = None


@dataclass
class RecipeSchema:
    """The valid keys of one kind of recipe (e.g. the SFT stage), with aliases and hints about other kinds."""

    keys: dict[str, KeySpec]
    aliases: dict[str, str] = field(default_factory=dict)
    """Old or alternative names accepted and renamed (``torch_dtype`` → ``dtype``)."""
    elsewhere: dict[str, str] = field(default_factory=dict)
    """Keys that are invalid here but valid in another kind of recipe, with a hint (``beta`` → use train/dpo.py)."""
    description: str = ""
    """What the valid keys are, appended to unknown-key errors; by default the owning classes' names."""

    renamed: dict[str, Deprecated] = field(default_factory=dict)
    """The old spellings among the aliases, with their row of :mod:`gnt.deprecated` (each warns once when used)."""

    @classmethod
    def from_dataclasses(cls, classes: Sequence[type], bounds: Mapping[str, Bounds] | None = None,
                         **kwargs: Any) -> RecipeSchema:
        """Collect the init fields of ``classes``; a name claimed by several classes keeps its first owner.

        Every old spelling of :mod:`gnt.deprecated` whose new key is among the fields becomes an alias, so each
        recipe kind that has a key accepts its old names too. A key's range is its field's ``bounds`` metadata
        (inherited from a base class that declares the field, when a subclass redefines only its default), else
        ``bounds[name]``.
        """
        keys: dict[str, KeySpec] = {}
        for klass in classes:
            hints = typing.get_type_hints(klass, include_extras=True)
            for f in dataclasses.fields(klass):
                if not f.init or f.name.startswith("_") or f.name in keys:
                    continue
                default = f.default
                if default is dataclasses.MISSING:
                    default = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
                annotation = hints.get(f.name, Any)
                choices = f.metadata.get("choices") or _literal_options(annotation)
                keys[f.name] = KeySpec(
                    f.name, klass.__name__, annotation, default,
                    tuple(choices) if choices else None, str(f.metadata.get("help", "")),
                    _declared_bounds(klass, f.name) or (bounds or {}).get(f.name),
                )
        kwargs.setdefault("description", f"Recipe keys are the fields of {', '.join(k.__name__ for k in classes)}.")
        renamed = key_renames(keys)
        kwargs["aliases"] = {**{old: entry.new for old, entry in renamed.items()}, **kwargs.get("aliases", {})}
        kwargs["renamed"] = {**renamed, **kwargs.get("renamed", {})}
        return cls(keys, **kwargs)

    def subset(self, keep: Callable[[KeySpec], bool]) -> RecipeSchema:
        """The keys ``keep`` accepts, with the aliases that name them (a help section, a step's keys)."""
        keys = {name: spec for name, spec in self.keys.items() if keep(spec)}
        return RecipeSchema(keys, {a: k for a, k in self.aliases.items() if k in keys}, dict(self.elsewhere),
                            self.description, {a: r for a, r in self.renamed.items() if r.new in keys})

    def closest(self, key: str, n: int = 5) -> list[str]:
        """The valid keys closest to a misspelt one (difflib ratio, then substring matches)."""
        names = sorted(self.keys)
        close = difflib.get_close_matches(key, names, n=n, cutoff=0.6)
        if len(close) < n:
            close += [k for k in names if (key in k or k in key) and k not in close and len(k) > 2][: n - len(close)]
        return close

    def canonical(self, key: str, where: str) -> str:
        """The schema name of ``key`` (after aliases), or a RecipeError naming the closest valid keys."""
        key = key.replace("-", "_")
        key = self.aliases.get(key, key)
        if key in self.keys:
            return key
        message = f"{where}: unknown key '{key}'."
        if key in self.elsewhere:
            message += f" {self.elsewhere[key]}"
        suggestions = self.closest(key)
        if suggestions:
            message += f" Closest valid keys: {', '.join(suggestions)}."
        if self.description:
            message += f" ({self.description})"
        raise RecipeError(message)

    def coerce(self, key: str, value: Any, where: str) -> Any:
        """``value`` converted to the key's type, or a RecipeError saying what was expected."""
        spec = self.keys[key]
        try:
            result = coerce_value(value, spec.annotation)
        except (TypeError, ValueError) as exc:
            raise RecipeError(f"{where}: {key}: {exc}") from None
        problem = number_problem(result, spec.bounds)
        if problem:
            raise RecipeError(f"{where}: {key}: {problem}")
        if spec.choices and result is not None:
            values = result if isinstance(result, list) else [result]
            bad = [v for v in values if str(v) not in {str(c) for c in spec.choices}]
            if bad:
                raise RecipeError(
                    f"{where}: {key}: {bad[0]!r} is not one of {', '.join(str(c) for c in spec.choices)}"
                )
        return result


def _declared_bounds(klass: type, name: str) -> Bounds | None:
    """The ``bounds`` metadata of field ``name`` on ``klass`` or the nearest base class that declares it."""
    for base in klass.__mro__:
        if dataclasses.is_dataclass(base):
            for f in dataclasses.fields(base):
                if f.name == name and isinstance(f.metadata.get("bounds"), Bounds):
                    return f.metadata["bounds"]
    return None


# ------------------------------------------------------------------------------------------------------------------
# Type coercion (pydantic does the conversion; this layer only reshapes what recipes write)
# ------------------------------------------------------------------------------------------------------------------

_NONE = {"none", "null", "~", ""}
_LAX = ConfigDict(coerce_numbers_to_str=True)  # `run_name: 123` is the string "123", as a user means it
_PRIORITY = (bool, int, float, list, dict)
"""Union members are tried in this order, then everything else: a recipe's ``"a,b"`` for ``list[str] | str`` is
a list and ``'{"a": 1}'`` for ``dict | str`` is a mapping, which pydantic's own union order would keep as text."""


def _members(annotation: Any) -> tuple[Any, ...]:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(annotation)
    return (annotation,)


def _unannotated(member: Any) -> Any:
    """The type under ``Annotated[...]``; pydantic still applies the validators, this is only for classifying."""
    return typing.get_args(member)[0] if typing.get_origin(member) is typing.Annotated else member


def _bare(member: Any) -> Any:
    """The class a member is checked as: ``list`` for ``list[str]``, ``Literal`` for ``Literal["a", "b"]``."""
    member = _unannotated(member)
    return typing.get_origin(member) or member


def _literal_options(annotation: Any) -> tuple[Any, ...] | None:
    """The options of a ``Literal`` key (also under ``Annotated``), so ``--help`` can list them like ``choices``."""
    inner = _unannotated(annotation)
    return typing.get_args(inner) if typing.get_origin(inner) is typing.Literal else None


def _describe(annotation: Any) -> str:
    return str(annotation).replace("typing.", "").replace("<class '", "").replace("'>", "")


def coerce_value(value: Any, annotation: Any) -> Any:
    """Convert a YAML or command-line value to ``annotation`` (a dataclass field type); raise ValueError if it can't.

    The conversion itself is pydantic's lax mode, so ``"1e-4"`` (a string in YAML 1.1) is the float the user meant
    and ``"yes"`` is True. What recipes need beyond it is done first, in :func:`_reshape`: comma-separated lists,
    ``null`` spelled as text, and YAML 1.1's unquoted ``no`` (a boolean) where a choice such as
    ``eval_strategy: no`` is expected.
    """
    if annotation is Any:
        return value
    members = _members(annotation)
    allows_none = type(None) in members
    if value is None:
        if allows_none:
            return None
        raise ValueError(f"expected {_describe(annotation)}, got null")
    if isinstance(value, str) and allows_none:
        text = value.strip().lower()
        # "none" stays a string where strings are valid (report_to: none means "no integrations")
        if text in {"null", "~"} or (text in _NONE and str not in members):
            return None
    order = sorted(
        (m for m in members if m is not type(None)),
        key=lambda m: _PRIORITY.index(_bare(m)) if _bare(m) in _PRIORITY else len(_PRIORITY),
    )
    reasons = []
    for member in order:
        try:
            result = _adapter(member).validate_python(_reshape(value, member))
        except ValidationError as exc:
            reasons.append(exc.errors(include_url=False)[-1]["msg"])  # a float field: the float reason
            continue
        except (TypeError, ValueError) as exc:
            reasons.append(str(exc))
            continue
        return result.value if isinstance(result, enum.Enum) else result
    why = f" ({reasons[0]})" if len(reasons) == 1 else ""
    raise ValueError(f"expected {_describe(annotation)}, got {value!r}{why}")


def _reshape(value: Any, member: Any) -> Any:
    """``value`` in the shape pydantic expects for ``member``, or ValueError where the recipe must be changed."""
    bare = _bare(member)
    if bare in (int, float) and isinstance(value, bool):
        raise ValueError("a boolean where a number is expected")  # pydantic reads True as 1
    if bare in (list, tuple, Sequence):
        if isinstance(value, str):
            text = value.strip()
            value = yaml.safe_load(text) if text.startswith("[") else [p.strip() for p in text.split(",") if p.strip()]
        return value if isinstance(value, (list, tuple)) else [value]
    if bare in (dict, Mapping) and isinstance(value, str) and value.strip().startswith("{"):
        return json.loads(value) if value.strip().startswith('{"') else yaml.safe_load(value)
    choice = bare is typing.Literal or (isinstance(bare, type) and issubclass(bare, enum.Enum))
    if choice and isinstance(value, bool):
        return "yes" if value else "no"  # YAML 1.1 reads an unquoted `eval_strategy: no` as False
    if bare is str and isinstance(value, (dict, list, bool)):
        raise ValueError("not a string (quote it in YAML)")
    if not choice and bare not in (*_PRIORITY, str, Sequence, Mapping, tuple) and isinstance(bare, type):
        raise ValueError(f"{_describe(member)} cannot be set from a recipe")
    return value


@functools.lru_cache(maxsize=512)
def _adapter(member: Any) -> TypeAdapter:
    """One cached validator per type; a float field keeps an integer (TrainingArguments reads 4 steps and 0.1 as
    a ratio differently, so ``warmup_steps: 4`` must stay 4)."""
    if _bare(member) is float:
        member = int | float
    return TypeAdapter(member, config=_LAX)


# ------------------------------------------------------------------------------------------------------------------
# YAML with line numbers and duplicate detection
# ------------------------------------------------------------------------------------------------------------------


class _UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses duplicate keys (PyYAML keeps the last one silently) and records key lines."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key '{key}' (first on line {seen[key]})", key_node.start_mark
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load_yaml_mapping(path: str | Path) -> tuple[dict[str, Any], dict[str, int]]:
    """Read a recipe file: its top-level mapping and the line of each key. Errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        hint = ""
        here = Path("recipes")
        if here.is_dir():
            hint = f" Shipped recipes: {', '.join(sorted(p.name for p in here.glob('*.yaml')))}."
        raise RecipeError(f"recipe not found: {path}.{hint}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        line = path.read_bytes()[: exc.start].count(b"\n") + 1
        raise RecipeError(f"{path}:{line}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x}): a recipe is a YAML "
                          "text file; save it as UTF-8, or check that the path names the recipe") from None
    if "\0" in text:
        line = text[: text.index("\0")].count("\n") + 1
        raise RecipeError(f"{path}:{line}: a NUL byte: a recipe is a YAML text file, not a binary file")
    try:
        loader = _UniqueKeyLoader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else {}
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
        problem = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise RecipeError(f"{where}: malformed YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise RecipeError(f"{path}: malformed YAML: {exc}") from None
    except RecursionError:
        raise RecipeError(f"{path}: nested too deeply to read (a recipe is a flat mapping of keys to values)") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise RecipeError(f"{path}: a recipe is a mapping of keys to values, got a {type(data).__name__}")
    lines = {}
    if isinstance(node, yaml.MappingNode):
        lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value}
    return {str(k): v for k, v in data.items()}, lines


# ------------------------------------------------------------------------------------------------------------------
# Resolution
# ------------------------------------------------------------------------------------------------------------------


@dataclass
class ResolvedRecipe:
    """Recipe values after overrides and coercion, with where each value came from."""

    path: str | None
    values: dict[str, Any]
    sources: dict[str, str]
    overrides: list[str]
    notes: list[str] = field(default_factory=list)
    """Old key spellings that were accepted and renamed, with what to write instead (each warns once)."""

    @property
    def name(self) -> str:
        """The recipe's stem (``recipes/qwen-dpo.yaml`` → ``qwen-dpo``): the default run name."""
        return Path(self.path).stem if self.path else "cli"

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


RecipeReader = Callable[[str | Path], tuple[dict[str, Any], dict[str, int]]]
"""Reads a recipe file into its keys and their lines: :func:`load_yaml_mapping`, or a command's own reader for
files written for another command too (a judge adapter's training recipe read as a judge recipe)."""


def resolve_recipe(
    path: str | Path | None,
    overrides: Iterable[tuple[str, Any]],
    schema: RecipeSchema,
    defaults: Mapping[str, Any] | None = None,
    reader: RecipeReader | None = None,
) -> ResolvedRecipe:
    """Merge ``defaults`` < recipe file < overrides; every key checked against ``schema`` and coerced.

    Raises RecipeError for unknown keys, wrong types and malformed YAML (all before any model is loaded).
    """
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    notes: list[str] = []

    def canonical(raw_key: str, where: str) -> str:
        old = raw_key.replace("-", "_")
        if old in schema.renamed:
            notes.append(warn_once(schema.renamed[old], where))
        return schema.canonical(raw_key, where)

    for key, value in (defaults or {}).items():
        values[key] = schema.coerce(key, value, "default")
        sources[key] = "default"
    if path is not None:
        data, lines = (reader or load_yaml_mapping)(path)
        for raw_key, value in data.items():
            where = f"{path}:{lines.get(raw_key, '?')}"
            key = canonical(raw_key, where)
            values[key] = schema.coerce(key, value, where)
            sources[key] = "recipe"
    applied = []
    for raw_key, value in overrides:
        where = f"override '{raw_key}'"
        key = canonical(raw_key, where)
        values[key] = schema.coerce(key, value, where)
        sources[key] = "override"
        applied.append(f"{key}={value if not isinstance(value, list) else ','.join(map(str, value))}")
    return ResolvedRecipe(str(path) if path is not None else None, values, sources, applied, notes)


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


def split_by_owner(recipe: ResolvedRecipe, schema: RecipeSchema) -> dict[str, dict[str, Any]]:
    """Recipe values grouped by the dataclass that consumes them (``{"SFTConfig": {...}, "ModelConfig": {...}}``)."""
    groups: dict[str, dict[str, Any]] = {}
    for key, value in recipe.values.items():
        groups.setdefault(schema.keys[key].owner, {})[key] = value
    return groups
