"""Per-language forms of the WMT24 suite's adjectives: ``data/wmt24/lexicons/<lang>.tsv`` (+ ``<lang>.extra.tsv``).

The main file is a templated-suite lexicon (same header, same validation: :func:`gnt.data.templated.load_lexicon`),
one row per adjective with its M, F and neutral forms. Systems often render an adjective with a synonym or a
periphrasis ("tengo suerte" for *lucky*, "tienes miedo" for *scared*); those renderings live in the extra-forms
file, in the templated suite's extra-forms format (``lang en form label strategy``,
:func:`gnt.templated_suite.classify.load_extra_forms`), so the classifier's rule order applies to them unchanged;
they are tried longest first (in words), whatever their order in the file.
Loading checks that every extra form names an adjective of the main file, and (:func:`check_coverage`) that the
lexicon covers every adjective of the suite being scored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gnt.data.errors import DataError
from gnt.data.templated import LexiconEntry, load_lexicon
from gnt.paths import DATA_DIR
from gnt.templated_suite.classify import ExtraForm, load_extra_forms

LEXICON_DIR = DATA_DIR / "wmt24" / "lexicons"


@dataclass(frozen=True)
class SuiteLexicon:
    """The forms of one language: ``entries`` by lower-cased English adjective, plus the extra forms."""

    lang: str
    entries: dict[str, LexiconEntry]
    extra: tuple[ExtraForm, ...]
    paths: tuple[str, ...]

    def entry(self, adjective: str) -> LexiconEntry | None:
        return self.entries.get(adjective.casefold())


def available_languages(folder: str | Path = LEXICON_DIR) -> list[str]:
    return sorted(p.stem for p in Path(folder).glob("*.tsv") if "." not in p.stem)


def load_suite_lexicon(lang: str, folder: str | Path = LEXICON_DIR) -> SuiteLexicon:
    """Load and validate ``<lang>.tsv`` and, if present, ``<lang>.extra.tsv`` from ``folder``."""
    folder = Path(folder)
    main = folder / f"{lang}.tsv"
    if not main.is_file():
        have = ", ".join(available_languages(folder)) or "none"
        raise DataError(f"no WMT24 lexicon for {lang!r} (lexicons available: {have})", main)
    entries = {e.en.casefold(): e for e in load_lexicon(lang, main)}
    extra_path = folder / f"{lang}.extra.tsv"
    extra: list[ExtraForm] = []
    paths = [str(main)]
    if extra_path.is_file():
        try:
            extra = load_extra_forms(extra_path)
        except ValueError as exc:
            raise DataError(str(exc)) from None
        for number, form in enumerate(extra, start=2):
            if form.lang != lang:
                raise DataError(f"language {form.lang!r} in the {lang} extra forms", extra_path, number, "lang")
            if form.en.casefold() not in entries:
                raise DataError(f"adjective {form.en!r} is not in {main.name}", extra_path, number, "en")
        paths.append(str(extra_path))
    # Longest form first: the classifier tries extra forms in order and a match hides its words from the later
    # ones, so "un inconveniente" (a noun, N3) must be tried before "inconveniente" (the adjective, N1).
    extra.sort(key=lambda form: len(form.form.split()), reverse=True)
    return SuiteLexicon(lang, entries, tuple(extra), tuple(paths))


def check_coverage(lexicon: SuiteLexicon, adjectives: Iterable[str]) -> None:
    """Raise :class:`DataError` naming every suite adjective the lexicon lacks (scores would silently shrink)."""
    missing = sorted({a for a in adjectives if lexicon.entry(a) is None})
    if missing:
        raise DataError(
            f"{len(missing)} adjective(s) of the suite missing from the {lexicon.lang} lexicon: {', '.join(missing[:20])}"
            + (" ..." if len(missing) > 20 else ""),
            lexicon.paths[0],
        )
