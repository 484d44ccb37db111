"""Templated minimal pairs: every (template, adjective, gender) combination as a determined and an ambiguous input,
sampled evenly, and turned into Set-G/Set-N :class:`~gnt.data.entry.Entry` rows for training.
"""


from __future__ import annotations

import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gnt.data.entry import LANGUAGES, Entry, Gender, Language
from gnt.data.templated.adjectives import GENDERS, VARIANTS, Kind, LexiconEntry, Variant, load_lexicon
from gnt.data.templated.templates import Template, load_templates, render

TEMPLATED_ID_PREFIX = "tpl-"
"""How every templated pair's id (and so every row built from it) starts: what tells templated rows from mGeNTE ones
in a results folder."""


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
    determined_cue_on_adjective_only: bool
    """The determined target genders its person only through the adjective (no ``{g:…}`` slot renders differently
    for a man and a woman), so its neutral rewrite is neutral text, not just a neutral adjective."""

    @property
    def gender_marked(self) -> bool:
        return self.form_m != self.form_f




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
        pair_id=f"{TEMPLATED_ID_PREFIX}{lang}-{number:06d}",
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
        determined_cue_on_adjective_only=render(target.determined, "M", entry.n) == render(target.determined, "F", entry.n),
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
        "form_m": pair.form_m,
        "form_f": pair.form_f,
        "form_n": pair.form_n,
        # "false" for an epicene adjective: its gendered and neutral targets may then coincide (useless as a DPO pair)
        "gender_marked": "true" if pair.gender_marked else "false",
        # "true" where the determined target's only gender cue is the adjective: its neutral rewrite genders no one
        "cue_on_adjective_only": "true" if pair.determined_cue_on_adjective_only else "false",
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
