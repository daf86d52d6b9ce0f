"""``failforge proxy``: the run API for frameworks in another process whose tools stay there.

Runs are :class:`failforge.replay.Session` objects served on the run gateway (the same ASGI app that
serves external agents' model routes and MCP tools); the outside process reports its tool calls and
finishes the run, and every finished run is appended durably (see :mod:`failforge.proxy._api`).
"""

from failforge.gateway import DEFAULT_MAX_BODY, RUN_HEADER, require_loopback
from failforge.proxy._api import Proxy, ProxyServer, openapi
from failforge.proxy._models import FinishRequest, Injection, RunRequest, RunResult, RunStatus, ToolReport
from failforge.proxy._runs import PROXY_HARNESS, ProxyRun, fresh_call_id
from failforge.proxy._store import RunStore, failed_path

__all__ = [
    "DEFAULT_MAX_BODY",
    "PROXY_HARNESS",
    "RUN_HEADER",
    "FinishRequest",
    "Injection",
    "Proxy",
    "ProxyRun",
    "ProxyServer",
    "RunRequest",
    "RunResult",
    "RunStatus",
    "RunStore",
    "ToolReport",
    "failed_path",
    "fresh_call_id",
    "openapi",
    "require_loopback",
]
