"""gnt-align."""

from gnt.third_party_notices import silence as _silence_third_party_notices

_silence_third_party_notices()  # before any library that prints them is imported: gnt.third_party_notices says why
