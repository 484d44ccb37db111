"""The adjective lexicons of the templated suite (``data/templates/lexicons/{lang}.tsv``): the M, F and N forms
of each focus adjective, its neutral strategy and stereotype, validated on load.
"""


from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gnt.data.entry import LANGUAGES, Gender
from gnt.data.errors import DataError
from gnt.paths import TEMPLATES_DIR

Kind = Literal["omission_i", "omission_you", "active_they"]
KINDS: tuple[Kind, ...] = ("omission_i", "omission_you", "active_they")
Variant = Literal["determined", "ambiguous"]
VARIANTS: tuple[Variant, ...] = ("determined", "ambiguous")
Choice = Literal["M", "F", "N"]
N_STRATEGIES = ("N1", "N2", "N3", "N4", "N5")
LEXICON_COLUMNS = ("en", "M", "F", "N", "N_strategy", "stereotype")
GENDERS: tuple[Gender, ...] = ("F", "M")

DEFAULT_LEXICON_DIR = TEMPLATES_DIR / "lexicons"


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
