"""Tests for the SHA-256 tool cache (real diskcache in tmp_path)."""

from __future__ import annotations

import threading
import unicodedata
from pathlib import Path

import pytest

from failforge.cache import CacheEntry, ToolCache
from failforge.canonical import MASK
from failforge.errors import CacheMiss, DriftError


class Counter:
    """A tool function that counts its calls and returns a fixed value."""

    def __init__(self, value):
        self.value = value
        self.calls = 0

    def __call__(self):
        self.calls += 1
        return self.value


def _never():
    raise AssertionError("fn must not be called")


def test_record_then_replay_serves_stored_value_without_calling_fn(tmp_path: Path) -> None:
    fn = Counter({"hits": ["a", "b"], "total": 2})
    with ToolCache(tmp_path, mode="record") as cache:
        result, key, hit = cache.call("search", {"q": "cats", "k": 2}, fn)
        assert (result, hit) == ({"hits": ["a", "b"], "total": 2}, False)
        assert fn.calls == 1
        # A second record-mode call is a hit and does not call the tool again.
        again, key2, hit2 = cache.call("search", {"q": "cats", "k": 2}, fn)
        assert (again, key2, hit2) == (result, key, True)
        assert fn.calls == 1

    with ToolCache(tmp_path, mode="replay") as replay:
        served, rkey, rhit = replay.call("search", {"k": 2, "q": "cats"}, _never)
        assert served == {"hits": ["a", "b"], "total": 2}
        assert rkey == key and rhit is True
        entry = replay.get(key)
        assert isinstance(entry, CacheEntry)
        assert (entry.tool, entry.version, entry.args) == ("search", "1", {"k": 2, "q": "cats"})
        assert entry.created_at  # iso timestamp


def test_version_is_part_of_the_key(tmp_path: Path) -> None:
    with ToolCache(tmp_path) as cache:
        assert cache.key("search", {"q": "x"}, version="1") != cache.key("search", {"q": "x"}, version="2")
        assert cache.key("search", {"q": "x"}) != cache.key("fetch", {"q": "x"})


def test_replay_miss_raises_cache_miss_naming_tool_and_nearest_keys(tmp_path: Path) -> None:
    with ToolCache(tmp_path, mode="record") as cache:
        near_key = cache.call("search", {"q": "weather in paris", "k": 5}, lambda: "near")[1]
        mid_key = cache.call("search", {"q": "weather in rome", "k": 5}, lambda: "mid")[1]
        far_key = cache.call("search", {"q": "zzzzzzzzzzzzzzzzzzzzzz", "k": 99}, lambda: "far")[1]
        fourth = cache.call("search", {"q": "qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq", "k": 1234}, lambda: "x")[1]
        # Same characters as the query, scrambled: a perfect character-bag score but a poor match.
        anagram = cache.call("search", {"q": "sirap ni rehtaew", "k": 6}, lambda: "anagram")[1]
        other_tool = cache.call("fetch", {"q": "weather in paris", "k": 6}, lambda: "other")[1]

    with ToolCache(tmp_path, mode="replay") as replay:
        with pytest.raises(CacheMiss) as info:
            replay.call("search", {"q": "weather in paris", "k": 6}, _never)
    err = info.value
    assert isinstance(err, DriftError)
    text = str(err)
    assert "'search'" in text
    assert "weather in paris" in text  # the args are named
    # Up to three nearest keys of the same tool, most similar first.
    assert err.nearest_keys[0] == near_key
    assert len(err.nearest_keys) == 3
    assert set(err.nearest_keys) <= {near_key, mid_key, far_key, fourth, anagram}
    assert mid_key in err.nearest_keys
    for k in err.nearest_keys:
        assert k in text
    assert other_tool not in err.nearest_keys and other_tool not in text
    # A readable diff against the nearest recording.
    assert '-  "k": 5' in err.diff or '- "k": 5' in err.diff
    assert '"k": 6' in err.diff


def test_replay_miss_for_unknown_tool_says_so(tmp_path: Path) -> None:
    with ToolCache(tmp_path, mode="record") as cache:
        cache.call("search", {"q": "a"}, lambda: 1)
    with ToolCache(tmp_path, mode="replay") as replay:
        with pytest.raises(CacheMiss) as info:
            replay.call("browse", {"url": "https://example.org"}, _never)
    assert "'browse'" in str(info.value)
    assert "no recordings exist" in str(info.value)
    assert info.value.nearest_keys == []


def test_off_mode_never_stores_and_always_calls(tmp_path: Path) -> None:
    fn = Counter("live")
    with ToolCache(tmp_path, mode="off") as cache:
        for _ in range(3):
            result, key, hit = cache.call("fetch", {"url": "https://x"}, fn)
            assert (result, hit) == ("live", False)
        assert fn.calls == 3
        assert cache.get(key) is None
        assert list(cache.entries()) == []
        assert cache.keys_used() == []
    with ToolCache(tmp_path, mode="replay") as replay:
        with pytest.raises(CacheMiss):
            replay.call("fetch", {"url": "https://x"}, _never)


def test_masked_volatile_field_shares_a_key(tmp_path: Path) -> None:
    with ToolCache(tmp_path, mode="record", volatile_fields=["request_id", "opts.timestamp"]) as cache:
        r1, k1, h1 = cache.call("search", {"q": "x", "request_id": "aaa", "opts": {"timestamp": 1}}, lambda: "first")
        r2, k2, h2 = cache.call("search", {"q": "x", "request_id": "bbb", "opts": {"timestamp": 2}}, _never)
        assert k1 == k2 and (r2, h1, h2) == ("first", False, True)
        assert cache.get(k1).args == {"q": "x", "request_id": MASK, "opts": {"timestamp": MASK}}
        # Unmasked fields still distinguish calls.
        assert cache.key("search", {"q": "y", "request_id": "aaa"}) != cache.key(
            "search", {"q": "x", "request_id": "aaa"}
        )

    # Without the mask the same two calls have different keys.
    with ToolCache(tmp_path / "nomask") as plain:
        assert plain.key("search", {"q": "x", "request_id": "aaa"}) != plain.key(
            "search", {"q": "x", "request_id": "bbb"}
        )


def test_key_order_and_nfc_differences_share_a_key(tmp_path: Path) -> None:
    nfc = unicodedata.normalize("NFC", "café")
    nfd = unicodedata.normalize("NFD", "café")
    assert nfc != nfd
    with ToolCache(tmp_path) as cache:
        a = cache.key("search", {"q": nfc, "opts": {"lang": "fr", "k": 3}})
        b = cache.key("search", {"opts": {"k": 3, "lang": "fr"}, "q": nfd})
        assert a == b
        assert len(a) == 64 and int(a, 16) >= 0
        cache.call("search", {"q": nfc, "opts": {"lang": "fr", "k": 3}}, lambda: "r")
        assert cache.call("search", {"opts": {"k": 3, "lang": "fr"}, "q": nfd}, _never) == ("r", a, True)


def test_secrets_absent_from_key_and_stored_bytes(tmp_path: Path) -> None:
    secret = "sk-SUPERSECRET-0123456789"
    bearer = "Bearer tok-HIDDEN-987654"
    args = {
        "url": "https://api.example.org/v1",
        "api_key": secret,
        "headers": {"Authorization": bearer, "Accept": "json"},
        "nested": [{"X-API-KEY": secret}],
    }
    with ToolCache(tmp_path) as cache:
        _, key, _ = cache.call("fetch", args, lambda: {"body": "ok", "cookie": secret})
        # The key does not depend on the secret values.
        other = dict(args, api_key="different", headers={"Authorization": "Bearer other", "Accept": "json"})
        assert cache.key("fetch", other) == key
        entry = cache.get(key)
        assert "api_key" not in entry.args
        assert entry.args["headers"] == {"Accept": "json"}
        assert secret not in entry.model_dump_json() and bearer not in entry.model_dump_json()

    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files
    blob = b"".join(p.read_bytes() for p in files)
    assert b"api.example.org" in blob  # sanity: the grep can find stored text
    assert secret.encode() not in blob
    assert b"tok-HIDDEN-987654" not in blob


def test_non_json_result_raises_type_error_naming_tool(tmp_path: Path) -> None:
    with ToolCache(tmp_path) as cache:
        with pytest.raises(TypeError, match="'pageload'"):
            cache.call("pageload", {"url": "u"}, lambda: object())
        with pytest.raises(TypeError, match="'pageload'"):
            cache.call("pageload", {"url": "v"}, lambda: float("nan"))
        assert list(cache.entries()) == []


def test_reopening_directory_sees_entries(tmp_path: Path) -> None:
    with ToolCache(tmp_path) as cache:
        keys = [cache.call("search", {"q": str(i)}, lambda i=i: i)[1] for i in range(3)]
        fkey = cache.call("fetch", {"url": "u"}, lambda: "page")[1]
    reopened = ToolCache(tmp_path, mode="replay")
    try:
        assert [e.key for e in reopened.entries("search")] == keys
        assert [e.result for e in reopened.entries("search")] == [0, 1, 2]
        assert [e.key for e in reopened.entries()] == keys + [fkey]
        assert reopened.tools() == ["search", "fetch"]
        assert reopened.call("fetch", {"url": "u"}, _never) == ("page", fkey, True)
    finally:
        reopened.close()


def test_two_threads_recording_concurrently_produce_consistent_entries(tmp_path: Path) -> None:
    n = 40
    errors: list[BaseException] = []
    results: dict[int, list[tuple]] = {0: [], 1: []}
    barrier = threading.Barrier(2)

    with ToolCache(tmp_path) as cache:

        def worker(tid: int) -> None:
            try:
                barrier.wait()
                for i in range(n):
                    # Both threads record the same shared calls and some of their own.
                    results[tid].append(
                        cache.call("search", {"q": f"shared-{i}"}, lambda i=i, t=tid: {"i": i, "by": t})
                    )
                    cache.call("search", {"q": f"own-{tid}-{i}"}, lambda i=i: {"i": i})
            except BaseException as exc:  # pragma: no cover - surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(t,)) for t in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors

        entries = list(cache.entries("search"))
        keys = [e.key for e in entries]
        assert len(keys) == len(set(keys)) == 3 * n  # no lost or duplicated index entries
        by_key = {e.key: e for e in entries}
        for i in range(n):
            (r0, k0, _), (r1, k1, _) = results[0][i], results[1][i]
            assert k0 == k1
            # Both threads were handed the single stored value for the shared call.
            assert r0 == r1 == by_key[k0].result
            assert by_key[k0].result["i"] == i
        assert len(cache.keys_used()) == 4 * n

    with ToolCache(tmp_path, mode="replay") as replay:
        assert len(list(replay.entries("search"))) == 3 * n


def test_keys_used_order(tmp_path: Path) -> None:
    with ToolCache(tmp_path) as cache:
        ka = cache.call("search", {"q": "a"}, lambda: "A")[1]
        kb = cache.call("fetch", {"url": "b"}, lambda: "B")[1]
        cache.call("search", {"q": "a"}, _never)  # hit
        kc = cache.call("search", {"q": "c"}, lambda: "C")[1]
        assert cache.keys_used() == [ka, kb, ka, kc]
    with ToolCache(tmp_path, mode="replay") as replay:
        replay.call("search", {"q": "c"}, _never)
        replay.call("fetch", {"url": "b"}, _never)
        with pytest.raises(CacheMiss):
            replay.call("search", {"q": "zzz"}, _never)
        assert replay.keys_used() == [kc, kb]  # misses are not provenance


def test_invalid_mode_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        ToolCache(tmp_path, mode="live")  # type: ignore[arg-type]
