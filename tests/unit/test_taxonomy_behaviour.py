"""The taxonomy as it behaves on real steps, not as a table restated.

Every mode's applicability rule is run on the step contexts the planner derives from the real bundled
seeds (single-agent and team AgentDojo runs, plus a MiniWoB step given the screenshot a vision harness
sends): each mode must be admitted somewhere realistic and, when it declares a requirement, refused
where that requirement is missing, with a reason naming it. Records written by earlier runs must still
resolve to the mode and family they were labelled with, and what users read (the CLI table, the
README) must list the modes the code has.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from failforge.injection import plan_attempts, step_context
from failforge.taxonomy import FAMILIES, MODES, Family, StepContext, applicable_modes, get_mode, taxonomy_table
from failforge.trajectory import Trajectory, load_jsonl

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "src" / "failforge" / "data" / "seeds"
LABELS = [
    *sorted((ROOT / "tests" / "fixtures" / "labels").glob("*.jsonl")),
    ROOT / "tests" / "fixtures" / "attribution" / "failforge_gold.jsonl",
]

#: requirement field -> a word the refusal reason must contain, and how to take the requirement away
REQUIREMENTS: dict[str, tuple[str, dict[str, object]]] = {
    "needs_image": ("image", {"has_image": False}),
    "needs_tool_call": ("tool call", {"has_tool_call": False}),
    "needs_tools_available": ("tools", {"tools_available": False}),
    "needs_not_final": ("final", {"is_final": True}),
    "needs_prior_steps": ("prior", {"prior_agent_steps": 0}),
    "needs_multi_agent": ("agents", {"n_agents": 1}),
    "needs_delegation": ("delegat", {"delegates": False}),
    "needs_handoff": ("", {"addresses_agent": False}),
    "needs_peer_input": ("", {"acts_on_peer": False}),
}


def _with_screenshot(record: Trajectory) -> Trajectory:
    """A MiniWoB gold record whose agent requests carry the page screenshot, as a vision harness sends it."""
    steps = []
    for step in record.steps:
        if step.kind == "agent" and step.model_call is not None:
            request = json.loads(json.dumps(step.model_call.request))
            request["messages"].append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Screenshot of the page:"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                    ],
                }
            )
            step = step.model_copy(update={"model_call": step.model_call.model_copy(update={"request": request})})
        steps.append(step)
    return record.model_copy(update={"steps": steps})


@pytest.fixture(scope="module")
def contexts() -> list[tuple[str, StepContext]]:
    seeds: list[Trajectory] = []
    for name in ("agentdojo_demo.jsonl", "agentdojo_multiagent_demo.jsonl"):
        good, errors = load_jsonl(SEEDS / name)
        assert good and not errors
        seeds += good
    miniwob, _ = load_jsonl(ROOT / "tests" / "fixtures" / "labels" / "demo_gold_miniwob.jsonl")
    seeds.append(_with_screenshot(miniwob[0]))
    return [(f"{s.id}@{step.index}", step_context(s, step)) for s in seeds for step in s.steps if step.kind == "agent"]


@pytest.mark.parametrize("code", [m.code for m in MODES])
def test_every_mode_is_admitted_at_some_real_step(contexts, code):
    mode = get_mode(code)
    admitted = [where for where, ctx in contexts if mode.applicable(ctx) == (True, "ok")]
    assert admitted, f"{code} applies at none of the {len(contexts)} real agent steps"


@pytest.mark.parametrize("code", [m.code for m in MODES])
def test_every_requirement_refuses_a_real_step_that_lacks_it(contexts, code):
    """Take each declared requirement away from a real step where the mode applies: the mode is refused
    there, and the reason says why. A mode with no requirement applies at every real step."""
    mode = get_mode(code)
    declared = mode.applies.model_dump(exclude_defaults=True)
    declared.pop(
        "or_withheld", None
    )  # a relaxation of needs_tool_call, not a requirement (test_clarification_turns.py)
    admitted = [ctx for _, ctx in contexts if mode.applicable(ctx)[0]]
    if not declared:
        assert len(admitted) == len(contexts), f"{code} declares no requirement but is refused somewhere"
        return
    for requirement in declared:
        word, removal = REQUIREMENTS[requirement]
        lacking = admitted[0].model_copy(update=removal)
        ok, reason = mode.applicable(lacking)
        assert not ok and code in reason and word in reason, (requirement, reason)
        assert mode not in applicable_modes(lacking)


def test_the_planner_never_plans_a_mode_where_it_does_not_apply():
    seeds, _ = load_jsonl(SEEDS / "agentdojo_multiagent_demo.jsonl")
    for seed in seeds:
        specs = plan_attempts(
            seed, modes=[m.code for m in MODES], steps_per_seed=99, modes_per_step=99, samples=1, rng_seed=0
        )
        assert specs
        for spec in specs:
            assert get_mode(spec.mode).applicable(step_context(seed, seed.steps[spec.step]))[0], spec


@pytest.mark.parametrize("path", LABELS, ids=lambda p: p.name)
def test_labels_written_by_earlier_runs_still_resolve_to_their_mode_and_family(path):
    for line in path.read_text().splitlines():
        label = json.loads(line)["label"]
        mode = get_mode(label["mode_code"])
        assert mode.code == label["mode_code"] and Family(label["mode_family"]) is mode.family
        assert mode.code in FAMILIES[mode.family]


def test_families_partition_the_modes():
    assert sorted(c for codes in FAMILIES.values() for c in codes) == sorted(m.code for m in MODES)
    for m in MODES:
        assert m.code in FAMILIES[m.family], m.code
    assert set(FAMILIES) == set(Family)


def test_what_users_read_lists_the_modes_the_code_has():
    console = Console(record=True, width=240, color_system=None)
    console.print(taxonomy_table())
    rows = [line for line in console.export_text().splitlines() if re.match(r"\W*(P|R|PL|A|V|C)\.\d", line)]
    assert [re.search(r"(P|R|PL|A|V|C)\.\d", r).group(0) for r in rows] == [m.code for m in MODES]
    readme = (ROOT / "README.md").read_text()
    counts = {int(n) for n in re.findall(r"(\d+) error modes", readme)}
    assert counts == {len(MODES)}, counts
