"""Secrets out of stored text: an error body that echoes a request's ``Authorization`` header (some servers do,
in a 401 reply) must not put an API key into a cache or a results file.

:func:`redact` replaces the given secret values and anything that looks like a credential (a bearer token, an
``api_key=...`` pair, an OpenAI-style ``sk-...`` key) with ``[REDACTED]``. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

REDACTED = "[REDACTED]"
_PATTERNS = (
    re.compile(r"(?i)(\bbearer\s+)[^\s\"',;}\]]+"),
    re.compile(r"(?i)(\b(?:api[_-]?key|access[_-]?token|x-api-key)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}\]]+"),
    re.compile(r"()\bsk-[A-Za-z0-9_-]{16,}"),
)
_MIN_SECRET = 4
"""Shorter values are not replaced verbatim (a one-letter key would blank every such letter of the text)."""


def redact(text: str | None, secrets: Iterable[str | None] = ()) -> str | None:
    """``text`` with each secret value and every credential-looking token replaced by ``[REDACTED]``."""
    if not text:
        return text
    for secret in secrets:
        if secret and len(secret) >= _MIN_SECRET:
            text = text.replace(secret, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text
