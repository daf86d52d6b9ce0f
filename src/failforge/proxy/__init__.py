"""The stand-alone record/replay/branch proxy for frameworks that run in another process or language."""

from failforge.proxy._runs import FinishRequest, Injection, ProxyRun, RunRequest, ToolReport, fresh_call_id
from failforge.proxy._server import DEFAULT_MAX_BODY, RUN_HEADER, Proxy, ProxyError, ProxyServer, require_loopback

__all__ = [
    "DEFAULT_MAX_BODY",
    "RUN_HEADER",
    "FinishRequest",
    "Injection",
    "Proxy",
    "ProxyError",
    "ProxyRun",
    "ProxyServer",
    "RunRequest",
    "ToolReport",
    "fresh_call_id",
    "require_loopback",
]
