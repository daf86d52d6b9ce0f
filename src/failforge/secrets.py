"""Keeping API keys out of every file failforge writes.

Keys reach failforge four ways: the variable named by ``--api-key-env``, the userinfo of a base URL
(``https://user:key@host/v1``), a credential-like query parameter of a base URL (``?api-key=...``), and
anything an upstream server echoes back (an error body, a completion quoting the key). A
:class:`Redactor` knows the concrete secret values of a run plus the shapes keys usually have, and
every writer of records, manifests, ledgers and logs passes its text through :meth:`Redactor.text`
(or :func:`redact` for the shapes alone). Redaction replaces, it never drops: the reader still sees
that something was there. A process failforge starts (the external harness's agent command) gets
:func:`scrubbed_environ`: the environment without the variables that hold a key failforge uses.
"""

from __future__ import annotations

import base64
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"

#: Shapes of keys and credentials, masked wherever they appear even when the value is not known.
_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(://)[^/@\s\"']+@"), r"\1" + MASK + "@"),  # URL userinfo
    (re.compile(r"\bsk-[A-Za-z0-9_\-]{12,}"), MASK),  # OpenAI-style keys
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9_\-\.=:+/]{12,}"), r"\1" + MASK),
    (re.compile(r"(?i)(api[_-]?key[\"']?\s*[:=]\s*[\"']?)[A-Za-z0-9_\-\.]{12,}"), r"\1" + MASK),
    (
        re.compile(
            r"(?i)([?&;](?:[a-z0-9_\-]*(?:key|token|secret|password|passwd|pwd|auth|signature|sig|credential)"
            r"[a-z0-9_\-]*|code)=)[^&#\s\"'<>]+"
        ),
        r"\1" + MASK,
    ),  # a credential-like URL query parameter
)
#: Query parameter names whose values are credentials (``?key=``, ``?api-version`` is not one).
_CREDENTIAL_PARAM = re.compile(
    r"(?i)^(?:[a-z0-9_\-]*(?:key|token|secret|password|passwd|pwd|auth|signature|sig" r"|credential)[a-z0-9_\-]*|code)$"
)
#: Values shorter than this are never treated as secrets (they would mask ordinary words).
MIN_SECRET_LENGTH = 8

#: Secret values this process has used (keys it sent, URL passwords), for :func:`redact_known`.
_KNOWN: set[str] = set()
#: Names of the environment variables this process read a key from (``--api-key-env``), for :func:`scrubbed_environ`.
_KEY_ENVS: set[str] = set()
_KNOWN_LOCK = threading.Lock()


def remember(values: Iterable[str | None]) -> None:
    """Note secret values this process uses, so that what it shows a user masks them (:func:`redact_known`)
    even where they do not have a key's usual shape (a provider echoing a rejected key in a 401 body)."""
    keep = {v for v in values if v and len(v) >= MIN_SECRET_LENGTH}
    if keep:
        with _KNOWN_LOCK:
            _KNOWN.update(keep)


def remember_env(names: Iterable[str | None]) -> None:
    """Note the environment variables that hold a key failforge uses: no process failforge starts inherits them."""
    with _KNOWN_LOCK:
        _KEY_ENVS.update(n for n in names if n)


def scrubbed_environ(environ: dict[str, str] | None = None) -> dict[str, str]:
    """``environ`` (default: this process's) without any variable named by :func:`remember_env` and without
    any variable whose value holds a secret this process uses (:func:`remember`): what an agent command
    failforge starts inherits, so the agent under test can never read the upstream's key."""
    source = dict(os.environ if environ is None else environ)
    with _KNOWN_LOCK:
        names, known = set(_KEY_ENVS), list(_KNOWN)
    return {k: v for k, v in source.items() if k not in names and not any(secret in v for secret in known)}


def redact_known(value: str) -> str:
    """``value`` with every secret this process has used (:func:`remember`) and every key-shaped string
    masked: what every message shown to a user passes through (the CLI's consoles, upstream error text).

    Not used for hashes or records: which values are known depends on what this process did before, and
    a hash must not (records are masked by their run's own :class:`Redactor`).
    """
    with _KNOWN_LOCK:
        known = sorted(_KNOWN, key=lambda v: -len(v))  # longest first: a key that contains another is masked whole
    for secret in known:
        value = value.replace(secret, MASK)
    return redact(value)


def strip_userinfo(url: str) -> str:
    """``url`` without credentials in its authority (``https://u:k@h/v1`` -> ``https://***@h/v1``)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{MASK}@{host}"))


def safe_url(url: str) -> str:
    """``url`` as it may be shown or stored: userinfo and credential-like query parameters masked."""
    parts = urlsplit(strip_userinfo(url))
    if not parts.query:
        return urlunsplit(parts)
    query = "&".join(_masked_param(p) for p in parts.query.split("&"))
    return urlunsplit(parts._replace(query=query))


def _masked_param(pair: str) -> str:
    name, eq, _value = pair.partition("=")
    return f"{name}={MASK}" if eq and _CREDENTIAL_PARAM.match(unquote(name)) else pair


def query_secrets(url: str) -> list[str]:
    """The values of a URL's credential-like query parameters (``?key=...``, ``?access_token=...``), raw and decoded."""
    found: list[str] = []
    for pair in urlsplit(url).query.split("&"):
        name, eq, value = pair.partition("=")
        if eq and value and _CREDENTIAL_PARAM.match(unquote(name)):
            found += [value, unquote(value)]
    return found


def userinfo_secrets(url: str) -> list[str]:
    """The user and password parts of a URL's userinfo (each a secret), and the HTTP Basic credentials an
    HTTP client makes of them (``Authorization: Basic base64(user:password)``, which a server may echo)."""
    parts = urlsplit(url)
    found = [p for p in (parts.username, parts.password) if p]
    found += [unquote(p) for p in found]
    if parts.username is not None and parts.password is not None and len(parts.password) >= MIN_SECRET_LENGTH:
        pair = f"{unquote(parts.username)}:{unquote(parts.password)}"
        found.append(base64.b64encode(pair.encode()).decode("ascii"))
    return found + query_secrets(url)


@dataclass(frozen=True)
class Redactor:
    """Masks known secret values and key-shaped strings in text."""

    secrets: tuple[str, ...] = field(default_factory=tuple)

    @classmethod
    def for_run(cls, api_key_envs: Iterable[str | None] = (), urls: Iterable[str] = ()) -> Redactor:
        values: list[str] = []
        api_key_envs = list(api_key_envs)
        remember_env(api_key_envs)
        for name in api_key_envs:
            value = os.environ.get(name) if name else None
            if value:
                values.append(value)
        for url in urls:
            values.extend(userinfo_secrets(url))
        keep = sorted({v for v in values if len(v) >= MIN_SECRET_LENGTH}, key=len, reverse=True)
        remember(keep)
        return cls(tuple(keep))

    def text(self, value: str) -> str:
        for secret in self.secrets:
            value = value.replace(secret, MASK)
        return redact(value)


def redact(value: str) -> str:
    """Mask key-shaped strings and URL userinfo in ``value``."""
    for pattern, replacement in _PATTERNS:
        value = pattern.sub(replacement, value)
    return value


__all__ = [
    "MASK",
    "Redactor",
    "query_secrets",
    "redact",
    "redact_known",
    "remember",
    "remember_env",
    "safe_url",
    "scrubbed_environ",
    "strip_userinfo",
    "userinfo_secrets",
]
