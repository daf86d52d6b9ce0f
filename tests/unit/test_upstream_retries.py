"""Live calls retry on 429/5xx/dropped connections at the network edge, then fail as infrastructure."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from failforge.errors import InfrastructureError, ModelUnavailable
from failforge.llm import HttpUpstream, chat_response


class _FaultServer:
    """A loopback OpenAI-compatible server that fails the first requests as scripted."""

    def __init__(self, script: list[str]) -> None:
        self.script = list(script)
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # noqa: D401 - silence
                pass

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"body": body, "auth": self.headers.get("Authorization")})
                action = outer.script.pop(0) if outer.script else "ok"
                if action == "drop":
                    self.connection.close()
                    return
                status = {"ok": 200, "429": 429, "500": 500, "400": 400}[action]
                payload = json.dumps(
                    chat_response(body["model"], "hello") if status == 200 else {"error": action}
                ).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> _FaultServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


def test_retries_429_500_and_dropped_connections_then_succeeds(monkeypatch):
    monkeypatch.setenv("FF_TEST_KEY", "sk-test-123")
    with _FaultServer(["429", "500", "drop"]) as server:
        upstream = HttpUpstream(
            server.base_url, api_key_env="FF_TEST_KEY", model="served-name", max_attempts=5, max_wait=0.05
        )
        response = upstream({"model": "recorded-name", "messages": [{"role": "user", "content": "hi"}]})
        assert response["choices"][0]["message"]["content"] == "hello"
        assert len(server.requests) == 4
        assert all(r["body"]["model"] == "served-name" for r in server.requests)
        assert server.requests[0]["auth"] == "Bearer sk-test-123"


def test_exhausted_retries_are_an_infrastructure_error():
    with _FaultServer(["500"] * 10) as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None, max_attempts=3, max_wait=0.05)
        with pytest.raises(ModelUnavailable) as info:
            upstream({"model": "m", "messages": []})
        assert isinstance(info.value, InfrastructureError) and "3 attempts" in str(info.value)
        assert len(server.requests) == 3


def test_client_errors_are_not_retried():
    with _FaultServer(["400", "ok"]) as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None, max_attempts=4, max_wait=0.05)
        with pytest.raises(ModelUnavailable):
            upstream({"model": "m", "messages": []})
        assert len(server.requests) == 1


def test_model_endpoint_client_is_a_plain_openai_client_for_the_endpoint():
    from failforge.llm import ModelEndpoint
    from failforge.testing import LoopbackModelServer

    with LoopbackModelServer() as server:
        client = ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None).client()
        reply = client.chat.completions.create(model="loopback", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content
