"""The typed row every part of gnt-align passes around.

An :class:`Entry` is one (English source, target language) item with its references. mGeNTE rows, templated
ambiguous inputs and user TSVs all become entries, so training-data builders, the prompt grid and the evaluator
never look at raw columns. ``source_key`` is the identity used for leakage checks: the same English sentence has
the same key in every language, whatever its row id.
"""

from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass, field
from typing import Literal

Language = Literal["it", "es", "de", "el"]
LANGUAGES: tuple[Language, ...] = ("it", "es", "de", "el")
LANGUAGE_NAMES: dict[str, str] = {"it": "Italian", "es": "Spanish", "de": "German", "el": "Greek"}

SetName = Literal["Set-G", "Set-N"]
SETS: tuple[SetName, ...] = ("Set-G", "Set-N")
Gender = Literal["F", "M"]


def normalise_source(text: str) -> str:
    """Canonical form of an English source for identity: NFC, collapsed whitespace, case-folded."""
    return " ".join(unicodedata.normalize("NFC", text).split()).casefold()


def source_key(text: str) -> str:
    """Content hash of an English source; equal for the same sentence in every language pair."""
    return hashlib.sha256(normalise_source(text).encode("utf-8")).hexdigest()[:16]


class SourceKeyed:
    """Mixin for records that carry an English ``source`` (entries, prompt demonstrations, judge exemplars).

    Their ``source_key`` is what leakage checks compare across all of them, so it is defined here once: a
    demonstration and an entry with the same sentence must always get the same key.
    """

    source: str

    @property
    def source_key(self) -> str:
        return source_key(self.source)


@dataclass(frozen=True)
class Entry(SourceKeyed):
    """One translation item: an English source, a target language and its gendered/neutral references.

    ``ref_n`` holds one or more neutral references (mGeNTE's common set has three); each is a valid target.
    ``gendered_words`` are the annotated gendered words of ``ref_g`` (may be empty when the data has none).
    ``origin`` says where the entry came from ("mgente", "templated", a file name...).
    """

    id: str
    lang: Language
    set: SetName
    source: str
    ref_g: str
    ref_n: tuple[str, ...]
    gender: Gender | None = None
    europarl_id: str = ""
    gendered_words: tuple[str, ...] = ()
    in_common: bool = False
    origin: str = "mgente"
    meta: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    @property
    def label(self) -> str:
        """The label a correct output carries: GENDERED for Set-G, NEUTRAL for Set-N."""
        return "GENDERED" if self.set == "Set-G" else "NEUTRAL"

    @property
    def matching_reference(self) -> str:
        """Set-matching reference (docs/metrics.md): Ref-N for Set-N, Ref-G for Set-G."""
        return self.ref_g if self.set == "Set-G" else self.ref_n[0]

    def to_record(self) -> dict:
        """A JSON-ready dict (tuples become lists) used in data files and manifests."""
        return {
            "id": self.id,
            "lang": self.lang,
            "set": self.set,
            "gender": self.gender,
            "source": self.source,
            "ref_g": self.ref_g,
            "ref_n": list(self.ref_n),
            "europarl_id": self.europarl_id,
            "gendered_words": list(self.gendered_words),
            "in_common": self.in_common,
            "origin": self.origin,
            "source_key": self.source_key,
            "meta": dict(self.meta),
        }

    @classmethod
    def from_record(cls, record: dict) -> Entry:
        return cls(
            id=str(record["id"]),
            lang=record["lang"],
            set=record["set"],
            source=record["source"],
            ref_g=record["ref_g"],
            ref_n=tuple(record["ref_n"]),
            gender=record.get("gender"),
            europarl_id=str(record.get("europarl_id", "")),
            gendered_words=tuple(record.get("gendered_words", ())),
            in_common=bool(record.get("in_common", False)),
            origin=record.get("origin", "mgente"),
            meta=dict(record.get("meta", {})),
        )
