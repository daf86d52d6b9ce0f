"""External-agent seeds through the whole command line, like any other seeds.

``failforge seeds --harness external --agent-cmd ...`` records AgentDojo oracle seeds through an agent
process (``examples/external/plain_agent.py``); ``replay``, ``audit``, ``generate`` (a model guide and
the agent model behind a loopback server, every filter, AgentDojo's evaluator), ``report`` and
``export`` then work on them unchanged; a drift's report names the seed, the step, the agent and the
nearest recorded requests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _required import require

require("agentdojo")

from failforge.environments import environment  # noqa: E402
from failforge.injection import NOTE_PREFIX  # noqa: E402
from failforge.seeds import env_spec  # noqa: E402
from failforge.testing import LoopbackModelServer  # noqa: E402
from failforge.trajectory import load_jsonl  # noqa: E402

pytestmark = pytest.mark.timeout(900)
ROOT = Path(__file__).resolve().parents[2]
TASKS = ("banking/user_task_3", "slack/user_task_2")
AGENT = f"{sys.executable} {ROOT / 'examples' / 'external' / 'plain_agent.py'}"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="250")
    return subprocess.run(
        [sys.executable, "-m", "failforge", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


class OneAgent:
    """The ground truth as one agent, told apart by task; under a note its first number is one too large."""

    def __init__(self) -> None:
        self.truth: dict[str, tuple[list[tuple[str, dict[str, Any]]], str]] = {}
        for task in TASKS:
            spec = env_spec("agentdojo", task)
            with environment("agentdojo").open(spec) as episode:
                self.truth[episode.instruction()] = environment("agentdojo").ground_truth(spec)

    def __call__(self, agent: str | None, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        messages = body["messages"]
        if "realistic mistakes" in str(messages[0].get("content")):
            return "Use a figure one larger than the one you were given.", None
        steered = messages[-1].get("role") == "system" and str(messages[-1].get("content")).startswith(NOTE_PREFIX)
        if steered:
            messages = messages[:-1]
        task = next(str(m["content"]) for m in messages if m["role"] == "user")
        calls, final = self.truth[task]
        k = sum(1 for m in messages if m["role"] == "assistant")
        if k >= len(calls):
            return final, None
        name, args = calls[k]
        if steered:
            first = next(
                (key for key, v in args.items() if isinstance(v, (int, float)) and not isinstance(v, bool)), None
            )
            args = {**args, first: args[first] + 1} if first else args
        return None, [
            {
                "id": f"call_{k}_{len(messages)}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
        ]


def test_external_seeds_go_through_replay_audit_generate_report_and_export(tmp_path):
    tasks = [arg for task in TASKS for arg in ("--task", task)]
    made = _cli(
        "seeds",
        "agentdojo",
        *tasks,
        "--harness",
        "external",
        "--agent-cmd",
        AGENT,
        "--framework",
        "mcp",
        "-o",
        "seeds.jsonl",
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    seeds, bad = load_jsonl(tmp_path / "seeds.jsonl")
    assert not bad and len(seeds) == 2 and all(s.harness.name == "external" and s.outcome.success for s in seeds)
    replayed = _cli("replay", "seeds.jsonl", "--report", "replay.json", cwd=tmp_path)
    assert replayed.returncode == 0 and "2/2 seeds replayed identically" in replayed.stdout.replace("\n", " "), (
        replayed.stdout
    )
    audited = _cli("audit", "seeds.jsonl", "--json", "audit.json", cwd=tmp_path)
    assert audited.returncode == 0, audited.stdout + audited.stderr
    assert json.loads((tmp_path / "audit.json").read_text())["environments"][0]["identical"] == 2

    (tmp_path / "rules.toml").write_text(
        'seeds = ["seeds.jsonl"]\noutput = "out-rules"\nguide = "rules"\n[plan]\nmodes = ["R.3"]\nsteps_per_seed ='
        " 3\nmodes_per_step = 1\n"
    )
    with LoopbackModelServer(agent_policy=OneAgent()) as server:
        generated = _cli(
            "generate",
            "--seeds",
            "seeds.jsonl",
            "-o",
            "out",
            "--base-url",
            server.base_url,
            "--model",
            "loopback",
            "--api-key-env",
            "NO_KEY",
            "--mode",
            "R.3",
            "--steps-per-seed",
            "3",
            "--modes-per-step",
            "1",
            cwd=tmp_path,
        )
        by_rules = _cli(
            "generate",
            "rules.toml",
            "--base-url",
            server.base_url,
            "--model",
            "loopback",
            "--api-key-env",
            "NO_KEY",
            cwd=tmp_path,
        )
    assert generated.returncode == 0, generated.stdout + generated.stderr
    assert by_rules.returncode == 0, by_rules.stdout + by_rules.stderr
    ruled, _ = load_jsonl(tmp_path / "out-rules" / "gold.jsonl")
    assert ruled and all(r.label.guide_model.startswith("failforge-rules") for r in ruled), by_rules.stdout
    gold, bad = load_jsonl(tmp_path / "out" / "gold.jsonl")
    assert not bad and gold, generated.stdout
    by_id = {s.id: s for s in seeds}
    for record in gold:
        seed, t = by_id[record.label.seed_id], record.label.decisive_step
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        assert (
            record.steps[t].phase == "injected"
            and record.outcome.success is False
            and record.harness.name == "external"
        )
    report = _cli("report", "out", "-o", "out/report.html", cwd=tmp_path)
    assert report.returncode == 0 and (tmp_path / "out" / "report.html").stat().st_size > 10_000, (
        report.stdout + report.stderr
    )
    for fmt in ("whowhen", "whowhen-pro"):
        exported = _cli("export", "out/gold.jsonl", "--format", fmt, "-o", f"export-{fmt}", cwd=tmp_path)
        assert exported.returncode == 0, exported.stdout + exported.stderr
        assert any((tmp_path / f"export-{fmt}").rglob("*.json*")), f"{fmt}: nothing written"


def test_a_drifting_external_seed_reports_the_seed_step_agent_and_nearest_requests(tmp_path):
    made = _cli(
        "seeds",
        "agentdojo",
        "--task",
        TASKS[0],
        "--harness",
        "external",
        "--agent-cmd",
        AGENT,
        "--framework",
        "mcp",
        "-o",
        "seeds.jsonl",
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    (seed,), _ = load_jsonl(tmp_path / "seeds.jsonl")
    changed = seed.model_copy(
        update={
            "harness": seed.harness.model_copy(
                update={"config": {**seed.harness.config, "env": {"AGENT_SYSTEM": "Be terse."}}}
            )
        }
    )
    (tmp_path / "changed.jsonl").write_text(changed.model_dump_json() + "\n")
    result = _cli("replay", "changed.jsonl", "--report", "report.json", cwd=tmp_path)
    assert result.returncode == 1
    (row,) = json.loads((tmp_path / "report.json").read_text())
    drift = row["drift"]
    assert (drift["type"], drift["trajectory_id"], drift["step"], drift["agent"]) == (
        "PromptDrift",
        seed.id,
        1,
        "agent",
    )
    assert drift["nearest"][0]["step"] == 1 and "Be terse." in drift["diff"]
