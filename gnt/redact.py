"""Secrets out of everything the project writes or logs: one path, used by every writer.

An API key reaches text in many ways: a server echoes the request's ``Authorization`` header in a 401 body (some
escape it as JSON, ``sk-a\\/b``), a ``base_url`` carries ``user:password@``, an HTTP client logs every URL it calls.
So the project keeps secrets out at three points, all of them here:

- :func:`redact` is for text that describes an error (an HTTP error body, a judge's failed reply, a log line): it
  replaces the given and the registered secret values, in their plain, JSON-escaped and URL-quoted spellings, the
  password of a URL, and anything that looks like a credential (a bearer token, an ``api_key=...`` pair, an
  OpenAI-style ``sk-...`` key) with ``[REDACTED]``. :func:`clip` redacts *before* it cuts text to a length, so a
  key that straddles the cut is not kept minus its last characters.
- :func:`scrub` is applied by :mod:`gnt.io` to every file it writes (records, summaries, caches, reports): it
  removes registered secrets and URL passwords only, because the credential *patterns* would also hit ordinary
  text (a translation of "the standard-bearer of the party").
- :class:`RedactingFilter` passes every log record through :func:`redact` (installed by the command layer on the
  handlers of the root logger and on httpx's own loggers, which log each request's URL).

A secret is *registered* (:func:`register_secret`) where the project reads it (the HTTP backend's API key, the
password of its ``base_url``), so a later writer that never saw it still keeps it out. Standard library only:
:mod:`gnt.io` loads this module by path where the ``gnt`` package is not importable (the xCOMET environment).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Iterable
from urllib.parse import quote, urlsplit, urlunsplit

REDACTED = "[REDACTED]"
_PATTERNS = (
    re.compile(r"(?i)(\bbearer\s+)[^\s\"',;}\]]+"),
    re.compile(r"(?i)(\b(?:api[_-]?key|access[_-]?token|x-api-key)[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}\]]+"),
    re.compile(r"()\bsk-[A-Za-z0-9_-]{16,}"),
)
_URL_PASSWORD = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*:(?:\\?/){2}[^\s/\\@\"'<>:]*:)[^\s/\\@\"'<>]+(?=@)")
"""``scheme://user:PASSWORD@`` (also JSON-escaped, ``scheme:\\/\\/user:PASSWORD@``): the password goes."""
_URL_USER_ONLY = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*:(?:\\?/){2})[^\s/\\@\"'<>:]+(?=@)")
"""``scheme://TOKEN@`` (a token used as the user name, as some APIs take it)."""
_MIN_SECRET = 4
"""Shorter values are not replaced verbatim (a one-letter key would blank every such letter of the text)."""

_registered: set[str] = set()
_lock = threading.Lock()


_MIN_REGISTERED = 8
"""A registered secret is removed from every file written: a shorter one could be an ordinary word of a text (a URL
password that short is still removed from URLs, by pattern)."""


def register_secret(value: str | None) -> None:
    """Keep ``value`` out of every file and log line this process writes from now on."""
    if value and len(value) >= _MIN_REGISTERED:
        with _lock:
            _registered.add(value)


def _spellings(secret: str) -> list[str]:
    """A secret as it may appear in text: plain, JSON-escaped (with ``\\/`` too), URL-quoted; longest first."""
    escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
    forms = {secret, escaped, escaped.replace("/", "\\/"), json.dumps(secret)[1:-1], quote(secret, safe="")}
    return sorted(forms, key=len, reverse=True)


def _replace_secrets(text: str, secrets: Iterable[str | None]) -> str:
    with _lock:
        every = [*secrets, *_registered]
    for secret in sorted({s for s in every if s and len(s) >= _MIN_SECRET}, key=len, reverse=True):
        for form in _spellings(secret):
            if form in text:
                text = text.replace(form, REDACTED)
    return text


def _url_credentials(text: str) -> str:
    if "@" not in text:
        return text
    text = _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED, text)
    return _URL_USER_ONLY.sub(lambda m: m.group(1) + REDACTED, text)


def redact(text: str | None, secrets: Iterable[str | None] = ()) -> str | None:
    """``text`` with each secret value, URL credentials and every credential-looking token replaced."""
    if not text:
        return text
    text = _url_credentials(_replace_secrets(text, secrets))
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: m.group(1) + REDACTED, text)
    return text


def clip(text: str | None, limit: int, secrets: Iterable[str | None] = ()) -> str:
    """``text`` redacted, then cut to ``limit`` characters (in this order: a secret across the cut goes whole)."""
    return (redact(text, secrets) or "")[:limit]


def scrub(text: str) -> str:
    """What every written file goes through: registered secrets and URL credentials out, nothing else touched."""
    return _url_credentials(_replace_secrets(text, ())) if text else text


def redact_url(url: str | None) -> str | None:
    """A URL without its user name and password (the form in which a ``base_url`` is recorded or shown)."""
    if not url:
        return url
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit((parts.scheme, f"{REDACTED}@{host}", parts.path, parts.query, parts.fragment))


def url_secrets(url: str | None) -> list[str]:
    """The secret a URL carries, to register: its password, else a user name used as a token."""
    if not url:
        return []
    parts = urlsplit(url)
    secret = parts.password or parts.username
    return [secret] if secret else []


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message (and drops its arguments, already formatted in)."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            return True  # a malformed record: logging reports it itself
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        return True


_FILTER = RedactingFilter()
HTTP_LOGGERS = ("httpx", "httpcore", "urllib3", "openai")
"""Libraries that log request URLs (and so a ``base_url``'s password) at INFO or DEBUG."""


def install_log_redaction() -> None:
    """Redact every log line: on the root logger's handlers and on the HTTP libraries' own loggers (a filter on
    a logger sees only records made on it; a filter on a handler sees every record it writes). Idempotent."""
    targets: list[logging.Filterer] = [logging.getLogger(name) for name in HTTP_LOGGERS]
    targets += logging.getLogger().handlers
    for target in targets:
        if _FILTER not in target.filters:
            target.addFilter(_FILTER)
