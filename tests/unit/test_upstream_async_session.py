"""An HttpUpstream's aiohttp session ends with the event loop that made it, not at garbage collection (which
prints aiohttp's "Unclosed client session")."""

from __future__ import annotations

import asyncio
import gc
import warnings

from failforge.llm import HttpUpstream
from failforge.testing import LoopbackModelServer


def test_a_loops_session_is_closed_when_the_loop_shuts_down_even_if_the_upstream_is_never_closed() -> None:
    with LoopbackModelServer() as server:
        upstream = HttpUpstream(server.base_url, api_key_env=None, max_attempts=1)
        with asyncio.Runner() as runner:
            answer = runner.run(upstream.acall({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
            session = next(iter(upstream._async_sessions.values()))
            assert answer["choices"] and not session.closed
        assert session.closed  # closed by the loop's shutdown, before upstream.close()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            del session
            gc.collect()
        assert not [w for w in caught if "Unclosed" in str(w.message)]
        upstream.close()
