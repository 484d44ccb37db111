"""Templated ambiguous inputs: minimal pairs of English sources that differ only in whether a referent's gender is stated.

The suite follows the gender-dialogue design (docs/templated-suite.md): a *determined* input ("The woman smiled. 'I think I'm
stubborn,' she said.") and an *ambiguous* one ("'I think I'm stubborn,' I said.") share a focus adjective whose
translation shows (or hides) the referent's gender. The pairs serve two purposes:

* evaluation: :func:`write_suite` writes one JSONL line per input with the lexicon forms (M, F, N and the neutral
  strategy) so a later step can classify a model's translation of the adjective as M, F or N and compute ΔM, ΔF, ΔN;
* training: :func:`pairs_to_entries` turns each pair into a Set-G and a Set-N :class:`~gnt.data.entry.Entry`, whose
  neutral reference is an SFT target / DPO "chosen" and whose masculine-default reference is a DPO "rejected".

Everything is data-driven: the lexicons (``data/templates/lexicons/{lang}.tsv``) hold the adjective forms and the
templates (``data/templates/templates.yaml``) hold the English and target sentences with slots. ``data/templates/
README.md`` documents the slot syntax and the language choices (notably German, whose predicative adjectives do
not inflect). Both files are validated on load and every problem is reported as ``file:line:column: message``.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import yaml

from gnt.data.entry import LANGUAGES, Entry, Gender, Language
from gnt.data.errors import DataError, json_object_lines
from gnt.paths import TEMPLATES_DIR

Kind = Literal["omission_i", "omission_you", "active_they"]
KINDS: tuple[Kind, ...] = ("omission_i", "omission_you", "active_they")
Variant = Literal["determined", "ambiguous"]
VARIANTS: tuple[Variant, ...] = ("determined", "ambiguous")
Choice = Literal["M", "F", "N"]
N_STRATEGIES = ("N1", "N2", "N3", "N4", "N5")
LEXICON_COLUMNS = ("en", "M", "F", "N", "N_strategy", "stereotype")
GENDERS: tuple[Gender, ...] = ("F", "M")

DEFAULT_TEMPLATES_PATH = TEMPLATES_DIR / "templates.yaml"
DEFAULT_LEXICON_DIR = TEMPLATES_DIR / "lexicons"

_SLOT = re.compile(r"\{([^{}]*)\}")
_ALTERNATION_INDEX: dict[str, int] = {"M": 0, "F": 1, "N": 2}
_TEMPLATE_KEYS = {"id", "kind", "stereotype_cue", "cue_stereotype", "en", *LANGUAGES}
_ID = re.compile(r"^[a-z0-9_]+$")


# ----------------------------------------------------------------------------------------------- data classes
@dataclass(frozen=True)
class LexiconEntry:
    """One focus adjective in one target language.

    ``m``/``f`` are the forms that fill a predicate slot ("I am ___") for a masculine/feminine referent and ``n`` a
    gender-neutral alternative for the same slot; ``n_strategy`` says which neutral strategy ``n`` uses (N1..N5,
    docs/templated-suite.md). ``stereotype`` is "F"/"M" when the English adjective is gender-stereotyped, else None.
    """

    en: str
    m: str
    f: str
    n: str
    n_strategy: str
    stereotype: Gender | None = None
    line: int = 0

    def form(self, choice: Choice) -> str:
        """The form for a masculine, feminine or neutral rendering."""
        return {"M": self.m, "F": self.f, "N": self.n}[choice]

    @property
    def gender_marked(self) -> bool:
        """Whether the masculine and feminine forms differ (if not, the adjective itself is epicene)."""
        return self.m != self.f


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


@dataclass(frozen=True)
class TemplatedPair:
    """One (template, adjective, determined gender, language) combination, fully rendered.

    The determined side has its source, the gendered target and a neutral rewrite of that target (the adjective
    in its N form, everything the source genders kept); the ambiguous side has its source, the neutral target and
    the masculine-default target a system that ignores the ambiguity would produce.
    """

    pair_id: str
    lang: Language
    template_id: str
    kind: Kind
    stereotype_cue: str | None
    cue_stereotype: Gender | None
    adjective: str
    adjective_stereotype: Gender | None
    gender: Gender
    determined_source: str
    determined_target: str
    determined_neutral_target: str
    ambiguous_source: str
    ambiguous_neutral_target: str
    ambiguous_masculine_target: str
    form_m: str
    form_f: str
    form_n: str
    n_strategy: str

    @property
    def gender_marked(self) -> bool:
        return self.form_m != self.form_f


# ----------------------------------------------------------------------------------------------- lexicons
def lexicon_path(lang: str) -> Path:
    """Default lexicon file of a language."""
    return DEFAULT_LEXICON_DIR / f"{lang}.tsv"


def load_lexicon(lang: str, path: str | Path | None = None) -> list[LexiconEntry]:
    """Load and validate one language's lexicon TSV.

    The file must start with the header ``en M F N N_strategy stereotype`` (tab-separated); blank lines and lines
    starting with ``#`` are skipped. Every data line needs exactly six fields; all but ``stereotype`` non-empty.
    An adjective whose M and F forms coincide is epicene, so its N form must be that same form. Raises
    :class:`DataError` at the first problem, located by file, line and column name.
    """
    if lang not in LANGUAGES:
        raise DataError(f"unknown language {lang!r}; expected one of {LANGUAGES}")
    path = Path(path) if path is not None else lexicon_path(lang)
    if not path.is_file():
        raise DataError("lexicon file not found", path)
    lines = path.read_text(encoding="utf-8").splitlines()
    entries: list[LexiconEntry] = []
    seen: dict[str, int] = {}
    header_seen = False
    for number, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split("\t")
        if not header_seen:
            if tuple(f.strip() for f in fields) != LEXICON_COLUMNS:
                raise DataError(
                    f"expected the header {'<TAB>'.join(LEXICON_COLUMNS)!r}, found {line!r}", path, number
                )
            header_seen = True
            continue
        if len(fields) != len(LEXICON_COLUMNS):
            raise DataError(
                f"expected {len(LEXICON_COLUMNS)} tab-separated fields ({', '.join(LEXICON_COLUMNS)}), found {len(fields)}",
                path,
                number,
            )
        values = dict(zip(LEXICON_COLUMNS, (f.strip() for f in fields), strict=True))
        for column in LEXICON_COLUMNS[:-1]:
            if not values[column]:
                raise DataError("empty cell", path, number, column)
        if values["N_strategy"] not in N_STRATEGIES:
            raise DataError(
                f"unknown neutral strategy {values['N_strategy']!r}; expected one of {N_STRATEGIES}",
                path,
                number,
                "N_strategy",
            )
        if values["stereotype"] not in ("", "F", "M"):
            raise DataError(
                f"stereotype must be F, M or empty, found {values['stereotype']!r}",
                path,
                number,
                "stereotype",
            )
        if values["M"] == values["F"] and values["N"] != values["M"]:
            raise DataError(
                "M and F are the same form (an epicene adjective), so N must be that form too",
                path,
                number,
                "N",
            )
        for column in ("M", "F", "N"):
            if "{" in values[column] or "}" in values[column]:
                raise DataError("braces are reserved for template slots", path, number, column)
        key = values["en"].casefold()
        if key in seen:
            raise DataError(
                f"duplicate adjective {values['en']!r} (first on line {seen[key]})", path, number, "en"
            )
        seen[key] = number
        entries.append(
            LexiconEntry(
                en=values["en"],
                m=values["M"],
                f=values["F"],
                n=values["N"],
                n_strategy=values["N_strategy"],
                stereotype=values["stereotype"] or None,  # type: ignore[arg-type]
                line=number,
            )
        )
    if not header_seen:
        raise DataError("empty lexicon: no header line", path)
    if not entries:
        raise DataError("lexicon has a header but no adjectives", path)
    return entries


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


# ----------------------------------------------------------------------------------------------- generation
def _spread(total: int, capacities: Sequence[int], rng: random.Random) -> list[int]:
    """Split ``total`` over groups as evenly as their capacities allow (water-filling).

    Groups that cannot take an equal share are filled and the rest is shared among the others; the last
    indivisible remainder goes to randomly chosen groups so no group (e.g. the first language) is always favoured.
    """
    alloc = [0] * len(capacities)
    open_groups = [i for i, c in enumerate(capacities) if c > 0]
    left = min(total, sum(capacities))
    while left > 0 and open_groups:
        share, extra = divmod(left, len(open_groups))
        if share == 0:
            for i in rng.sample(open_groups, extra):
                alloc[i] += 1
            break
        still_open = []
        for i in open_groups:
            give = min(share, capacities[i] - alloc[i])
            alloc[i] += give
            left -= give
            if alloc[i] < capacities[i]:
                still_open.append(i)
        open_groups = still_open
    return alloc


def _make_pair(
    lang: Language,
    t_index: int,
    template: Template,
    a_index: int,
    entry: LexiconEntry,
    n_adj: int,
    gender: Gender,
) -> TemplatedPair:
    # The number is the combination's position in the full product, so a pair keeps its id whatever the cap/seed.
    number = (t_index * n_adj + a_index) * len(GENDERS) + GENDERS.index(gender)
    target = template.targets[lang]
    return TemplatedPair(
        pair_id=f"tpl-{lang}-{number:06d}",
        lang=lang,
        template_id=template.id,
        kind=template.kind,
        stereotype_cue=template.stereotype_cue,
        cue_stereotype=template.cue_stereotype,
        adjective=entry.en,
        adjective_stereotype=entry.stereotype,
        gender=gender,
        determined_source=render(template.en.determined, gender, entry.en),
        determined_target=render(target.determined, gender, entry.form(gender)),
        determined_neutral_target=render(target.determined, gender, entry.n),
        ambiguous_source=render(template.en.ambiguous, "N", entry.en),
        ambiguous_neutral_target=render(target.ambiguous, "N", entry.n),
        ambiguous_masculine_target=render(target.ambiguous, "M", entry.m),
        form_m=entry.m,
        form_f=entry.f,
        form_n=entry.n,
        n_strategy=entry.n_strategy,
    )


def capacity(
    langs: Iterable[str] = LANGUAGES,
    *,
    templates: Sequence[Template] | None = None,
    lexicons: Mapping[str, Sequence[LexiconEntry]] | None = None,
) -> int:
    """How many distinct pairs :func:`generate_pairs` can produce for ``langs`` (templates × adjectives × 2)."""
    templates = load_templates() if templates is None else templates
    return sum(
        len(templates) * len(lexicons[lang] if lexicons else load_lexicon(lang)) * len(GENDERS)
        for lang in langs
    )


def generate_pairs(
    langs: Iterable[str] = LANGUAGES,
    max_pairs: int | None = None,
    seed: int = 0,
    *,
    templates: Sequence[Template] | None = None,
    lexicons: Mapping[str, Sequence[LexiconEntry]] | None = None,
) -> list[TemplatedPair]:
    """Render the templated pairs for ``langs``: every template × adjective × determined gender (F, M) × language.

    With the shipped data that product is 22 templates × 63 adjectives × 2 genders = 2,772 pairs per language,
    11,088 over the four languages; a larger ``max_pairs`` simply returns them all. ``max_pairs`` samples
    *without replacement*, spread as evenly as possible over languages, then over templates within a language,
    then over the two genders, and finally draws the adjectives at random; everything depends only on ``seed``.
    Without a cap the seed plays no part. Pairs come back ordered by language, template, adjective and gender,
    and a pair's id is its position in the full product, so the same combination has the same id in every sample.
    """
    langs = list(dict.fromkeys(langs))
    for lang in langs:
        if lang not in LANGUAGES:
            raise ValueError(f"unknown language {lang!r}; expected some of {LANGUAGES}")
    if max_pairs is not None and max_pairs < 0:
        raise ValueError("max_pairs must be >= 0")
    templates = load_templates() if templates is None else list(templates)
    lex = {lang: list(lexicons[lang]) if lexicons is not None else load_lexicon(lang) for lang in langs}
    rng = random.Random(seed)

    # (template index, adjective index, gender) chosen per language
    chosen: dict[str, list[tuple[int, int, Gender]]] = {}
    per_combo = [len(GENDERS) * len(lex[lang]) for lang in langs]
    lang_quota = (
        [c * len(templates) for c in per_combo]
        if max_pairs is None
        else _spread(max_pairs, [c * len(templates) for c in per_combo], rng)
    )
    for lang, quota in zip(langs, lang_quota, strict=True):
        n_adj = len(lex[lang])
        picks: list[tuple[int, int, Gender]] = []
        t_quota = _spread(quota, [n_adj * len(GENDERS)] * len(templates), rng)
        for t_index, t_count in enumerate(t_quota):
            g_quota = _spread(t_count, [n_adj] * len(GENDERS), rng)
            for gender, g_count in zip(GENDERS, g_quota, strict=True):
                adjs = range(n_adj) if g_count == n_adj else sorted(rng.sample(range(n_adj), g_count))
                picks.extend((t_index, a, gender) for a in adjs)
        picks.sort(key=lambda p: (p[0], p[1], GENDERS.index(p[2])))
        chosen[lang] = picks

    pairs: list[TemplatedPair] = []
    for lang in langs:
        entries = lex[lang]
        for t_index, a_index, gender in chosen[lang]:
            pairs.append(
                _make_pair(lang, t_index, templates[t_index], a_index, entries[a_index], len(entries), gender)  # type: ignore[arg-type]
            )
    return pairs


# ----------------------------------------------------------------------------------------------- outputs
def _gendered_words(pair: TemplatedPair, form: str, text: str) -> tuple[str, ...]:
    return (form,) if pair.gender_marked and form in text else ()


def _meta(pair: TemplatedPair, variant: Variant) -> dict[str, str]:
    return {
        "pair_id": pair.pair_id,
        "variant": variant,
        "template_id": pair.template_id,
        "kind": pair.kind,
        "adjective": pair.adjective,
        "adjective_stereotype": pair.adjective_stereotype or "",
        "stereotype_cue": pair.stereotype_cue or "",
        "cue_stereotype": pair.cue_stereotype or "",
        "n_strategy": pair.n_strategy,
        # "false" for an epicene adjective: its gendered and neutral targets may then coincide (useless as a DPO pair)
        "gender_marked": "true" if pair.gender_marked else "false",
    }


def pairs_to_entries(pairs: Iterable[TemplatedPair]) -> list[Entry]:
    """Two entries per pair: the determined input as Set-G and the ambiguous input as Set-N (origin "templated").

    Set-G: ``ref_g`` is the gendered target, ``ref_n`` its rewrite with the neutral adjective form. Set-N: ``ref_g``
    is the masculine-default target (what a biased system writes; a DPO "rejected"), ``ref_n`` the neutral target.
    ``gendered_words`` holds the gender-marked adjective form present in ``ref_g`` (empty for epicene adjectives,
    whose determined target is not gendered on the adjective). The two sources differ, so their source keys do too.
    """
    return [_entry(pair, variant) for pair in pairs for variant in VARIANTS]


def _entry(pair: TemplatedPair, variant: Variant) -> Entry:
    """The entry of one variant of a pair; both variants are built by this one constructor call so the two can
    never disagree on the fields they share (language, origin, meta)."""
    if variant == "determined":
        suffix, set_name, gender = "det", "Set-G", pair.gender
        source, ref_g, ref_n = pair.determined_source, pair.determined_target, pair.determined_neutral_target
        marked_form = pair.form_f if pair.gender == "F" else pair.form_m
    else:
        suffix, set_name, gender = "amb", "Set-N", None
        source, ref_g, ref_n = pair.ambiguous_source, pair.ambiguous_masculine_target, pair.ambiguous_neutral_target
        marked_form = pair.form_m
    return Entry(
        id=f"{pair.pair_id}-{suffix}",
        lang=pair.lang,
        set=set_name,
        source=source,
        ref_g=ref_g,
        ref_n=(ref_n,),
        gender=gender,
        gendered_words=_gendered_words(pair, marked_form, ref_g),
        origin="templated",
        meta=_meta(pair, variant),
    )


SUITE_FIELDS = (
    "pair_id",
    "lang",
    "variant",
    "template_id",
    "kind",
    "stereotype_cue",
    "cue_stereotype",
    "adjective",
    "adjective_stereotype",
    "source",
    "expected_gender",
    "M",
    "F",
    "N",
    "N_strategy",
    "ref_gendered",
    "ref_neutral",
)


def suite_records(pairs: Iterable[TemplatedPair]) -> list[dict]:
    """The evaluation-suite records: one per (pair, variant), determined first.

    ``expected_gender`` is F/M for a determined input and None for an ambiguous one; ``M``/``F``/``N``/``N_strategy``
    are the lexicon forms a classifier looks for in a model's translation. ``ref_gendered`` is the gendered target
    (determined) or the masculine default (ambiguous); ``ref_neutral`` the neutral target.
    """
    records: list[dict] = []
    for pair in pairs:
        common = {
            "pair_id": pair.pair_id,
            "lang": pair.lang,
            "template_id": pair.template_id,
            "kind": pair.kind,
            "stereotype_cue": pair.stereotype_cue,
            "cue_stereotype": pair.cue_stereotype,
            "adjective": pair.adjective,
            "adjective_stereotype": pair.adjective_stereotype,
            "M": pair.form_m,
            "F": pair.form_f,
            "N": pair.form_n,
            "N_strategy": pair.n_strategy,
        }
        for variant in VARIANTS:
            det = variant == "determined"
            record = {
                **common,
                "variant": variant,
                "source": pair.determined_source if det else pair.ambiguous_source,
                "expected_gender": pair.gender if det else None,
                "ref_gendered": pair.determined_target if det else pair.ambiguous_masculine_target,
                "ref_neutral": pair.determined_neutral_target if det else pair.ambiguous_neutral_target,
            }
            records.append({key: record[key] for key in SUITE_FIELDS})
    return records


def write_suite(pairs: Iterable[TemplatedPair], path: str | Path) -> Path:
    """Write the evaluation suite as JSONL (UTF-8, one record per line, see :func:`suite_records`); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for record in suite_records(pairs):
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    return path


def read_suite(path: str | Path) -> list[dict]:
    """Read a suite file back, checking that every line is a JSON object with all :data:`SUITE_FIELDS`."""
    path = Path(path)
    records: list[dict] = []
    for number, record in json_object_lines(path):
        if isinstance(record, DataError):
            raise record
        missing = [key for key in SUITE_FIELDS if key not in record]
        if missing:
            raise DataError(f"missing field(s) {missing}", path, number)
        if record["variant"] not in VARIANTS:
            raise DataError(f"variant must be one of {VARIANTS}", path, number, "variant")
        records.append(record)
    return records


def pair_to_dict(pair: TemplatedPair) -> dict:
    """A JSON-ready dict of a pair (for manifests and debugging)."""
    return asdict(pair)
