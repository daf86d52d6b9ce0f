import os

import httpx
import pytest

from failforge.llm import LocalModelServer, local_model_path

pytestmark = pytest.mark.local_model


def test_gguf_ships_in_the_wheel():
    path = local_model_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000


def test_server_starts_on_loopback_and_stops_with_its_process_group():
    server = LocalModelServer(n_ctx=2048)
    with server:
        assert server.base_url.startswith("http://127.0.0.1:")
        models = httpx.get(f"{server.base_url}/models", timeout=10).json()
        assert models["data"][0]["id"] == "smollm2-135m-instruct"
        pid = server._proc.pid
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{server.base_url}/models", timeout=2)


def test_open_models_warms_the_embedded_model_with_a_request_and_then_serves_it():
    from failforge.gold._models import open_models

    request = {
        "messages": [{"role": "system", "content": "You answer in one word."}, {"role": "user", "content": "Hi"}]
    }
    models = open_models(None, None, n_ctx=2048, warm=request)
    with models as resolved:
        assert models.warmed_seconds is not None and models.warmed_seconds > 0
        reply = httpx.post(
            f"{resolved.agent.base_url}/chat/completions",
            json={**request, "model": "smollm2-135m-instruct", "max_tokens": 4},
            timeout=300,
        )
        assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["role"] == "assistant"
    assert models.server is not None and models.server._proc is None  # stopped with the context
