"""SHA-256 tool cache: the replay boundary for stateless tools (search, HTTP fetch, page loads).

A call is identified by ``sha256(canonical_json({"tool", "version", "args"}))`` where ``args`` has
been normalised by :func:`failforge.canonical.canonical_json` with the cache's volatile fields
masked and secret keys dropped. Modes follow vcrpy's record modes:

``record``
    hit -> stored result; miss -> call the tool, store, return.
``replay``
    hit -> stored result; miss -> :class:`~failforge.errors.CacheMiss` naming the tool and the
    args, listing the nearest recorded keys for the same tool with a diff against the nearest.
``off``
    always call the tool, never read nor write the cache.

Results are stored as canonical JSON text (never pickled), so the cache directory contains no
secrets and no opaque bytes. In ``record`` mode the returned value is the stored form (the same
value ``replay`` will hand back), so a recorded run and its replay see identical observations.
"""

from __future__ import annotations

import difflib
import functools
import json
import threading
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

import diskcache
import orjson
from pydantic import BaseModel

from failforge.canonical import canonical_json, readable_diff, sha256_hex
from failforge.errors import CacheMiss

T = TypeVar("T")

CacheMode = Literal["record", "replay", "off"]
_MODES: frozenset[str] = frozenset({"record", "replay", "off"})

_ENTRY_PREFIX = "entry:"
_TOOL_INDEX_PREFIX = "index:tool:"
_TOOLS_KEY = "index:tools"
_NEAREST = 3
_ARGS_PREVIEW = 400


class CacheEntry(BaseModel):
    """One recorded stateless tool call."""

    key: str
    tool: str
    version: str
    #: Canonicalised args: NFC, volatile fields replaced by ``<masked>``, secret keys removed.
    args: dict[str, Any]
    #: The JSON value of the result (canonical form: secret keys removed, NFC strings).
    result: Any
    #: ISO-8601 UTC time the entry was recorded.
    created_at: str


def _preview(text: str, limit: int = _ARGS_PREVIEW) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text) - limit} more chars)"


@functools.lru_cache(maxsize=1024)
def _key_tail(tool: str, version: str) -> str:
    return (
        ',"tool":'
        + json.dumps(unicodedata.normalize("NFC", tool), ensure_ascii=False)
        + ',"version":'
        + json.dumps(unicodedata.normalize("NFC", version), ensure_ascii=False)
        + "}"
    )


class ToolCache:
    """A process-safe cache of stateless tool results keyed by SHA-256 of canonical call JSON."""

    def __init__(
        self,
        directory: str | Path,
        mode: CacheMode = "record",
        volatile_fields: Sequence[str] = (),
    ) -> None:
        if mode not in _MODES:
            raise ValueError(f"ToolCache mode must be one of {sorted(_MODES)}, got {mode!r}")
        if isinstance(volatile_fields, str):
            raise TypeError("volatile_fields must be a sequence of field names, not a single string")
        self.directory = Path(directory)
        self.mode: CacheMode = mode
        self.volatile_fields: tuple[str, ...] = tuple(volatile_fields)
        self._mask = frozenset(self.volatile_fields)
        self._cache = diskcache.Cache(str(self.directory))
        self._keys_used: list[str] = []
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ keys

    def _args_text(self, tool: str, args: Mapping[str, Any]) -> str:
        if not isinstance(tool, str) or not tool:
            raise ValueError(f"tool name must be a non-empty string, got {tool!r}")
        if not isinstance(args, Mapping):
            raise TypeError(f"args for tool {tool!r} must be a mapping, got {type(args).__name__}")
        return canonical_json(args, self._mask)

    def _normalise_args(self, tool: str, args: Mapping[str, Any]) -> dict[str, Any]:
        return json.loads(self._args_text(tool, args))

    @staticmethod
    def _key_from_text(tool: str, version: str, args_text: str) -> str:
        # Exactly canonical_json({"tool", "version", "args"}): keys sorted (args < tool < version), the
        # args text already canonical; the tool/version tail is computed once per (tool, version).
        return sha256_hex('{"args":' + args_text + _key_tail(tool, version))

    @classmethod
    def _key_for(cls, tool: str, version: str, norm_args: dict[str, Any]) -> str:
        return cls._key_from_text(tool, str(version), canonical_json(norm_args))

    def key(self, tool: str, args: Mapping[str, Any], version: str = "1") -> str:
        """The cache key of a call: sha256 of canonical {tool, version, masked args}."""
        return self._key_for(tool, str(version), self._normalise_args(tool, args))

    # ------------------------------------------------------------------ calls

    def call(
        self,
        tool: str,
        args: Mapping[str, Any],
        fn: Callable[[], T],
        version: str = "1",
    ) -> tuple[T, str, bool]:
        """Run (or serve) one tool call; returns ``(result, key, hit)``.

        The hit path is kept lean (it is what every replayed stateless call pays): the arguments are
        canonicalised once, the key text is assembled from that canonical text, and the stored entry
        is decoded with ``json.loads`` rather than re-validated.
        """
        version = str(version)
        args_text = self._args_text(tool, args)
        key = self._key_from_text(tool, version, args_text)

        if self.mode == "off":
            return fn(), key, False

        text = self._cache.get(_ENTRY_PREFIX + key, retry=True)
        if text is not None:
            self._use(key)
            return orjson.loads(text)["result"], key, True

        norm_args = json.loads(args_text)
        if self.mode == "replay":
            raise self._miss(tool, version, norm_args, key)

        result = fn()
        stored = self._store(key, tool, version, norm_args, result)
        self._use(key)
        return stored.result, key, False

    def _store(self, key: str, tool: str, version: str, norm_args: dict[str, Any], result: Any) -> CacheEntry:
        try:
            # Strict check first: canonical_json would silently str() unknown objects.
            json.dumps(result, allow_nan=False)
            result_text = canonical_json(result)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"result of tool {tool!r} is not JSON-serialisable and cannot be cached: {exc}") from exc
        created_at = datetime.now(UTC).isoformat()
        entry_text = (
            '{"args":'
            + canonical_json(norm_args)
            + ',"created_at":'
            + json.dumps(created_at)
            + ',"key":'
            + json.dumps(key)
            + ',"result":'
            + result_text
            + ',"tool":'
            + json.dumps(tool, ensure_ascii=False)
            + ',"version":'
            + json.dumps(version, ensure_ascii=False)
            + "}"
        )
        ekey = _ENTRY_PREFIX + key
        index_key = _TOOL_INDEX_PREFIX + tool
        with self._cache.transact(retry=True):
            existing = self._cache.get(ekey, retry=True)
            if existing is not None:
                # Another thread/process recorded the same call first: its entry wins, so every
                # caller of this key sees one consistent value.
                return CacheEntry.model_validate_json(existing)
            self._cache.set(ekey, entry_text, retry=True)
            index = json.loads(self._cache.get(index_key, "[]", retry=True))
            index.append(key)
            self._cache.set(index_key, json.dumps(index), retry=True)
            tools = json.loads(self._cache.get(_TOOLS_KEY, "[]", retry=True))
            if tool not in tools:
                tools.append(tool)
                self._cache.set(_TOOLS_KEY, json.dumps(tools, ensure_ascii=False), retry=True)
        return CacheEntry.model_validate_json(entry_text)

    def _use(self, key: str) -> None:
        with self._lock:
            self._keys_used.append(key)

    # ------------------------------------------------------------------ misses

    def _miss(self, tool: str, version: str, norm_args: dict[str, Any], key: str) -> CacheMiss:
        wanted = canonical_json(norm_args)
        nearest = self._nearest(tool, wanted)
        head = f"no recorded result for tool {tool!r} (version {version}) with args {_preview(wanted)} [key {key}]"
        if nearest:
            lines = [
                f"  {e.key}  similarity {r:.2f}  version {e.version}  args {_preview(canonical_json(e.args), 160)}"
                for r, e in nearest
            ]
            message = head + f"; nearest recorded keys for {tool!r}:\n" + "\n".join(lines)
            best = nearest[0][1]
            diff = readable_diff(
                best.args, norm_args, label_expected=f"recorded {best.key[:12]}", label_actual="requested"
            )
            expected: Any = best.args
        else:
            tools = self.tools()
            others = f" (recorded tools: {', '.join(map(repr, tools))})" if tools else " (the cache is empty)"
            message = head + f"; no recordings exist for tool {tool!r}{others}"
            diff = ""
            expected = None
        err = CacheMiss(message, expected=expected, actual=norm_args, diff=diff)
        err.tool = tool  # type: ignore[attr-defined]
        err.key = key  # type: ignore[attr-defined]
        err.nearest_keys = [e.key for _, e in nearest]  # type: ignore[attr-defined]
        return err

    def _nearest(self, tool: str, wanted: str, n: int = _NEAREST) -> list[tuple[float, CacheEntry]]:
        """Up to ``n`` entries of ``tool`` whose canonical args are most similar (difflib ratio)."""
        candidates: list[tuple[float, str, CacheEntry]] = []
        matcher = difflib.SequenceMatcher(autojunk=False)
        matcher.set_seq2(wanted)
        for entry in self.entries(tool):
            text = canonical_json(entry.args)
            matcher.set_seq1(text)
            candidates.append((matcher.quick_ratio(), text, entry))
        # quick_ratio is an upper bound of ratio: stop once it cannot beat the n-th best.
        candidates.sort(key=lambda c: c[0], reverse=True)
        best: list[tuple[float, CacheEntry]] = []
        for upper, text, entry in candidates:
            if len(best) >= n and upper <= best[-1][0]:
                break
            matcher.set_seq1(text)
            best.append((matcher.ratio(), entry))
            best.sort(key=lambda b: b[0], reverse=True)
            del best[n:]
        return best

    # ------------------------------------------------------------------ reading

    def get(self, key: str) -> CacheEntry | None:
        """The entry recorded under ``key``, or None."""
        text = self._cache.get(_ENTRY_PREFIX + key, retry=True)
        return None if text is None else CacheEntry.model_validate_json(text)

    def tools(self) -> list[str]:
        """Tools with at least one recorded entry, in first-recorded order."""
        return json.loads(self._cache.get(_TOOLS_KEY, "[]", retry=True))

    def entries(self, tool: str | None = None) -> Iterator[CacheEntry]:
        """Recorded entries (of one tool, or all), in recording order, via the per-tool index."""
        tools = [tool] if tool is not None else self.tools()
        for name in tools:
            for key in json.loads(self._cache.get(_TOOL_INDEX_PREFIX + name, "[]", retry=True)):
                entry = self.get(key)
                if entry is not None:
                    yield entry

    def keys_used(self) -> list[str]:
        """Keys this instance served (hits) or stored (record misses), one per call, in order."""
        with self._lock:
            return list(self._keys_used)

    # ------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        self._cache.close()

    def __enter__(self) -> ToolCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ToolCache({str(self.directory)!r}, mode={self.mode!r}, volatile_fields={list(self.volatile_fields)!r})"
