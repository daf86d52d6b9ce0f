"""What serving a tool over MCP adds to a tool call, over calling the same tool in process.

The tool is a real AgentDojo tool (banking's ``get_balance``, read-only, so every call is the same
work) behind a real tool boundary (observed, fingerprinted). In process: ``ToolBoundary.call``. Over
MCP: the run gateway's MCP server (the official SDK, streamable HTTP), the call executed on the run's
own thread as the external harness does it, called from another process by two clients — a raw
JSON-RPC POST on a keep-alive connection (the protocol's floor) and the MCP SDK's ``ClientSession``
(what an agent framework pays). Printed: p50 and p99 in ms and the latency added over in process.
Target: <= 2 ms added at p50. Usage:

    PYTHONHASHSEED=0 python3 scripts/bench_mcp.py [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time

CLIENT = r"""
import asyncio, json, sys, time
import httpx
url, calls = sys.argv[1], int(sys.argv[2])
out = {}
headers = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
}
with httpx.Client(timeout=60) as http:
    http.post(url, headers=headers, json={
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}
        },
    }).raise_for_status()
    times = []
    for i in range(calls):
        start = time.perf_counter()
        http.post(url, headers=headers, json={
            "jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
            "params": {"name": "get_balance", "arguments": {}},
        }).raise_for_status()
        times.append((time.perf_counter() - start) * 1000)
    out["raw JSON-RPC"] = times

async def sdk():
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    async with streamable_http_client(url) as (read, write, *_), ClientSession(read, write) as session:
        await session.initialize()
        times = []
        for _ in range(calls):
            start = time.perf_counter()
            await session.call_tool("get_balance", {})
            times.append((time.perf_counter() - start) * 1000)
        return times

out["MCP SDK client"] = asyncio.run(sdk())
print(json.dumps(out))
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def arguments() -> argparse.ArgumentParser:
    """The options; every one has a default, so the bench runs with none (tests/unit/test_benches.py)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    return parser


def main() -> None:
    args = arguments().parse_args()

    from failforge.environments import environment
    from failforge.gateway import Gateway, OwnerThread, ServedRun
    from failforge.replay import Plan, Session
    from failforge.seeds import env_spec

    spec = env_spec("agentdojo", "banking/user_task_1")
    plugin = environment("agentdojo")
    with plugin.open(spec) as episode:
        session = Session(Plan.record(), drift_error=plugin.drift_error)
        session.begin(episode.instruction())
        tools = session.tools(episode.toolbox(session.log), episode.fingerprint)
        for _ in range(20):
            tools.call("get_balance", "{}", None)
        inside = []
        for _ in range(args.calls):
            start = time.perf_counter()
            tools.call("get_balance", "{}", None)
            inside.append((time.perf_counter() - start) * 1000)
        owner = OwnerThread()
        with Gateway() as gateway:
            urls = gateway.add(ServedRun(session.id, session.models, tools, owner=owner))
            client = subprocess.Popen(
                [sys.executable, "-c", CLIENT, urls.mcp, str(args.calls)], stdout=subprocess.PIPE, text=True
            )
            done = threading.Event()

            def finished() -> None:
                client.wait()
                done.set()
                owner.wake()

            threading.Thread(target=finished, daemon=True).start()
            while (
                not done.is_set()
            ):  # this thread owns the run: it executes the MCP calls, as the external harness does
                owner.pump(0.5)
            served = json.loads(client.stdout.read() if client.stdout else "{}")
    base50, base99 = percentile(inside, 0.5), percentile(inside, 0.99)
    print(f"{'path':<16} {'p50 ms':>8} {'p99 ms':>8} {'added p50':>10} {'added p99':>10}")
    print(f"{'in process':<16} {base50:>8.3f} {base99:>8.3f}")
    for name, values in served.items():
        p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
        print(f"{name:<16} {p50:>8.3f} {p99:>8.3f} {p50 - base50:>+10.3f} {p99 - base99:>+10.3f}")
    print("target: <= 2 ms added at p50")


if __name__ == "__main__":
    main()
