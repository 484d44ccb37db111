"""The templates of the templated suite (``data/templates/templates.yaml``): English and target sentences with
slots, validated on load (every problem as ``file:line:column: message``), and rendered for one gender.
"""


from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from gnt.data.entry import LANGUAGES, Gender
from gnt.data.errors import DataError
from gnt.data.templated.adjectives import KINDS, VARIANTS, Choice, Kind
from gnt.paths import TEMPLATES_DIR

DEFAULT_TEMPLATES_PATH = TEMPLATES_DIR / "templates.yaml"

_SLOT = re.compile(r"\{([^{}]*)\}")
_ALTERNATION_INDEX: dict[str, int] = {"M": 0, "F": 1, "N": 2}
_TEMPLATE_KEYS = {"id", "kind", "stereotype_cue", "cue_stereotype", "en", *LANGUAGES}
_ID = re.compile(r"^[a-z0-9_]+$")


@dataclass(frozen=True)
class TemplateTexts:
    """The determined and the ambiguous text of one template in one language."""

    determined: str
    ambiguous: str


@dataclass(frozen=True)
class Template:
    """An English minimal pair with its parallel target templates.

    ``stereotype_cue`` is the occupation or adverb in the sentence that carries a gender stereotype (None when the
    template has none); ``cue_stereotype`` is the gender that cue is stereotypically associated with.
    """

    id: str
    kind: Kind
    en: TemplateTexts
    targets: Mapping[str, TemplateTexts]
    stereotype_cue: str | None = None
    cue_stereotype: Gender | None = None




# ----------------------------------------------------------------------------------------------- templates
def render(text: str, choice: Choice, adjective: str) -> str:
    """Fill ``{adj}`` with ``adjective`` and each ``{g:masc|fem[|neut]}`` with the alternative for ``choice``.

    Raises ValueError for a slot it does not know or an alternation without the requested alternative; templates
    are checked with this at load time, so generation itself never fails.
    """

    def fill(match: re.Match[str]) -> str:
        body = match.group(1)
        if body == "adj":
            return adjective
        if body.startswith("g:"):
            parts = body[2:].split("|")
            index = _ALTERNATION_INDEX[choice]
            if index >= len(parts):
                raise ValueError(f"alternation {{{body}}} has no {choice} alternative")
            return parts[index]
        raise ValueError(f"unknown slot {{{body}}}")

    out = _SLOT.sub(fill, text)
    if "{" in out or "}" in out:
        raise ValueError(f"unbalanced braces in {text!r}")
    return out


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _err(message: str, path: Path, node: yaml.Node) -> DataError:
    line, column = _mark(node)
    return DataError(message, path, line, column)


def _mapping(node: yaml.Node, path: Path, what: str) -> dict[str, yaml.Node]:
    if not isinstance(node, yaml.MappingNode):
        raise _err(f"{what} must be a mapping", path, node)
    out: dict[str, yaml.Node] = {}
    for key, value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            raise _err(f"{what}: keys must be plain strings", path, key)
        if key.value in out:
            raise _err(f"{what}: duplicate key {key.value!r}", path, key)
        out[key.value] = value
    return out


def _scalar(node: yaml.Node, path: Path, what: str, optional: bool = False) -> str | None:
    if isinstance(node, yaml.ScalarNode):
        if node.tag == "tag:yaml.org,2002:null" or (node.value == "" and node.style is None):
            if optional:
                return None
            raise _err(f"{what} must not be empty", path, node)
        value = node.value.strip()
        if not value and not optional:
            raise _err(f"{what} must not be empty", path, node)
        return value or None
    raise _err(f"{what} must be a string", path, node)


def _check_text(
    text: str, path: Path, node: yaml.Node, what: str, choices: Sequence[Choice], en: bool
) -> None:
    """Validate one template text: known slots only, exactly one ``{adj}``, alternations that cover ``choices``."""
    slots = _SLOT.findall(text)
    if slots.count("adj") != 1:
        raise _err(f"{what} needs exactly one {{adj}} slot, found {slots.count('adj')}", path, node)
    for body in slots:
        if body == "adj":
            continue
        if not body.startswith("g:"):
            raise _err(
                f"{what}: unknown slot {{{body}}} (expected {{adj}} or {{g:masc|fem[|neut]}})", path, node
            )
        parts = body[2:].split("|")
        if len(parts) not in (2, 3) or any(not p.strip() for p in parts):
            raise _err(f"{what}: alternation {{{body}}} needs 2 or 3 non-empty alternatives", path, node)
        if "N" in choices and len(parts) != 3:
            raise _err(f"{what}: alternation {{{body}}} needs a third, neutral alternative", path, node)
    if en and what.endswith("ambiguous") and any(b.startswith("g:") for b in slots):
        raise _err(f"{what}: an ambiguous English source cannot have gender alternations", path, node)
    if en and what.endswith("determined") and not any(b.startswith("g:") for b in slots):
        raise _err(
            f"{what}: a determined English source needs a {{g:masc|fem}} cue that states the gender",
            path,
            node,
        )
    for choice in choices:
        try:
            render(text, choice, "x")
        except ValueError as exc:
            raise _err(f"{what}: {exc}", path, node) from None


def _texts(node: yaml.Node, path: Path, where: str, en: bool) -> TemplateTexts:
    fields = _mapping(node, path, where)
    for key in fields:
        if key not in VARIANTS:
            raise _err(f"{where}: unknown key {key!r}; expected {VARIANTS}", path, node)
    values: dict[str, str] = {}
    for variant in VARIANTS:
        if variant not in fields:
            raise _err(f"{where}: missing {variant!r}", path, node)
        text = _scalar(fields[variant], path, f"{where}.{variant}")
        assert text is not None
        # Ambiguous sources render once; ambiguous targets render as masculine default (M) and neutral (N).
        if variant == "determined":
            choices: tuple[Choice, ...] = ("M", "F")
        else:
            choices = () if en else ("M", "N")
        _check_text(text, path, fields[variant], f"{where}.{variant}", choices, en)
        values[variant] = text
    return TemplateTexts(**values)


def load_templates(path: str | Path | None = None) -> list[Template]:
    """Load and validate ``templates.yaml``.

    Checks the structure (a ``templates`` list of mappings with ``id``, ``kind``, optional ``stereotype_cue`` and
    ``cue_stereotype``, and ``en``/``it``/``es``/``de``/``el`` each with ``determined`` and ``ambiguous``), unique ids,
    and that every text renders for the genders it is used with. Raises :class:`DataError` with file:line:column.
    """
    path = Path(path) if path is not None else DEFAULT_TEMPLATES_PATH
    if not path.is_file():
        raise DataError("templates file not found", path)
    try:
        root = yaml.compose(path.read_text(encoding="utf-8"), Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
        raise DataError(f"not valid YAML: {getattr(exc, 'problem', exc)}", path, line, column) from None
    if root is None:
        raise DataError("empty templates file", path)
    top = _mapping(root, path, "the file")
    if "templates" not in top:
        raise _err("missing the top-level 'templates' list", path, root)
    seq = top["templates"]
    if not isinstance(seq, yaml.SequenceNode) or not seq.value:
        raise _err("'templates' must be a non-empty list", path, seq)
    templates: list[Template] = []
    ids: dict[str, int] = {}
    for item in seq.value:
        fields = _mapping(item, path, "a template")
        for key, value_node in fields.items():
            if key not in _TEMPLATE_KEYS:
                raise _err(
                    f"unknown template key {key!r}; expected {sorted(_TEMPLATE_KEYS)}", path, value_node
                )
        for key in ("id", "kind", "en", *LANGUAGES):
            if key not in fields:
                raise _err(f"template without {key!r}", path, item)
        tid = _scalar(fields["id"], path, "id")
        assert tid is not None
        if not _ID.match(tid):
            raise _err(
                f"template id {tid!r} must be lower-case letters, digits and underscores", path, fields["id"]
            )
        if tid in ids:
            raise _err(f"duplicate template id {tid!r} (first on line {ids[tid]})", path, fields["id"])
        ids[tid] = _mark(fields["id"])[0]
        kind = _scalar(fields["kind"], path, f"{tid}.kind")
        if kind not in KINDS:
            raise _err(f"{tid}: kind must be one of {KINDS}, found {kind!r}", path, fields["kind"])
        cue = (
            _scalar(fields["stereotype_cue"], path, f"{tid}.stereotype_cue", True)
            if "stereotype_cue" in fields
            else None
        )
        cue_gender = (
            _scalar(fields["cue_stereotype"], path, f"{tid}.cue_stereotype", True)
            if "cue_stereotype" in fields
            else None
        )
        if cue_gender not in (None, "F", "M"):
            raise _err(f"{tid}: cue_stereotype must be F or M", path, fields["cue_stereotype"])
        if cue_gender is not None and cue is None:
            raise _err(f"{tid}: cue_stereotype without a stereotype_cue", path, fields["cue_stereotype"])
        en = _texts(fields["en"], path, f"{tid}.en", en=True)
        targets = {lang: _texts(fields[lang], path, f"{tid}.{lang}", en=False) for lang in LANGUAGES}
        templates.append(
            Template(
                id=tid,
                kind=kind,  # type: ignore[arg-type]
                en=en,
                targets=targets,
                stereotype_cue=cue,
                cue_stereotype=cue_gender,  # type: ignore[arg-type]
            )
        )
    return templates
