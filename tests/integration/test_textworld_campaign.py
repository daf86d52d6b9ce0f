"""A campaign on TextWorld keeps gold the game itself confirms failed (not won). The model is a loopback
policy, a pure function of the request: it plays the game's walkthrough (the next walkthrough command not
yet sent, in order), and under a steering note it does what the note says — gives its final answer now
(A.5), or sends the command the note names (A.2 a wrong command, A.6 a command once more). The game,
replay, evaluator and filters are real. A wrong or repeated command is often recovered by the next
ones (the policy goes on with the walkthrough), which is what a text game is like; stopping early never is."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from tests._required import require

from failforge.campaign import CampaignConfig, ResolvedModels, run_campaign
from failforge.environments import environment
from failforge.injection import NOTE_PREFIX
from failforge.llm import ModelEndpoint
from failforge.seeds import oracle_seed
from failforge.testing import LoopbackModelServer
from failforge.trajectory import load_jsonl, write_jsonl

require("textworld")

GAME = "simple-dense/1"
_NAMED = re.compile(r"text = '([^']*)'")


class WalkthroughPolicy:
    def __init__(self, walkthrough: list[str]) -> None:
        self.walkthrough = walkthrough

    def _next(self, messages: list[dict[str, Any]]) -> str | None:
        done = 0
        for message in messages:
            for call in message.get("tool_calls") or []:
                text = json.loads(call["function"]["arguments"] or "{}").get("text")
                if done < len(self.walkthrough) and text == self.walkthrough[done]:
                    done += 1
        return self.walkthrough[done] if done < len(self.walkthrough) else None

    def __call__(self, body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
        messages = body.get("messages") or []
        system = str((messages[0] or {}).get("content") or "") if messages else ""
        if "check the labels" in system or "realistic mistakes" in system:
            raise AssertionError("the rule guide and rule conformance need no model for A.2/A.5/A.6")
        last = messages[-1] if messages else {}
        command = self._next(messages)
        note = str(last.get("content") or "") if last.get("role") in ("system", "developer") else ""
        if note.startswith(NOTE_PREFIX):
            named = _NAMED.search(note)
            if named is None:  # A.5: answer now
                return "I have done what the game asked.", None
            command = named.group(1)
        if command is None:
            return "I have won the game.", None
        n = sum(1 for m in messages if m.get("role") == "tool")
        return None, [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": "command", "arguments": json.dumps({"text": command})},
            }
        ]


def test_campaign_keeps_gold_the_game_confirms_failed(tmp_path):
    seed = oracle_seed("textworld", GAME)
    assert seed.outcome is not None and seed.outcome.success
    write_jsonl(tmp_path / "seeds.jsonl", [seed])
    policy = WalkthroughPolicy(environment("textworld").walkthrough(seed.environment))
    with LoopbackModelServer(policy=policy) as server:
        endpoint = ModelEndpoint(
            base_url=server.base_url, model="loopback", api_key_env=None, timeout=30.0, max_attempts=1
        )
        config = CampaignConfig(
            seeds=[str(tmp_path / "seeds.jsonl")],
            output=str(tmp_path / "out"),
            concurrency=1,
            plan={"modes": ["A.5", "A.2", "A.6"], "steps_per_seed": 4, "modes_per_step": 3},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    assert summary.failed == 0, summary
    gold, bad = load_jsonl(tmp_path / "out" / "gold.jsonl")
    assert not bad and gold
    by_mode = Counter(g.label.mode_code for g in gold)
    print(f"\ngold by mode: {dict(by_mode)}; summary: {summary}")
    assert by_mode["A.5"] >= 1
    for record in gold:
        t = record.label.decisive_step
        assert [s.comparable() for s in record.steps[:t]] == [s.comparable() for s in seed.steps[:t]]
        assert record.steps[t].phase == "injected"
        assert (
            record.outcome is not None
            and record.outcome.success is False
            and record.outcome.evaluator == "textworld.won"
        )
        assert record.outcome.details["won"] is False and record.environment.name == "textworld"
    early = next(g for g in gold if g.label.mode_code == "A.5")
    assert not early.steps[early.label.decisive_step].tool_calls  # it answered instead of playing on


def test_a_wrong_object_is_gold_when_the_game_is_lost_by_it(tmp_path):
    """A.2 on a text game: the rule guide swaps the command's object for another thing of the same kind the
    game has shown ('open antique trunk' -> 'open chest drawer'); the rule check verifies exactly that, and
    the game's own won/score keeps only the runs it lost. On cooking-2/1 that is 'drop knife' -> 'drop tomato'
    (an ingredient the walkthrough policy never picks up again); the other swaps are recovered from."""
    from failforge.environments.textworld_env import game_text, swapped_object

    seed = oracle_seed("textworld", "cooking-2/1")
    write_jsonl(tmp_path / "seeds.jsonl", [seed])
    policy = WalkthroughPolicy(environment("textworld").walkthrough(seed.environment))
    with LoopbackModelServer(policy=policy) as server:
        endpoint = ModelEndpoint(
            base_url=server.base_url, model="loopback", api_key_env=None, timeout=30.0, max_attempts=1
        )
        config = CampaignConfig(
            seeds=[str(tmp_path / "seeds.jsonl")],
            output=str(tmp_path / "out"),
            concurrency=1,
            plan={"modes": ["A.2"], "steps_per_seed": 40, "modes_per_step": 1},
        )
        summary = run_campaign(config, ResolvedModels(agent=endpoint, guide=endpoint))
    assert summary.failed == 0, summary
    gold, bad = load_jsonl(tmp_path / "out" / "gold.jsonl")
    print(f"\nA.2 gold {len(gold)}; summary: {summary}")
    assert not bad and gold
    entities = seed.task.metadata["entities"]
    for record in gold:
        t = record.label.decisive_step
        before = seed.steps[t].tool_calls[0].parsed_arguments()["text"]
        after = record.steps[t].tool_calls[0].parsed_arguments()["text"]
        ok, why = swapped_object(before, after, game_text(seed.task.instruction, seed.steps[:t]), entities)
        assert ok, why
        assert (
            record.outcome is not None
            and record.outcome.details["won"] is False
            and record.outcome.evaluator == "textworld.won"
        )
