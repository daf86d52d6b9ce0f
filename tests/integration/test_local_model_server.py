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
