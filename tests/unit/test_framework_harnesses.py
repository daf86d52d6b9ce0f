"""The framework harnesses register without their frameworks, and say how to install a missing one.

Run in a fresh interpreter in which every framework import fails (``sys.modules[name] = None``), as on
a machine without the optional extras: the registry must still list the four harnesses, build their
configs and rosters, and a run must fail with a ConfigError naming the extra, never an ImportError.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from failforge.harnesses.autogen_team import SELECTION, SELECTOR, agent_of_handler

PROBE = textwrap.dedent("""
    import json, sys
    BLOCKED = [
        "smolagents", "agents", "langgraph", "langgraph_supervisor", "langchain_openai", "langchain_core",
        "autogen_agentchat", "autogen_core", "autogen_ext",
    ]
    for name in BLOCKED:
        sys.modules[name] = None
    from failforge.errors import ConfigError
    from failforge.plugins import harnesses
    out = {"names": harnesses.names(), "runs": {}, "rosters": {}}
    for name in ("smolagents", "openai-agents", "langgraph", "autogen"):
        harness = harnesses.get(name).for_environment({"bank": ["send_money"]}, budget=4, max_tokens=64)
        out["rosters"][name] = [(p.name, p.role) for p in harness.roster()]
        try:
            harness.run(object(), "m", "task", object())
        except ConfigError as exc:
            out["runs"][name] = str(exc)
    out["loaded"] = sorted(n for n in BLOCKED if sys.modules.get(n) is not None)
    print(json.dumps(out))
""")


def test_the_registry_lists_the_framework_harnesses_without_their_frameworks():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"smolagents", "openai-agents", "langgraph", "autogen"} <= set(out["names"])
    assert out["loaded"] == []
    extras = {
        "smolagents": "smolagents",
        "openai-agents": "openai-agents",
        "langgraph": "langgraph",
        "autogen": "autogen",
    }
    for name, extra in extras.items():
        assert f"pip install 'failforge[{extra}]'" in out["runs"][name], out["runs"]
    assert out["rosters"]["autogen"] == [["manager", "manager"], [SELECTOR, "selector"], ["bank_worker", "worker"]]
    assert out["rosters"]["langgraph"] == [["supervisor", "supervisor"], ["bank_worker", "worker"]]


def test_autogen_handler_types_become_agent_names_without_the_team_uuid():
    team = "0f8fad5b-d9cb-469f-a165-70867728950e"
    assert agent_of_handler(f"bank_worker_{team}").agent == "bank_worker"
    selector = agent_of_handler(f"SelectorGroupChatManager_{team}")
    assert (selector.agent, selector.purpose, selector.via) == (SELECTOR, SELECTION, "resolver")
    assert agent_of_handler("bank_worker_not-a-uuid").agent == "bank_worker_not-a-uuid"
