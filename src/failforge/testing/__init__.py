"""Loopback OpenAI-compatible servers for tests and benchmarks: fixed latency, injected faults, proxying."""

from failforge.testing.model_servers import FaultPlan, LoopbackModelServer, NoScriptedAnswer

__all__ = ["FaultPlan", "LoopbackModelServer", "NoScriptedAnswer"]
