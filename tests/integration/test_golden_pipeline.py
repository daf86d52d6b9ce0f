"""The golden run: fixed campaigns for every gold kind, reduced to sorted verdict tuples and compared with the
tuples the attempt pipeline produced before its redesign (``tests/fixtures/golden/<regime>.json``).

A behaviour-preserving change to the pipeline (where verdicts are computed, how jobs are dispatched, which
package a judge lives in) must leave every tuple as it was: the same attempts, each with the same outcome, the
same filters with the same verdicts and reasons, the same label. Each regime is a small real campaign: the real
benchmark (AgentDojo, tau2-bench, BFCL, TextWorld, MiniWoB++ in headless Chromium), the real ledger, boundaries,
replay, evaluators, filters and decisiveness arms; the only fakes are the deterministic loopback models, pure
functions of the request.

To re-record after an intended change of behaviour (say why in the commit):
``FAILFORGE_GOLDEN_WRITE=1 PYTHONHASHSEED=0 python -m pytest tests/integration/test_golden_pipeline.py``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from _required import require
from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
from failforge.jsonl import read_jsonl
from failforge.llm import ModelEndpoint
from failforge.testing import LoopbackModelServer
from failforge.trajectory import Trajectory, write_jsonl

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "golden"
WRITE = os.environ.get("FAILFORGE_GOLDEN_WRITE") == "1"
LABEL_FIELDS = (
    "decisive_step",
    "decisive_agent",
    "mode_code",
    "mode_family",
    "changed",
    "behaviour",
    "primary_component",
    "target_component",
    "attack_chain",
    "execution_chain",
    "expected_decision",
    "found_decision",
    "error_source",
    "impact",
    "guide_model",
)


def _tuples(out: Path) -> list[dict[str, Any]]:
    """One tuple per attempt in a campaign folder: (attempt id, outcome, filter names with verdicts and
    reasons, label)."""
    rows: list[dict[str, Any]] = []
    for name in ("gold.jsonl", "rejected.jsonl", "failed.jsonl"):
        path = out / name
        if not path.exists():
            continue
        for item in read_jsonl(path):
            assert isinstance(item, tuple), f"{name}: {item}"
            record = item[1]
            if name == "gold.jsonl":
                label = record["label"]
                rows.append(
                    {
                        "attempt": record["provenance"]["attempt_id"],
                        "outcome": "gold",
                        "verdicts": [[v["name"], v["passed"], v["reason"]] for v in label["filter_verdicts"]],
                        "label": {k: label.get(k) for k in LABEL_FIELDS},
                        "adjudication": (record.get("adjudication") or {}).get("outcome"),
                    }
                )
            else:
                trajectory = record.get("trajectory") or {}
                rows.append(
                    {
                        "attempt": record["attempt_id"],
                        "outcome": record["status"],
                        "stage": record["stage"],
                        "error_kind": record.get("error_kind"),
                        "reasons": record["reasons"],
                        "verdicts": [[v["name"], v["passed"], v["reason"]] for v in record.get("verdicts") or []],
                        "adjudication": (
                            (trajectory.get("adjudication") or {}).get("outcome")
                            or (record.get("provenance", {}).get("adjudication") or {}).get("outcome")
                        ),
                    }
                )
    return sorted(rows, key=lambda r: r["attempt"])


def _check(regime: str, out: Path) -> None:
    rows = _tuples(out)
    assert rows, f"{regime}: the campaign settled no attempt"
    path = GOLDEN / f"{regime}.json"
    if WRITE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    expected = json.loads(path.read_text(encoding="utf-8"))
    assert [r["attempt"] for r in rows] == [r["attempt"] for r in expected], (
        f"{regime}: other attempts than the golden run's"
    )
    for got, want in zip(rows, expected, strict=True):
        assert got == want, f"{regime}: {got['attempt']} differs from the golden run"


def _endpoint(server: LoopbackModelServer, timeout: float = 60.0) -> ModelEndpoint:
    return ModelEndpoint(base_url=server.base_url, model="loopback", api_key_env=None, timeout=timeout, max_attempts=1)


def _campaign(tmp_path: Path, seeds: list[Trajectory], server: LoopbackModelServer, **config: Any) -> Path:
    write_jsonl(tmp_path / "seeds.jsonl", seeds)
    cfg = CampaignConfig(seeds=[str(tmp_path / "seeds.jsonl")], output=str(tmp_path / "out"), concurrency=1, **config)
    endpoint = _endpoint(server)
    run_campaign(cfg, ResolvedModels(agent=endpoint, guide=endpoint))
    return tmp_path / "out"


# -- single-agent AgentDojo: rule notes (A.2, A.5, A.6, R.3) and a model guide with a judge (R.2) ----------------

_CALL_WITH = re.compile(
    r"Call (?:the tool )?(\w+) (?:now |once more )?with (.+?)(?:, keeping its other arguments as you would)?\.$"
)
_STATE = re.compile(r"state the (?:figure|date) as (\S+?)\.?$")
_SLIP_NOTE = "Use a figure one larger than the one you were given."


class SingleAgentPolicy:
    """The seed's own replies by position; under a note, the note's mistake; as guide and judge, by rule.

    Stands in for a capable model that obeys the steering note: a rule note's named call or answer is made as
    written; the model guide's note for R.2 asks for a figure one larger, which the agent applies to its call.
    """

    def __init__(self, seeds: list[Trajectory]) -> None:
        self.replies = {
            s.task.instruction: [
                st.model_call.response["choices"][0]["message"] for st in s.agent_steps() if st.model_call
            ]
            for s in seeds
        }

    def __call__(self, body: dict[str, Any]) -> tuple[Any, Any]:
        from tests.integration.framework_adapters import concrete, judge

        messages = body["messages"]
        system = str(messages[0].get("content") or "")
        if "realistic mistakes" in system:
            prompt = str(messages[1].get("content") or "")
            tool = re.search(r"calls (\w+)\(", prompt)
            return concrete(_SLIP_NOTE + (f" Do it when you call {tool.group(1)}." if tool else ""), prompt), None
        if system.startswith("You check the labels"):
            return judge(str(messages[1].get("content") or "")), None
        note = str(messages[-1].get("content") or "") if messages[-1].get("role") == "system" else ""
        if note:
            messages = messages[:-1]
        task = next(str(m.get("content")) for m in messages if m.get("role") == "user")
        replies = next((r for instruction, r in self.replies.items() if instruction in task), [])
        n = sum(1 for m in messages if m.get("role") == "assistant")
        message = replies[min(n, len(replies) - 1)] if replies else {"content": "Done."}
        content, calls = message.get("content"), message.get("tool_calls")
        if not note:
            return content, calls
        return self._mistake(note, content, calls, n)

    @staticmethod
    def _mistake(note: str, content: Any, calls: Any, n: int) -> tuple[Any, Any]:
        text = note.split("\n")[-1].strip()
        from tests.integration.framework_adapters import slipped

        if _SLIP_NOTE in note:
            return slipped((content, calls))
        if "final answer now" in text:
            return "Everything you asked for is done.", None
        if "as plain text" in text:
            return text.split("write ", 1)[1].split(" as plain text")[0], None
        stated = _STATE.search(text)
        if stated:
            return f"The figure is {stated.group(1)}.", None
        call = _CALL_WITH.search(text)
        if call:
            name, spec = call.group(1), call.group(2)
            args = (
                json.loads(calls[0]["function"]["arguments"]) if calls and calls[0]["function"]["name"] == name else {}
            )
            for key, value in re.findall(r"(\w+) = ('[^']*'|\"[^\"]*\"|[^,]+)", spec):
                value = value.strip()
                args[key] = (
                    value[1:-1]
                    if value[:1] in "'\""
                    else json.loads(value)
                    if re.fullmatch(r"-?\d+(\.\d+)?", value)
                    else value
                )
            return None, [
                {
                    "id": f"call_golden_{n}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            ]
        return content, calls


@pytest.fixture(scope="module")
def agentdojo_seeds(bundled_seeds: list[Trajectory]) -> list[Trajectory]:
    require("agentdojo")
    return [
        s
        for s in bundled_seeds
        if s.id in ("agentdojo-banking-user_task_3-oracle", "agentdojo-slack-user_task_2-oracle")
    ]


def test_golden_agentdojo_single_agent_action_modes(tmp_path: Path, agentdojo_seeds: list[Trajectory]) -> None:
    with LoopbackModelServer(policy=SingleAgentPolicy(agentdojo_seeds)) as server:
        out = _campaign(
            tmp_path,
            agentdojo_seeds,
            server,
            plan={"modes": ["A.2", "A.5", "A.6", "R.3", "R.2"], "steps_per_seed": 2, "modes_per_step": 5},
            filters={"conformance": {"judge": True}},
        )
    _check("agentdojo_single", out)


# -- multi-agent AgentDojo: coordination modes through a model guide, kept unverified ---------------------------


def test_golden_agentdojo_team_coordination_modes(tmp_path: Path) -> None:
    require("agentdojo")
    from tests.integration.test_multiagent_campaign import TeamPolicy

    from failforge.seeds import oracle_seed

    seeds = [
        oracle_seed("agentdojo", "banking/user_task_1", harness=h)
        for h in ("orchestrator-workers", "plan-execute-verify")
    ]
    with LoopbackModelServer(agent_policy=TeamPolicy(seeds)) as server:
        out = _campaign(
            tmp_path,
            seeds,
            server,
            plan={"modes": ["C.1", "C.2", "C.3"], "steps_per_seed": 3, "modes_per_step": 3},
            filters={"conformance": {"keep_unverified": True}},
        )
    _check("agentdojo_team", out)


# -- tau2: the simulated customer's step (R.1) and the agent's (A.5) ---------------------------------------------


def test_golden_tau2_user_and_agent_steps(tmp_path: Path) -> None:
    require("tau2")
    from failforge.seeds import oracle_seed
    from failforge.testing.conversation_policy import ConversationPolicy

    seed = oracle_seed("tau2", "0", {"domain": "retail"})
    with LoopbackModelServer(agent_policy=ConversationPolicy("retail", "0")) as server:
        out = _campaign(
            tmp_path, [seed], server, plan={"modes": ["R.1", "A.5"], "steps_per_seed": 4, "modes_per_step": 2}
        )
    _check("tau2", out)


# -- BFCL: a missed clarification (R.1) and a held-out function called early (A.3) -------------------------------


def test_golden_bfcl_clarification(tmp_path: Path) -> None:
    require("bfcl")
    from failforge.seeds import oracle_seed
    from failforge.testing.bfcl_policy import BfclPolicies

    tasks = ("multi_turn_miss_param_2", "multi_turn_miss_func_5", "multi_turn_miss_func_0")
    seeds = [oracle_seed("bfcl", task) for task in tasks]
    with LoopbackModelServer(policy=BfclPolicies(list(tasks))) as server:
        out = _campaign(
            tmp_path,
            seeds,
            server,
            guide_kind="rules",
            plan={"modes": ["R.1", "A.3"], "steps_per_seed": 1, "modes_per_step": 2},
        )
    _check("bfcl", out)


# -- TextWorld: structural modes on a text game -------------------------------------------------------------------


def test_golden_textworld(tmp_path: Path) -> None:
    require("textworld")
    from tests.integration.test_textworld_campaign import GAME, WalkthroughPolicy

    from failforge.environments import environment
    from failforge.seeds import oracle_seed

    seed = oracle_seed("textworld", GAME)
    with LoopbackModelServer(
        policy=WalkthroughPolicy(environment("textworld").walkthrough(seed.environment))
    ) as server:
        out = _campaign(
            tmp_path, [seed], server, plan={"modes": ["A.5", "A.2", "A.6"], "steps_per_seed": 3, "modes_per_step": 3}
        )
    _check("textworld", out)


# -- MiniWoB++ on screenshots: P.2 -------------------------------------------------------------------------------


def test_golden_miniwob_vision_p2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    require("chromium")
    require("tesseract")
    from failforge.environments.miniwob import env_spec
    from failforge.environments.miniwob._vision_policy import vision_script
    from failforge.harnesses.miniwob_vision import VisionAgent
    from failforge.llm import OracleResponder
    from failforge.seeds import record
    from failforge.trajectory import ComponentSpec

    monkeypatch.setenv("FAILFORGE_IMAGE_DIR", str(tmp_path / "images"))
    spec = env_spec(
        "click-button", 1, cache_dir=str(tmp_path / "cache"), cache_mode="record", action_space="coordinate"
    )
    seed = record(
        env_spec=spec,
        harness=VisionAgent(),
        model=ComponentSpec(name="vision-policy", config={"role": "agent"}),
        upstream=OracleResponder(vision_script, name="miniwob.vision_policy"),
        oracle=True,
        trajectory_id="vision-click-button",
    )
    with LoopbackModelServer(agent_policy=lambda agent, body: vision_script(0, body)) as server:
        out = _campaign(
            tmp_path,
            [seed],
            server,
            guide_kind="rules",
            plan={"steps_per_seed": 1, "modes_per_step": 1, "modes": ["P.2"]},
        )
    _check("miniwob_p2", out)


# -- AgentDojo environment side: injected observations, compliance flips, injected refusals -------------------


def test_golden_agentdojo_injection_compliance_refusal(tmp_path: Path, agentdojo_seeds: list[Trajectory]) -> None:
    from failforge.testing.injected_policy import respond

    with LoopbackModelServer(policy=respond) as server:
        out = _campaign(
            tmp_path,
            agentdojo_seeds,
            server,
            plan={"injections": {"only": True, "tasks_per_point": 2, "refusals": True, "compliance": True}},
        )
    _check("agentdojo_injection", out)
