"""Field-wise validation of a judge's reply, shared by the multi-field methods (RCTA-like, the auditor).

Both methods read a responsible agent, a step and a mode from separate ``Key: value`` fields and keep each
field only where it is valid (LongRCA's A4): a role must be a recorded agent, a step a recorded candidate
step, a mode one of the 18 codes (or, without a menu, a description the lexical map places). One copy of
the rules keeps the two methods' denominators comparable.
"""

from __future__ import annotations

import re
from typing import Any

from failforge.attribution._freetext import map_to_mode
from failforge.attribution._parse import code_in
from failforge.attribution._prompts import PromptConfig, mode_menu
from failforge.attribution._record import LabelledFailure


def recorded_agents(record: LabelledFailure) -> dict[str, str]:
    """The record's agents and the authors of its candidate agent steps, by normalised name."""
    from failforge.attribution._protocols import normalise_agent

    names = [
        *record.agents,
        *(record.steps[i].agent for i in record.candidate_steps() if record.steps[i].kind == "agent"),
    ]
    return {normalise_agent(n): n for n in names if n}


def check_agent(
    record: LabelledFailure, key: str, role: str | None, valid: dict[str, Any], problems: dict[str, str]
) -> None:
    """``valid["agent"]`` when ``role`` names a recorded agent, else ``problems["agent"]``."""
    from failforge.attribution._protocols import normalise_agent

    agents = recorded_agents(record)
    if role and normalise_agent(role) in agents:
        valid["agent"] = agents[normalise_agent(role)]
    else:
        problems["agent"] = f"{key} {role!r} is not a recorded agent" if role else f"no {key}"


def check_step(record: LabelledFailure, step_text: str | None, valid: dict[str, Any], problems: dict[str, str]) -> None:
    """``valid["step"]`` (and its text) when the first number in the field is a candidate step."""
    step_text = step_text or ""
    digits = re.search(r"-?\d+", step_text)
    if digits and int(digits.group(0)) in record.candidate_steps():
        valid["step"], valid["step_text"] = int(digits.group(0)), digits.group(0)
    else:
        problems["step"] = f"Step {step_text!r} is not a recorded step" if step_text else "no Step"


def check_mode(config: PromptConfig, mode_text: str | None, valid: dict[str, Any], problems: dict[str, str]) -> None:
    """A code when the prompt showed the menu; without it, the description kept and mapped afterwards."""
    if config.menu:
        code = code_in(mode_text)
        if code:
            valid["mode"] = code
        else:
            problems["mode"] = f"Mode {mode_text!r} is not one of the 18 codes" if mode_text else "no Mode"
        return
    if mode_text:
        valid["description"] = mode_text
    mapped = map_to_mode(mode_text) if mode_text else None
    if mapped:
        valid["mode"] = mapped
    else:
        problems["mode"] = "the Mode description maps to no mode" if mode_text else "no Mode"


def mode_parts(config: PromptConfig) -> tuple[str, str]:
    """The prompt's mode question and its answer line: the menu's codes, or the judge's own words."""
    if config.menu:
        return (
            "and the error mode, one code from this list:\n" + mode_menu(config) + "\n",
            "Mode: (one code from the list)",
        )
    return "and a short description of the kind of error, in your own words.", "Mode: (your description)"
