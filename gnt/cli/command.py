"""The one command layer: how every entry point of the project is declared, parsed, resolved, helped and run.

Every command line has one shape, ``[ACTION] [SUBJECT] [RECIPE] [key=value | --key value ...]``:

- an ACTION word picks a sub-command where a command has several (``eval/judge.py validate``);
- the SUBJECT is the positional input a command obviously works on (the results folder of ``report``, the queue
  of ``watch``), given first;
- the RECIPE is a YAML file of the same keys; the command line wins over it, and it wins over the defaults;
- every setting is a key: a field of the settings classes the command consumes, whose type, default and meaning
  are written once, on the field (``metadata={"help": ...}`` or the docstring under it).

A :class:`Command` declares that shape once; :meth:`Command.parse` reads a command line against it (tokens, old
spellings from :mod:`gnt.deprecated`, closest-key errors), :meth:`Command.resolve` merges defaults < recipe <
command line into one :class:`Call`, :meth:`Command.help` writes ``--help`` from the same declaration, and
:meth:`Command.main` runs the command and turns the project's errors into exit statuses. Nothing below this
layer parses a command line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import errno
import logging
import sys
import textwrap
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from gnt.cli.help import CONVENTION, attribute_docs, keys_section, synonyms_by_key
from gnt.deprecated import Deprecated, switches, warn_once, word
from gnt.recipe import Bounds, RecipeError, RecipeSchema, ResolvedRecipe, construct, resolve_recipe
from gnt.redact import install_log_redaction, redact

HELP_TOKENS = ("-h", "--help")
KEYS_TOKEN = "--help-keys"
RECIPE_SUFFIXES = (".yaml", ".yml")
EXIT_FAILURE = 1
"""Exit status of a run that started and failed (a dead server, a failed step); bad input exits 2."""


# ------------------------------------------------------------------------------------------------ tokens
@dataclass
class Words:
    """A command line cut into positionals and options, in order; values are as written (text, or True)."""

    positionals: list[str] = field(default_factory=list)
    options: list[tuple[str, Any]] = field(default_factory=list)


def is_assignment(token: str) -> bool:
    """``key=value`` (a key of letters, digits, ``_``, ``-`` and ``.``), not an option and not a path with ``=``."""
    if "=" not in token or token.startswith("-"):
        return False
    key = token.split("=", 1)[0]
    return bool(key) and key.replace("_", "").replace("-", "").replace(".", "").isalnum()


def tokenize(argv: Sequence[str]) -> Words:
    """Split ``argv``: ``--key=value``, ``--key value``, ``--key v1 v2`` (a list), a bare ``--flag`` (true),
    ``key=value``, and everything else positional."""
    words = Words()
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if token.startswith("--") and len(token) > 2:
            body = token[2:]
            if "=" in body:
                words.options.append(tuple(body.split("=", 1)))  # type: ignore[arg-type]
                continue
            values = []
            while i < len(tokens) and not tokens[i].startswith("--") and not is_assignment(tokens[i]):
                values.append(tokens[i])
                i += 1
            words.options.append((body, True if not values else values[0] if len(values) == 1 else values))
        elif is_assignment(token):
            words.options.append(tuple(token.split("=", 1)))  # type: ignore[arg-type]
        else:
            words.positionals.append(token)
    return words


def _old_words(argv: Sequence[str], command: str) -> tuple[list[str], str | None]:
    """``argv`` with the deprecated words of :mod:`gnt.deprecated` rewritten (each warns once), and the recipe
    file an old ``--recipe FILE`` / ``--config FILE`` named; ``--set STEP:KEY=VALUE`` becomes ``STEP.KEY=VALUE``,
    a word whose row names a key becomes ``KEY=NEXT``, and a dropped word goes."""
    out: list[str] = []
    recipe = None
    tokens = iter(argv)
    for token in tokens:
        name, equals, inline = token.partition("=")
        entry = word(name, command) if name.startswith("--") else None
        if entry is None:
            out.append(token)
            continue
        warn_once(entry, command)
        if entry.value == "drop":
            continue
        value = inline if equals else next(tokens, "")
        if name == "--set":
            head, colon, tail = value.partition(":")
            out.append(f"{head}.{tail}" if colon and "=" in tail and "=" not in head else value)
        elif entry.value is not None:
            out.append(f"{entry.value}={value}")
        elif recipe is None:
            recipe = value
        else:
            raise RecipeError(f"{token}: give one recipe file")
    return out, recipe


# ------------------------------------------------------------------------------------------------ declarations
@dataclass(frozen=True)
class Subject:
    """The positional input of a command, given first (``RESULTS``, ``QUEUE``)."""

    name: str
    help: str
    required: bool = True


@dataclass
class Invocation:
    """A command line read against a command's keys, not yet resolved."""

    command: Command
    subject: str | None = None
    recipe: str | None = None
    overrides: list[tuple[str, Any]] = field(default_factory=list)
    """Canonical key names, in order; a list key given several times holds all its values."""
    appended: list[tuple[str, Any]] = field(default_factory=list)
    """List keys whose command-line values add to the recipe's (the old ``run=``, ``adapter=``)."""
    entries: list[tuple[str, str, Any]] = field(default_factory=list)
    """``KEY.ENTRY=value`` of a mapping key (``judge.judge=lexical``: the entry ``judge`` of the key ``judge``)."""
    passed_on: list[tuple[str, Any]] = field(default_factory=list)
    """Keys this command does not know, for a command that hands them on (the watcher's evaluation recipe)."""
    help: str | None = None
    """``full`` (``--help``), ``keys`` (``--help-keys``) or None."""


@dataclass
class Call:
    """One resolved command line: what a command's run function receives."""

    command: Command
    subject: str | None
    recipe: ResolvedRecipe
    passed_on: list[tuple[str, Any]] = field(default_factory=list)
    where: dict[tuple[str, str], str] = field(default_factory=dict)
    """Where each key (``(key, "")``) or mapping entry (``(key, entry)``) of the command line came from."""
    recipe_file: str | None = None
    """The RECIPE given, also where it belongs to another command (the watcher's evaluation recipe)."""

    @property
    def values(self) -> dict[str, Any]:
        return self.recipe.values

    def owned(self, owner: type) -> dict[str, Any]:
        """The values of the keys ``owner`` (a settings class) declares or inherits."""
        names = {f.name for f in dataclasses.fields(owner)}
        return {key: value for key, value in self.values.items() if key in names}

    def build(self, klass: type, **fixed: Any) -> Any:
        """``klass`` from the values its fields name (lists become tuples where a field is a tuple), plus ``fixed``."""
        return construct(klass, self.values, **fixed)


Run = Callable[[Call], Any]


@dataclass
class Command:
    """One entry point: its script, the settings classes whose fields are its keys, and what it runs."""

    name: str
    """The ``gnt`` subcommand (``eval``; ``judge validate`` for an action)."""
    script: str
    """The file users run (``eval/evaluate.py``)."""
    line: str
    """One line for ``gnt --help``."""
    settings: Callable[[], Sequence[type]]
    """The settings classes (imported when first needed: some pull in torch or TRL)."""
    run: Run | None = None
    """The command itself: receives the :class:`Call`; returns an exit status or None (0)."""
    summary: str = ""
    """The text under the usage line of ``--help`` (the module docstring)."""
    action: str = ""
    subject: Subject | None = None
    recipe: str | None = "a YAML file of the same keys"
    """What the RECIPE positional is; None where the command takes no recipe file."""
    own_recipe: bool = True
    """False where the recipe belongs to another command (the watcher runs an evaluation recipe)."""
    exclude: tuple[str, ...] = ()
    """Fields of the settings classes that are not keys (set from the subject, or by code)."""
    defaults: Mapping[str, Any] = field(default_factory=dict)
    """Defaults that differ from the classes' own, applied below the recipe (training: ``use_peft: true``)."""
    bounds: Mapping[str, Bounds] = field(default_factory=dict)
    """Ranges of numeric keys whose classes declare none (TRL's fields): :class:`gnt.recipe.Bounds`."""
    elsewhere: Callable[[], Mapping[str, str]] | None = None
    """Keys of other commands, with a hint where they belong (``beta`` → train/dpo.py)."""
    description: str = ""
    """What the valid keys are, appended to unknown-key errors."""
    sections: Callable[[RecipeSchema], Sequence[tuple[str, RecipeSchema]]] | None = None
    """Help blocks as (title, keys); by default one block per settings class."""
    pass_on: str | None = None
    """Where unknown keys go instead of failing (their description in the help), or None: unknown keys fail."""
    actions: Mapping[str, Command] = field(default_factory=dict)
    """Sub-commands named by a first word (``validate``, ``check``)."""
    exits: Mapping[type, int] = field(default_factory=dict)
    """Exit statuses of built-in exceptions this command maps (the project's errors carry ``exit_code``)."""
    reader: Callable[[], Any] | None = None
    """Returns how this command reads its recipe file (:data:`gnt.recipe.RecipeReader`), where it reads files
    written for another command too; None: a YAML file of this command's keys."""
    prog: str = ""
    """How usage lines name the command: the script path, or ``gnt NAME`` through the dispatcher."""

    def __post_init__(self) -> None:
        if not self.prog:
            self.prog = f"{self.script} {self.action}" if self.action else self.script

    def named(self, prog: str) -> Command:
        """This command as usage lines should name it (``gnt judge validate``), actions included."""
        actions = {word: action.named(f"{prog} {word}") for word, action in self.actions.items()}
        return dataclasses.replace(self, prog=prog, actions=actions)

    # -- keys ---------------------------------------------------------------------------------------------------

    @cached_property
    def schema(self) -> RecipeSchema:
        """Every key of the command with its type, default and meaning (old spellings accepted as aliases)."""
        classes = list(self.settings())
        kwargs: dict[str, Any] = {}
        if self.description:
            kwargs["description"] = self.description
        schema = RecipeSchema.from_dataclasses(classes, bounds=self.bounds, **kwargs)
        for name in self.exclude:
            schema.keys.pop(name, None)
        schema.aliases = {old: new for old, new in schema.aliases.items() if new in schema.keys}
        if self.elsewhere is not None:
            schema.elsewhere.update({k: v for k, v in self.elsewhere().items() if k not in schema.keys})
        docs = {klass.__name__: attribute_docs(klass) for cls in classes for klass in cls.__mro__}
        for name, spec in schema.keys.items():
            if not spec.help and name in docs.get(spec.owner, {}):
                schema.keys[name] = dataclasses.replace(spec, help=docs[spec.owner][name])
        return schema

    @cached_property
    def switches(self) -> dict[str, Deprecated]:
        return switches(self.schema.keys)

    # -- text ---------------------------------------------------------------------------------------------------

    def usage(self) -> str:
        parts = [self.prog]
        if self.actions:
            parts.append(f"[{' | '.join(self.actions)}]")
        if self.subject is not None:
            parts.append(self.subject.name if self.subject.required else f"[{self.subject.name}]")
        if self.recipe is not None:
            parts.append("[RECIPE]")
        parts.append("[key=value ...]")
        return "usage: " + " ".join(parts)

    def help(self) -> str:
        """The full ``--help``: usage, summary, actions, positionals, every key with its type, default and meaning."""
        blocks = [self.usage(), self.summary.strip()]
        if self.actions:
            blocks.append("actions (each with its own --help):\n" + "\n".join(
                f"  {word:<10} {action.line}" for word, action in self.actions.items()))
        positionals = []
        if self.subject is not None:
            positionals.append(f"  {self.subject.name}\n      {self.subject.help}")
        if self.recipe is not None:
            positionals.append(f"  RECIPE\n      {self.recipe}")
        if positionals:
            blocks.append("positional:\n" + "\n".join(positionals))
        synonyms = synonyms_by_key(self.schema, self.switches)
        for title, schema in self._sections():
            blocks.append(keys_section(title, schema, synonyms))
        if self.pass_on:
            blocks.append(f"Any other key: {self.pass_on}.")
        if any(_is_mapping(spec.annotation) for spec in self.schema.keys.values()):
            blocks.append("A mapping key's entry is set as KEY.ENTRY=value (judge.judge=lexical).")
        blocks.append(CONVENTION)
        return "\n\n".join(block for block in blocks if block)

    def key_names(self) -> str:
        """``--help-keys``: the key names grouped by the class that consumes them."""
        lines = []
        for title, schema in self._sections():
            lines.append(f"{title} ({len(schema.keys)} keys):")
            lines.append(textwrap.fill(", ".join(sorted(schema.keys)), 100, initial_indent="  ",
                                       subsequent_indent="  "))
        return "\n".join(lines)

    def _sections(self) -> list[tuple[str, RecipeSchema]]:
        if self.sections is not None:
            return list(self.sections(self.schema))
        owners = dict.fromkeys(spec.owner for spec in self.schema.keys.values())
        return [(f"{owner} keys", self.schema.subset(lambda spec, owner=owner: spec.owner == owner))
                for owner in owners]

    # -- parsing ------------------------------------------------------------------------------------------------

    def parse(self, argv: Sequence[str]) -> Invocation:
        """Read ``argv`` against the command's keys; unknown keys raise (closest keys named) unless passed on."""
        argv = list(argv)
        if argv and argv[0] in self.actions:
            return self.actions[argv[0]].parse(argv[1:])
        legacy = word(argv[0], self.name) if argv and self.actions and not argv[0].startswith("-") else None
        if legacy is not None:  # an old action word whose command is now the default (``judge RESULTS``)
            warn_once(legacy, self.name)
            argv = argv[1:]
        tokens, flagged_recipe = _old_words(argv, self.name)
        if any(token in HELP_TOKENS for token in tokens):
            return Invocation(self, help="full")
        if KEYS_TOKEN in tokens:
            return Invocation(self, help="keys")
        words = tokenize(tokens)
        positionals = list(words.positionals)
        subject = None
        if self.subject is not None and positionals and (
                self.subject.required or not positionals[0].endswith(RECIPE_SUFFIXES)):
            subject = positionals.pop(0)  # an optional subject yields to a recipe file in first place
        recipe = positionals.pop(0) if positionals and self.recipe is not None and flagged_recipe is None else None
        if flagged_recipe is not None:
            if self.recipe is None:
                raise RecipeError(f"{self.prog} takes no recipe file\n{self.usage()}")
            recipe = flagged_recipe
        if positionals:
            what = "takes no recipe file" if self.recipe is None else "takes one recipe file"
            raise RecipeError(f"unexpected argument '{positionals[0]}': {self.prog} {what}\n{self.usage()}")
        if self.subject is not None and self.subject.required and (subject is None or (
                subject.endswith(RECIPE_SUFFIXES) and Path(subject).is_file())):
            raise RecipeError(f"give the {self.subject.name} first ({self.subject.help})\n{self.usage()}")
        invocation = self.read_options(words.options)
        invocation.subject, invocation.recipe = subject, recipe
        return invocation

    def read_options(self, options: Sequence[tuple[str, Any]]) -> Invocation:
        """Canonical overrides from ``(key, value)`` options as written (``--max-rows``, ``no_plots``, ``a.b``)."""
        invocation = Invocation(self)
        for raw_key, value in options:
            key = raw_key.replace("-", "_")
            head, dot, tail = key.partition(".")
            if dot and head in self.schema.keys and _is_mapping(self.schema.keys[head].annotation):
                invocation.entries.append((head, tail, value))
                continue
            pair = self._switch(key, value)
            if pair is None:
                continue
            name = pair[0]
            if name not in self.schema.keys and name not in self.schema.aliases and self.pass_on:
                invocation.passed_on.append((raw_key, value))
                continue
            canonical = self.canonical(name, raw_key)
            renamed = self.schema.renamed.get(name)
            if renamed is not None:
                warn_once(renamed, self.prog)
                if renamed.value == "append":
                    invocation.appended.append((canonical, pair[1]))
                    continue
            invocation.overrides.append((canonical, pair[1]))
        invocation.overrides = self._collect_lists(invocation.overrides)
        invocation.appended = self._collect_lists(invocation.appended)
        return invocation

    def canonical(self, key: str, raw_key: str) -> str:
        """The schema name of ``key``; an unknown one fails naming the closest keys, old spellings included."""
        name = self.schema.aliases.get(key, key)
        if name in self.schema.keys:
            return name
        spellings = {**{k: k for k in self.schema.keys}, **self.schema.aliases,
                     **{flag: entry.new for flag, entry in self.switches.items()}}
        close = difflib.get_close_matches(key, list(spellings), n=8, cutoff=0.6)
        close += [k for k in spellings if len(k) > 2 and (key in k or k in key) and k not in close]
        suggestions = list(dict.fromkeys(spellings[k] for k in close))[:5]
        message = f"{self.prog}: unknown key '{raw_key}'."
        if key in self.schema.elsewhere:
            message += f" {self.schema.elsewhere[key]}"
        if suggestions:
            message += f" Closest valid keys: {', '.join(suggestions)}."
        if self.description:
            message += f" {self.description}"
        raise RecipeError(f"{message} `{self.prog} --help` lists every key.")

    def _switch(self, key: str, value: Any) -> tuple[str, Any] | None:
        """``(key, value)`` after the old fixed-value flags and ``--no-KEY``; None for a flag switched off."""
        entry = self.switches.get(key)
        negated = key[3:] if key.startswith("no_") else None
        target: tuple[str, Any] | None = (entry.new, entry.value) if entry is not None else None
        if target is None and negated is not None:
            name = self.schema.aliases.get(negated, negated)
            if name in self.schema.keys and _is_bool(self.schema.keys[name].annotation):
                target = (name, False)
        if target is None:
            return key, value
        if entry is not None:
            warn_once(entry, self.name)
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
                continue
            if key in merged:
                order.remove(key)
            merged[key] = value
            order.append(key)
        return [(key, merged[key]) for key in order]

    # -- resolution ---------------------------------------------------------------------------------------------

    def resolve(self, invocation: Invocation) -> Call:
        """Defaults < the recipe file (when it is this command's) < the command line, coerced by type, in one
        :class:`Call`; recipe errors name the file and line, override errors the option."""
        recipe = invocation.recipe if self.own_recipe else None
        reader = self.reader() if self.reader is not None else None
        resolved = resolve_recipe(recipe, invocation.overrides, self.schema, self.defaults, reader)
        where = {(key, ""): f"override '{key}'" for key, source in resolved.sources.items() if source == "override"}
        for key, value in invocation.appended:
            before = resolved.values.get(key) or []
            resolved.values[key] = [*before, *self.schema.coerce(key, value, f"option '{key}'")]
            resolved.sources[key] = "override"
            where[(key, "")] = f"override '{key}'"
        for head, tail, value in invocation.entries:  # coerced as a whole: a typed mapping gets typed values
            merged = {**(resolved.values.get(head) or {}), tail: value}
            resolved.values[head] = self.schema.coerce(head, merged, f"override '{head}.{tail}'")
            where[(head, tail)] = f"override '{head}.{tail}'"
        return Call(self, invocation.subject, resolved, invocation.passed_on, where, invocation.recipe)

    def call(self, argv: Sequence[str]) -> Call | None:
        """Parse and resolve ``argv`` (None when it asked for help, which is printed); raises on bad input."""
        invocation = self.parse(argv)
        if invocation.help is not None:
            print(invocation.command.help() if invocation.help == "full" else invocation.command.key_names())
            return None
        return invocation.command.resolve(invocation)

    # -- running ------------------------------------------------------------------------------------------------

    def main(self, argv: Sequence[str] | None = None) -> int:
        """Run the command line: the one place where every command's failures become one ``error:`` line with
        what to do, and an exit status.

        The project's errors carry their status; a Ctrl-C says how to resume (no traceback of whatever library
        was running); an operating-system error names its file and, for a full disk, what to free; a file that
        cannot be read as what it should be (not UTF-8, nested too deeply) says so. Anything else is a bug: its
        traceback is shown. Every log line is redacted (:mod:`gnt.redact`), HTTP libraries' own included.
        """
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
        install_log_redaction()
        argv = list(sys.argv[1:] if argv is None else argv)
        command = self
        try:
            call = self.call(argv)
            if call is None:
                return 0
            command = call.command
            if command.run is None:
                raise RecipeError(f"give an action: {' | '.join(command.actions)}\n{command.usage()}")
            status = command.run(call)
        except KeyboardInterrupt:
            _close_progress_bars()
            print(f"error: interrupted. {RESUME_HINT}", file=sys.stderr, flush=True)
            return EXIT_INTERRUPTED
        except Exception as exc:
            code = exit_status(exc, command.exits)
            if code is None:
                raise
            _close_progress_bars()
            print(f"error: {redact(error_text(exc))}", file=sys.stderr, flush=True)
            return code
        return int(status or 0)


def _close_progress_bars() -> None:
    """Close the progress bars an error left open (a trainer's, a sweep's), so the ``error:`` line starts a line."""
    tqdm = sys.modules.get("tqdm")
    for bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", None) or ()):
        with contextlib.suppress(Exception):  # a bar that cannot close must not hide the error
            bar.close()


EXIT_INTERRUPTED = 130
"""Exit status after Ctrl-C (128 + SIGINT, as shells report it)."""
RESUME_HINT = ("Finished work is kept: run the same command again to go on (training resumes from its last complete "
               "checkpoint; an evaluation computes only what is missing; a data build starts again)")
DISK_HINTS = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "that file system is read-only: write elsewhere",
    errno.EACCES: "no permission to write there: write elsewhere or fix the folder's permissions",
}


def error_text(exc: BaseException) -> str:
    """The ``error:`` line of an error: its message, and for a disk error what to do about it."""
    if isinstance(exc, (UnicodeDecodeError, RecursionError)):
        return unreadable_text(exc)
    if not isinstance(exc, OSError):
        return str(exc)
    number = getattr(exc, "errno", None)
    hint = DISK_HINTS.get(number)
    if number in (errno.ENOSPC, errno.EDQUOT):
        hint = f"{hint}: {free_space_hint(exc.filename)}"
    return f"{exc} ({hint})" if hint else str(exc)


def free_space_hint(filename: Any) -> str:
    """What to do on a full disk: how much is free where the file was written, and that finished work is kept."""
    import shutil

    where = Path(filename) if filename else Path.cwd()
    folder = next((p for p in (where, *where.parents) if p.is_dir()), Path.cwd())
    try:
        free = shutil.disk_usage(folder).free
        have = f"{free / 2**30:.1f} GiB free on the disk of {folder}; "
    except OSError:
        have = ""
    return (f"{have}free space there (old checkpoints, caches, outputs) or write elsewhere, then run the same "
            "command again (finished work is kept)")


def unreadable_text(exc: BaseException) -> str:
    """A file that is not text, or is nested beyond what can be read, as one line (the readers that know the file
    name say it themselves; this is the last resort)."""
    if isinstance(exc, UnicodeDecodeError):
        return (f"a file is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at position {exc.start}): save it "
                "as UTF-8, or check that the path names the file you meant")
    return "a file is nested too deeply to be read (thousands of levels): it is damaged or not what was meant"


def exit_status(exc: BaseException, exits: Mapping[type, int]) -> int | None:
    """The exit status of an error: its class's ``exit_code`` (the project's errors), else the command's mapping
    of built-in exceptions, else 1 for an operating-system error (a full or read-only disk, a missing file: one
    ``error:`` line in every command), 2 for an unreadable file, else None (a bug: the traceback is shown)."""
    code = getattr(type(exc), "exit_code", None)
    if isinstance(code, int):
        return code
    for kind, status in exits.items():
        if isinstance(exc, kind):
            return status
    if isinstance(exc, OSError):
        return EXIT_FAILURE
    if isinstance(exc, (UnicodeDecodeError, RecursionError)):
        return 2
    return None


# ------------------------------------------------------------------------------------------------ helpers
def _members(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)


def _is_bool(annotation: Any) -> bool:
    return bool in _members(annotation)


def _is_list(annotation: Any) -> bool:
    return any((typing.get_origin(m) or m) in (list, tuple) for m in _members(annotation))


def _is_mapping(annotation: Any) -> bool:
    return any((typing.get_origin(m) or m) is dict for m in _members(annotation))
