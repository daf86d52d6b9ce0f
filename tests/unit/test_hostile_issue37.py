"""Issue 37: a hostile web page, a hostile agent and a hostile dataset (the cases that need no heavy part).

Each test is named for a case of the issue's "Why" list and drives the surface the hostile tester did:
the run gateway and the proxy over real loopback HTTP, the redactor, the dataset readers on real FIFOs
and links, the YAML and subset loaders. The cases that need a real agent process, a CLI run or worker
processes are in ``tests/integration/test_hostile_issue37.py``.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from failforge.gateway import Gateway, ServedRun
from failforge.llm import HttpUpstream, chat_response
from failforge.proxy import Proxy, ProxyServer
from failforge.replay import Plan, Session
from failforge.secrets import MASK, Redactor, redact
from failforge.testing import LoopbackModelServer

KEY = "ff-upstream-key-9b1f2c7d4e"


# --- the gateway: DNS rebinding, capability tokens, errors ------------------------------------------


@pytest.fixture()
def proxy() -> Iterator[tuple[ProxyServer, LoopbackModelServer]]:
    with LoopbackModelServer() as model:
        upstream = HttpUpstream(model.base_url, api_key_env=None, max_attempts=1)
        with ProxyServer(Proxy(upstream=upstream)) as server:
            yield server, model
        upstream.close()


def _open(http: httpx.Client) -> dict[str, Any]:
    opened = http.post("/runs", json={"mode": "record", "task": "weather in Paris"})
    assert opened.status_code == 200, opened.text
    return opened.json()


def _seg(run: dict[str, Any]) -> str:
    """The run's path segment: its id and capability token (``id~token``); the id alone where there is no token."""
    return f"{run['run_id']}~{run['token']}" if run.get("token") else run["run_id"]


def _port(base_url: str) -> int:
    return int(base_url.rsplit(":", 1)[1])


def test_dns_rebinding_a_foreign_host_or_origin_is_refused_on_every_route(proxy):
    server, _ = proxy
    port = _port(server.base_url)
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        run = _open(http)
        segment = _seg(run)
        chat = {"model": "m", "messages": [{"role": "user", "content": "weather in Paris"}]}
        routes = [
            ("GET", "/healthz", None),
            ("GET", "/runs", None),
            ("POST", "/runs", {"mode": "record", "task": "t"}),
            ("GET", f"/runs/{segment}", None),
            ("POST", f"/runs/{segment}/v1/chat/completions", chat),
            ("POST", f"/runs/{segment}/finish", {}),
            ("GET", "/openapi.json", None),
        ]
        for host in (
            f"evil.example:{port}",
            f"localhost.evil.com:{port}",
            f"127.0.0.1.nip.io:{port}",
            "127.0.0.1:1",
            f"attacker@127.0.0.1:{port}",
        ):
            for method, path, body in routes:
                answer = http.request(method, path, json=body, headers={"Host": host})
                assert answer.status_code == 421, (host, method, path, answer.status_code)
                assert answer.json()["error"]["code"] == "host_refused"
        for origin in ("http://evil.example", f"http://localhost.evil.com:{port}", "null", f"https://127.0.0.1:{port}"):
            answer = http.post(f"/runs/{segment}/v1/chat/completions", json=chat, headers={"Origin": origin})
            assert answer.status_code == 403 and answer.json()["error"]["code"] == "origin_refused", origin
        assert http.get(f"/runs/{segment}").json()["steps"] == 1, "nothing recorded from a refused request"
        # its own names, on its own port, and its own origin are answered
        for host in (f"127.0.0.1:{port}", f"localhost:{port}", f"LOCALHOST:{port}"):
            assert http.get("/healthz", headers={"Host": host}).status_code == 200, host
        assert http.get("/healthz", headers={"Origin": f"http://localhost:{port}"}).status_code == 200


def test_a_request_without_a_host_header_is_refused():
    with Gateway() as gateway, socket.create_connection(("127.0.0.1", _port(gateway.base_url)), timeout=10) as raw:
        raw.sendall(b"GET /healthz HTTP/1.0\r\n\r\n")
        answer = _read_all(raw)
    assert answer.startswith(b"HTTP/1.1 421") and b'"host_refused"' in answer


def _read_all(raw: socket.socket) -> bytes:
    chunks = []
    while True:
        chunk = raw.recv(65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def test_a_run_id_alone_neither_drives_finishes_nor_reads_a_run(proxy):
    server, _ = proxy
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        run = _open(http)
        rid, token = run["run_id"], run.get("token", "")
        chat = {"model": "m", "messages": [{"role": "user", "content": "weather in Paris"}]}
        tool = {"name": "lookup", "observation": "sunny"}
        for headers in ({}, {"X-Failforge-Token": "0" * 32}, {"Authorization": "Bearer " + "0" * 32}):
            assert http.get(f"/runs/{rid}", headers=headers).status_code == 404
            assert http.post(f"/runs/{rid}/v1/chat/completions", json=chat, headers=headers).status_code == 404
            assert http.post(f"/runs/{rid}/tools", json=tool, headers=headers).status_code == 404
            assert http.post(f"/runs/{rid}/finish", json={}, headers=headers).status_code == 404
            assert http.delete(f"/runs/{rid}", headers=headers).status_code == 404
        assert http.post(f"/runs/{rid}~{'0' * 32}/finish", json={}).status_code == 404
        assert http.get(f"/runs/{rid}?token={token}").status_code == 404, "never from the query string"
        assert http.get(f"/runs/{rid}").json()["error"] == http.get("/runs/no-such-run").json()["error"] | {
            "message": http.get(f"/runs/{rid}").json()["error"]["message"]
        }, "an unknown run and a wrong token look alike"
        # the token, in a header or in the path segment, reaches it
        assert http.get(f"/runs/{rid}", headers={"X-Failforge-Token": token}).json()["steps"] == 1
        assert (
            http.post(run["base_url"].removeprefix(server.base_url) + "/chat/completions", json=chat).status_code == 200
        )
        done = http.post(f"/runs/{rid}/finish", json={}, headers={"Authorization": f"Bearer {token}"})
        assert done.status_code == 200 and done.json()["run_id"] == rid
        assert (
            http.get(f"/runs/{rid}").status_code == 404
            and http.get(f"/runs/{rid}~{token}").json()["status"] == "finished"
        )


def test_a_404_for_an_unknown_run_lists_no_open_run_ids(proxy):
    server, _ = proxy
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        opened = [_open(http)["run_id"] for _ in range(3)]
        answers = [
            http.get("/runs/nope"),
            http.post("/runs/nope/v1/chat/completions", json={"model": "m", "messages": []}),
            http.post("/runs/nope/finish", json={}),
            http.post("/runs", json={"mode": "replay", "seed_id": "nope"}),
        ]
        for answer in answers:
            assert answer.status_code == 404
            assert not any(rid in answer.text for rid in opened), answer.text


def test_a_100000_character_run_id_is_not_echoed_whole(proxy):
    server, _ = proxy
    long_id = "r" * 100_000
    chat = {"model": "m", "messages": []}
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        answers = [
            http.post("/runs", json={"mode": "record", "task": "t", "run_id": long_id}),
            http.post("/v1/chat/completions", json=chat, headers={"X-Failforge-Run": long_id}),
            http.post("/runs", json={"mode": "replay", "seed_id": long_id}),
            http.get(f"/runs/{long_id[:30_000]}"),
            http.post(f"/runs/{long_id[:30_000]}/mcp", json={}),
        ]
    for answer in answers:
        assert answer.status_code in (400, 404) and len(answer.content) < 8000, (
            answer.status_code,
            len(answer.content),
        )
        assert "r" * 100 not in answer.text, answer.json()["error"]["message"][:300]
    assert all("characters)" in a.json()["error"]["message"] for a in answers[1:]), "cut, and said to be cut"


def test_50000_deep_json_on_the_run_api_is_a_json_400_not_a_plain_500(proxy, capfd):
    server, _ = proxy
    deep = b"[" * 50_000 + b"]" * 50_000
    with httpx.Client(base_url=server.base_url, timeout=30) as http:
        run = _open(http)
        segment = _seg(run)
        for path in (
            "/runs",
            f"/runs/{segment}/tools",
            f"/runs/{segment}/finish",
            f"/runs/{segment}/v1/chat/completions",
        ):
            answer = http.post(path, content=deep, headers={"content-type": "application/json"})
            assert answer.status_code == 400, (path, answer.status_code, answer.text[:200])
            assert answer.json()["error"]["code"] == "too_deep" and "400 levels" in answer.json()["error"]["message"]
        assert (
            http.post("/runs", json={"mode": "record", "task": "t", "roster": [], "framework": "x" * 10}).status_code
            == 200
        ), "ordinary bodies pass"
    assert "Traceback" not in capfd.readouterr().err


def test_starlettes_own_404_and_405_are_the_documented_json(proxy):
    server, _ = proxy
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        for answer, status in (
            (http.get("/no/such/route"), 404),
            (http.put("/runs"), 405),
            (http.post("/healthz"), 405),
            (http.get("/runs/x/tools"), 405),
        ):
            assert answer.status_code == status and answer.headers["content-type"] == "application/json", answer.text
            assert set(answer.json()["error"]) >= {"message", "type", "code"}


class _Tools:
    """The least a run's toolbox is to the MCP route: its schemas (no call is made here)."""

    def schemas(self) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": "noop",
                    "description": "does nothing",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ]


@pytest.fixture()
def mcp_run() -> Iterator[tuple[Gateway, Any]]:
    session = Session(Plan.record(), upstream=lambda body: chat_response("m", "hi"))  # type: ignore[arg-type]
    session.begin("task")
    with Gateway(max_body=1024 * 1024) as gateway:
        urls = gateway.add(ServedRun(session.id, session.models, _Tools()))  # type: ignore[arg-type]
        yield gateway, urls


def test_an_mcp_get_is_answered_405_at_once_per_the_streamable_http_spec(mcp_run):
    gateway, urls = mcp_run
    with httpx.Client(timeout=5) as http:
        started = time.monotonic()
        answer = http.get(urls.mcp, headers={"Accept": "text/event-stream"})
        assert answer.status_code == 405 and "POST" in answer.headers["allow"] and time.monotonic() - started < 2
        assert answer.json()["error"]["code"] == "method_not_allowed"
        listed = http.post(
            urls.mcp,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            headers={"Accept": "application/json, text/event-stream"},
        )
        assert listed.status_code == 200 and listed.json()["result"]["tools"][0]["name"] == "noop"


def test_a_9mb_mcp_body_is_a_413_not_a_closed_connection(mcp_run):
    gateway, urls = mcp_run
    body = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"pad": "' + b"x" * (9 * 1024 * 1024) + b'"}}'
    )
    with httpx.Client(timeout=30) as http:
        answer = http.post(
            urls.mcp,
            content=body,
            headers={"content-type": "application/json", "Accept": "application/json, text/event-stream"},
        )
    assert answer.status_code == 413 and answer.json()["error"]["code"] == "body_too_large"


def test_slow_sockets_are_closed_by_the_header_timeout(monkeypatch):
    import failforge.gateway._server as server_module

    monkeypatch.setattr(server_module, "HEADER_TIMEOUT", 0.2)
    with Gateway() as gateway:
        port = _port(gateway.base_url)
        slow = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(20)]
        for i, sock in enumerate(slow):
            if i % 2:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")  # headers that never end
        time.sleep(0.5)
        for sock in slow:
            assert sock.recv(1024) == b"", "closed by the server"
            sock.close()
        with httpx.Client(base_url=gateway.base_url) as http:
            assert http.get("/healthz").status_code == 200


def test_a_body_that_never_arrives_is_a_408(monkeypatch):
    import failforge.gateway._app as app_module

    monkeypatch.setattr(app_module, "BODY_TIMEOUT", 0.3)
    with Gateway() as gateway, socket.create_connection(("127.0.0.1", _port(gateway.base_url)), timeout=5) as raw:
        host = gateway.base_url.removeprefix("http://")
        raw.sendall(
            f"POST /runs/x~y/v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            "Content-Length: 100\r\n\r\n{".encode()
        )
        answer = raw.recv(65536)
    assert answer.startswith(b"HTTP/1.1 404"), "an unknown run is refused before its body is read"
    session = Session(Plan.record(), upstream=lambda body: chat_response("m", "hi"))  # type: ignore[arg-type]
    session.begin("task")
    with Gateway() as gateway, socket.create_connection(("127.0.0.1", _port(gateway.base_url)), timeout=5) as raw:
        urls = gateway.add(ServedRun(session.id, session.models, None))
        host = gateway.base_url.removeprefix("http://")
        raw.sendall(
            f"POST /runs/{urls.segment}/v1/chat/completions HTTP/1.1\r\nHost: {host}\r\nContent-Type:"
            " application/json\r\nContent-Length: 100\r\n\r\n{".encode()
        )
        answer = raw.recv(65536)
    assert answer.startswith(b"HTTP/1.1 408") and b'"body_timeout"' in answer


def test_dropped_clients_are_one_log_line_each_not_tracebacks(proxy, caplog, capfd):
    server, _ = proxy
    port = _port(server.base_url)
    with httpx.Client(base_url=server.base_url, timeout=10) as http:
        run = _open(http)
    caplog.set_level(logging.INFO, logger="failforge.gateway")
    for _ in range(10):
        with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
            raw.sendall(
                f"POST /runs/{_seg(run)}/tools HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                'Content-Type: application/json\r\nContent-Length: 5000\r\n\r\n{"na'.encode()
            )
    deadline = time.monotonic() + 5
    while len([r for r in caplog.records if "hung up" in r.getMessage()]) < 10 and time.monotonic() < deadline:
        time.sleep(0.05)
    lines = [r for r in caplog.records if r.name == "failforge.gateway"]
    assert len(lines) == 10 and all("hung up" in r.getMessage() and r.exc_info is None for r in lines), [
        r.getMessage() for r in lines
    ]
    assert not any(run.get("token", "-") in r.getMessage() for r in lines), "a log line never holds the run's token"
    assert "Traceback" not in capfd.readouterr().err


# --- secrets ------------------------------------------------------------------------------------


def test_the_agent_environment_never_carries_the_variable_named_by_api_key_env(monkeypatch):
    from failforge.secrets import remember_env, scrubbed_environ

    monkeypatch.setenv("FF_TEST_UPSTREAM_KEY", KEY)
    monkeypatch.setenv("FF_TEST_COPY_OF_KEY", f"prefix-{KEY}")
    HttpUpstream("http://127.0.0.1:9/v1", api_key_env="FF_TEST_UPSTREAM_KEY").close()
    env = scrubbed_environ()
    assert (
        "FF_TEST_UPSTREAM_KEY" not in env
        and "FF_TEST_COPY_OF_KEY" not in env
        and not any(KEY in v for v in env.values())
    )
    assert env.get("PATH") == os.environ["PATH"], "the rest of the environment is inherited"
    remember_env(["FF_TEST_OTHER_KEY_NAME"])
    assert "FF_TEST_OTHER_KEY_NAME" not in scrubbed_environ({"FF_TEST_OTHER_KEY_NAME": "x", "HOME": "/root"})


def test_url_userinfo_and_credential_query_parameters_are_masked_by_the_one_redactor():
    from failforge.secrets import safe_url

    url = "https://alice:s3cretpassw0rd@api.example/v1?api-version=2024-02-01&key=AIzaSyQueryKey0123&access_token=tok_abcdef123456"
    shown = safe_url(url)
    assert "s3cretpassw0rd" not in shown and "AIzaSyQueryKey0123" not in shown and "tok_abcdef123456" not in shown
    assert shown == f"https://{MASK}@api.example/v1?api-version=2024-02-01&key={MASK}&access_token={MASK}"
    text = f"calling {url} failed"
    assert "AIzaSyQueryKey0123" not in redact(text) and "api-version=2024-02-01" in redact(text)
    masked = Redactor.for_run([], [url]).text('{"echo": "AIzaSyQueryKey0123", "pw": "s3cretpassw0rd"}')
    assert "AIzaSyQueryKey0123" not in masked and "s3cretpassw0rd" not in masked


def test_the_upstream_url_is_used_as_given_not_mangled():
    seen: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, json=chat_response("m", "ok"))

    upstream = HttpUpstream(
        "https://api.example/openai/v1?api-version=2024-02-01&key=AIzaSyQueryKey0123",
        api_key_env=None,
        transport=httpx.MockTransport(handler),
        max_attempts=1,
    )
    upstream({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    assert seen == ["https://api.example/openai/v1/chat/completions?api-version=2024-02-01&key=AIzaSyQueryKey0123"]
    assert "AIzaSyQueryKey0123" not in upstream.name and "AIzaSyQueryKey0123" not in upstream.shown_url
    upstream.close()


def test_a_url_password_never_shows_in_http_error_bodies_or_in_finish(tmp_path):
    password = "pw-s3cret-8c1d0e2f"
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed = unused.getsockname()[1]  # nothing listens there once this socket is closed
    base = f"http://alice:{password}@127.0.0.1:{closed}/v1?key=AIzaSyQueryKey0123"
    upstream = HttpUpstream(base, api_key_env=None, max_attempts=1)
    proxy = Proxy(upstream=upstream, output=tmp_path / "runs.jsonl", redactor=Redactor.for_run([], [base]))
    with ProxyServer(proxy) as server, httpx.Client(base_url=server.base_url, timeout=30) as http:
        run = _open(http)
        segment = _seg(run)
        refused = http.post(
            f"/runs/{segment}/v1/chat/completions", json={"model": "m", "messages": [{"role": "user", "content": "x"}]}
        )
        done = http.post(f"/runs/{segment}/finish", json={})
        read = http.get(f"/runs/{segment}")
    upstream.close()
    texts = [refused.text, done.text, read.text, *(p.read_text() for p in tmp_path.glob("*.jsonl"))]
    assert refused.status_code >= 400 and done.json()["failure"] is not None
    for text in texts:
        assert password not in text and "AIzaSyQueryKey0123" not in text, text[:500]


def test_a_key_echoed_by_the_upstream_is_masked_in_the_proxys_files_and_answers(tmp_path, monkeypatch):
    monkeypatch.setenv("FF_TEST_ECHOED_KEY", KEY)

    def echo(body: dict) -> tuple[str, None]:
        return f"your key is {KEY}", None

    with LoopbackModelServer(policy=echo) as model:
        upstream = HttpUpstream(model.base_url, api_key_env="FF_TEST_ECHOED_KEY", max_attempts=1)
        proxy = Proxy(
            upstream=upstream,
            output=tmp_path / "runs.jsonl",
            redactor=Redactor.for_run(["FF_TEST_ECHOED_KEY"], [model.base_url]),
        )
        with ProxyServer(proxy) as server, httpx.Client(base_url=server.base_url, timeout=30) as http:
            run = _open(http)
            segment = _seg(run)
            http.post(
                f"/runs/{segment}/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "weather in Paris"}]},
            )
            done = http.post(f"/runs/{segment}/finish", json={"outcome": {"success": True, "evaluator": "outside"}})
            read = http.get(f"/runs/{segment}")
        upstream.close()
    assert done.status_code == 200 and MASK in done.text
    for text in (done.text, read.text, (tmp_path / "runs.jsonl").read_text()):
        assert KEY not in text


# --- datasets -----------------------------------------------------------------------------------

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64


def _dataset(tmp_path: Path, image: bytes = PNG) -> tuple[Path, str]:
    """A one-record dataset file whose step names one image, its images/ folder empty."""
    import hashlib

    from failforge.trajectory import ComponentSpec, Step, Task, Trajectory

    digest = hashlib.sha256(image).hexdigest()
    spec = ComponentSpec(name="x")
    record = Trajectory(
        id="t1",
        task=Task(benchmark="b", task_id="t", instruction="i"),
        harness=spec,
        environment=spec,
        model=spec,
        steps=[Step(index=0, kind="task", agent="user", role="user", content="i", images=[digest])],
    )
    folder = tmp_path / "dataset"
    (folder / "images").mkdir(parents=True)
    path = folder / "records.jsonl"
    path.write_text(record.model_dump_json() + "\n")
    return path, digest


def _within(seconds: float, fn: Any) -> Any:
    """``fn()`` in a thread; a failure (not a hung test run) when it has not returned in ``seconds``."""
    result: list[Any] = []
    failed: list[BaseException] = []

    def run() -> None:
        try:
            result.append(fn())
        except BaseException as exc:  # handed to the test's thread
            failed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    if failed:
        raise failed[0]
    return result[0]


def _read(path: Path) -> tuple[list[Any], list[str]]:
    from failforge.trajectory import load_jsonl

    good, bad = load_jsonl(path)
    return good, [str(b) for b in bad]


@pytest.fixture()
def image_store(tmp_path, monkeypatch) -> Path:
    store = tmp_path / "store"
    monkeypatch.setenv("FAILFORGE_IMAGE_DIR", str(store))
    return store


def test_a_fifo_named_as_an_image_does_not_hang_the_readers(tmp_path, image_store):
    path, digest = _dataset(tmp_path)
    fifo = path.parent / "images" / f"{digest}.png"
    os.mkfifo(fifo)
    good, bad = _within(5, lambda: _read(path))
    assert good == [] and any("a FIFO, not a regular file" in b for b in bad) and any("missing" in b for b in bad), bad
    from failforge.images import ImageMissing, ImageStore

    with pytest.raises(ImageMissing):
        _within(5, lambda: ImageStore(fifo.parent).get(digest))


def test_a_link_to_dev_zero_is_refused_without_being_read(tmp_path, image_store):
    path, digest = _dataset(tmp_path)
    os.symlink("/dev/zero", path.parent / "images" / f"{digest}.png")
    good, bad = _within(5, lambda: _read(path))
    assert good == [] and any("a symbolic link out of its folder" in b for b in bad), bad


def test_a_symlink_to_etc_passwd_named_by_its_hash_is_not_linked_into_the_image_store(tmp_path, image_store):
    import hashlib

    secret = tmp_path / "outside" / "secret.png"
    secret.parent.mkdir()
    secret.write_bytes(PNG + b"secret")
    path, _ = _dataset(tmp_path)
    digest = hashlib.sha256(secret.read_bytes()).hexdigest()
    os.symlink(secret, path.parent / "images" / f"{digest}.png")
    _, bad = _read(path)
    assert any("a symbolic link out of its folder" in b for b in bad), bad
    assert not (image_store / f"{digest}.png").exists() and not (image_store / f"{digest}.png").is_symlink()
    from failforge.images import ImageMissing, ImageStore

    with pytest.raises(ImageMissing):
        ImageStore(path.parent / "images").get(digest)


def test_an_image_too_large_or_not_a_png_is_refused_and_the_rest_is_used(tmp_path, image_store):
    import hashlib

    from failforge.images import ImageRefused, read_image

    path, digest = _dataset(tmp_path)
    (path.parent / "images" / f"{digest}.png").write_bytes(PNG)
    fake = b"GIF89a not a png"
    (path.parent / "images" / f"{hashlib.sha256(fake).hexdigest()}.png").write_bytes(fake)
    good, bad = _read(path)
    assert [g.id for g in good] == ["t1"] and len(bad) == 1 and "not a PNG" in bad[0], bad
    big = tmp_path / "big.png"
    big.write_bytes(PNG + b"\x00" * 2000)
    with pytest.raises(ImageRefused, match="more than the 1000"):
        read_image(big, limit=1000)


def test_image_references_are_hashes_by_the_schema_not_paths():
    from pydantic import ValidationError

    from failforge.attribution._record import ImageRef
    from failforge.trajectory import Step

    for bad in ("../../outside/secret", "/etc/passwd", "A" * 64):
        with pytest.raises(ValidationError):
            Step(index=0, kind="task", agent="user", role="user", images=[bad])
    for bad_path in ("../../outside/secret", "images/../../x", "/etc/passwd"):
        with pytest.raises(ValidationError):
            ImageRef(path=bad_path)
    with pytest.raises(ValidationError):
        ImageRef(sha256="../../x")
    assert ImageRef(path="images/shot.png", sha256="a" * 64).path == "images/shot.png"


def test_a_fifo_in_place_of_trajectory_json_does_not_block_import(tmp_path):
    from failforge.attribution.importers.trajectory_attribution import import_trajectory_attribution

    case = tmp_path / "data" / "cases" / "src" / "agent" / "case-1"
    case.mkdir(parents=True)
    os.mkfifo(case / "trajectory.json")
    (case / "annotation.json").write_text("{}")
    (case / "metadata.json").write_text("{}")
    items = _within(5, lambda: list(import_trajectory_attribution(tmp_path)))
    assert len(items) == 1 and "not a regular file" in str(items[0].problem), items


# --- configs and counts -------------------------------------------------------------------------

BOMB = (
    "".join(
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['lol'] * 9)}]\n"
        for p, c in zip(["", *"abcdefg"], "abcdefgh", strict=True)
    )
    + f"runs: [{', '.join(['*h'] * 9)}]\n"
)


def test_a_yaml_alias_bomb_as_methods_config_is_one_line_not_out_of_memory(tmp_path):
    from failforge.attribution._methods_config import load_methods_config
    from failforge.errors import ConfigError

    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    assert len(BOMB) < 400
    with pytest.raises(ConfigError) as caught:
        _within(5, lambda: load_methods_config(path))
    assert "aliases" in str(caught.value) and "\n" not in str(caught.value) and len(str(caught.value)) < 300
    self_ref = tmp_path / "loop.yaml"
    self_ref.write_text("runs: &r [*r]\n")
    with pytest.raises(ConfigError, match="refers to itself"):
        load_methods_config(self_ref)
    deep = (
        tmp_path / "deep.yaml"
    )  # found in the second hostile pass: nesting, not aliases, also escaped as a RecursionError
    deep.write_text("runs: " + "[" * 600 + "]" * 600 + "\n")
    with pytest.raises(ConfigError, match="nests too deeply"):
        load_methods_config(deep)


def test_an_unknown_subset_schema_version_is_refused(tmp_path):
    from failforge.attribution._subset import SUBSET_SCHEMA, load_manifest
    from failforge.errors import ConfigError

    manifest = {
        "schema_version": "failforge.subset/99",
        "seed": 0,
        "per_source": 1,
        "drawn_from": "x",
        "dataset_sha256": "0" * 64,
        "strata": {},
        "members": [],
    }
    path = tmp_path / "subset.json"
    path.write_text(json.dumps(manifest))
    with pytest.raises((ConfigError, ValueError), match="unknown subset schema version"):
        load_manifest(path)
    path.write_text(json.dumps({**manifest, "schema_version": SUBSET_SCHEMA}))
    assert load_manifest(path).schema_version == SUBSET_SCHEMA


def test_a_key_in_the_url_query_is_masked_on_the_console_and_in_the_attribution_manifest(tmp_path):
    from failforge.attribution._methods_config import load_methods_config
    from failforge.secrets import redact_known

    url = "https://judge.example/v1?key=AIzaSyConsoleKey4567"
    upstream = HttpUpstream(url, api_key_env=None)
    upstream.close()
    assert "AIzaSyConsoleKey4567" not in redact_known(f"error: model endpoint {url} refused the request"), "the console"
    path = tmp_path / "methods.yaml"
    path.write_text(
        f"runs:\n  - method: all-at-once\n    endpoint: {{base_url: '{url}', model: judge, api_key_env: NO_KEY}}\n"
    )
    provenance = json.dumps(load_methods_config(path).provenance(path))
    assert "AIzaSyConsoleKey4567" not in provenance and "judge.example/v1?key=***" in provenance, provenance
