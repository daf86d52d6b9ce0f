"""The schemas of the judge methods' answers (what :meth:`JudgeSession.ask` asks the endpoint to constrain).

Each schema is the answer format its prompt already asks for, field for field (the alias is the prompt's
``Key:``), so a structured reply renders back into the lines the free-text parser reads. What a schema
admits is what the question already allows: a step is one of the step numbers shown, an agent one of the
agents shown, a mode one of the 18 codes when the menu is shown (free text otherwise), a yes/no a yes or a
no. Strings carry a length bound so that a grammar-constrained weak model ends its JSON within the call's
token budget (the OpenAI form drops the bounds: :func:`failforge.llm._structured.response_format`).
"""

from __future__ import annotations

from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from failforge.attribution._fields import recorded_agents
from failforge.attribution._prompts import PromptConfig
from failforge.attribution._record import LabelledFailure
from failforge.llm import render_fields
from failforge.taxonomy import MODES

REASON_CHARS = 200
DESCRIPTION_CHARS = 160


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def render(self) -> str:
        """The answer as the ``Key: value`` lines its free-text parser reads."""
        return render_fields(self)


def _part(item: Any, name: str) -> str:
    """A field of a (possibly unchecked: :func:`failforge.llm.reply_fields`) nested answer, on one line; empty
    when the reply left it out, so the method's own check names it."""
    return " ".join(str(getattr(item, name, "") if isinstance(item, BaseModel) else "").split())


class _SegmentBase(_Answer):
    def render(self) -> str:
        items = getattr(self, "candidates", None) or []
        listed = (
            "; ".join(
                f"{_part(c, 'step')} {_part(c, 'tag')}{' recovered' if getattr(c, 'recovered', False) else ''}"
                for c in items
            )
            or "none"
        )
        return f"Summary: {' '.join(str(getattr(self, 'summary', '')).split())}\nCandidates: {listed}"


class _AuditBase(_Answer):
    def render(self) -> str:
        lines = [
            f'Decision: {_part(d, "step")} | {_part(d, "state")} | "{_part(d, "quote")}" | {_part(d, "confidence")}'
            for d in getattr(self, "decisions", None) or []
        ]
        rest = render_fields(self).splitlines()
        return "\n".join([*lines, *(line for line in rest if not line.startswith("Decision:"))])


def _one_of(values: list[Any]) -> Any:
    """``Literal[values]`` (a schema ``enum``); ``str`` bounded when there is nothing to choose from."""
    unique = list(dict.fromkeys(values))
    if not unique:
        return str
    return Literal[tuple(unique)]  # type: ignore[valid-type]


def _text(chars: int) -> Any:
    return (str, Field(max_length=chars))


def _mode_field(config: PromptConfig, key: str) -> dict[str, Any]:
    if config.menu:
        return {"mode": (_one_of([m.code for m in MODES]), Field(alias=key))}
    return {
        "description": (
            str,
            Field(alias="Error Description" if key == "Error Mode" else key, max_length=DESCRIPTION_CHARS),
        )
    }


def _agents(record: LabelledFailure) -> list[str]:
    return [record.steps[i].agent for i in record.candidate_steps() if record.steps[i].agent]


def _responsible(record: LabelledFailure) -> list[str]:
    """The agents a field-checked answer may name (RCTA's Role, the auditor's Agent): exactly what
    :func:`failforge.attribution._fields.check_agent` accepts, so the grammar admits no name the check then refuses
    (a tool-output step's author, Who&When's ``Computer_terminal``, was admitted and refused)."""
    return list(dict.fromkeys(recorded_agents(record).values()))


def all_at_once_answer(record: LabelledFailure, config: PromptConfig) -> type[BaseModel]:
    """Agent Name / Step Number / Error Mode (or Error Description) / Reason for Mistake."""
    return create_model(  # type: ignore[call-overload,no-any-return]
        "AllAtOnceAnswer",
        __base__=_Answer,
        agent=(_one_of(_agents(record)), Field(alias="Agent Name")),
        step=(_one_of(record.candidate_steps()), Field(alias="Step Number")),
        **_mode_field(config, "Error Mode"),
        reason=(str, Field(alias="Reason for Mistake", max_length=REASON_CHARS)),
    )


class StepCheckAnswer(_Answer):
    """A step check: "1. Yes/No. 2. Reason"."""

    verdict: Literal["Yes", "No"] = Field(alias="Answer")
    reason: str = Field(alias="Reason", max_length=120)


class HalfAnswer(_Answer):
    """A binary-search split: which half holds the decisive error."""

    half: Literal["upper half", "lower half"] = Field(alias="Half")


@cache
def _mode_answer(menu: bool) -> type[BaseModel]:
    mode = (
        {"mode": (_one_of([m.code for m in MODES]), Field(alias="Error Mode"))}
        if menu
        else {"description": (str, Field(alias="Error Description", max_length=DESCRIPTION_CHARS))}
    )
    return create_model(
        "ModeAnswer",
        __base__=_Answer,
        **mode,  # type: ignore[call-overload,no-any-return]
        reason=(str, Field(alias="Reason", max_length=REASON_CHARS)),
    )


def mode_answer(config: PromptConfig) -> type[BaseModel]:
    """The mode question: Error Mode (a code) or Error Description, and a one-sentence Reason."""
    return _mode_answer(config.menu)


# --- RCTA-like -----------------------------------------------------------------------------------------------


def rcta_segment_answer(steps: list[int], *, only_segment: bool = False) -> type[BaseModel]:
    """Summary and the proposed candidate steps (each a step of the segment, tagged). The prompt allows
    "none" for a segment with nothing relevant; the ``only_segment`` of a failed run holds the failure, so
    there at least one step is proposed."""
    candidate = create_model(
        "Candidate",
        __base__=_Answer,
        step=(_one_of(steps), Field(alias="Step")),  # type: ignore[call-overload]
        tag=(Literal["root", "manifestation", "terminal", "other"], Field(alias="Tag")),
        recovered=(bool, Field(alias="Recovered")),
    )
    return create_model(
        "SegmentAnswer",
        __base__=_SegmentBase,  # type: ignore[call-overload,no-any-return]
        summary=(str, Field(alias="Summary", max_length=300)),
        candidates=(
            list[candidate],  # type: ignore[valid-type]
            Field(alias="Candidates", min_length=1 if only_segment else 0, max_length=8),  # type: ignore[valid-type]
        ),
    )


class OutlineAnswer(_Answer):
    outline: str = Field(alias="Outline", max_length=600)


def rcta_final_answer(record: LabelledFailure, config: PromptConfig, handoffs: list[int]) -> type[BaseModel]:
    """Role / Step / Handoff / Mode / Reason of RCTA's final (and retry) call."""
    mode = (
        {"mode": (_one_of([m.code for m in MODES]), Field(alias="Mode"))}
        if config.menu
        else {"mode": (str, Field(alias="Mode", max_length=DESCRIPTION_CHARS))}
    )
    return create_model(  # type: ignore[call-overload,no-any-return]
        "RctaAnswer",
        __base__=_Answer,
        role=(_one_of(_responsible(record)), Field(alias="Role")),
        step=(_one_of(record.candidate_steps()), Field(alias="Step")),
        handoff=(_one_of([*map(str, handoffs), "none"]), Field(alias="Handoff")),
        **mode,
        reason=(str, Field(alias="Reason", max_length=REASON_CHARS)),
    )


# --- the auditor -------------------------------------------------------------------------------------------


def auditor_answer(
    record: LabelledFailure,
    config: PromptConfig,
    decision_steps: list[int],
    states: tuple[str, ...],
    sources: tuple[str, ...],
    impacts: tuple[str, ...],
) -> type[BaseModel]:
    """The auditor's whole output: the decision map (one item per audited step), O/C/T, source, impact,
    agent, step, mode, reason."""
    decision = create_model(  # type: ignore[call-overload]
        "Decision",
        __base__=_Answer,
        step=(_one_of(decision_steps), Field(alias="Step")),
        state=(_one_of(list(states)), Field(alias="State")),
        quote=(str, Field(alias="Quote", max_length=60)),
        confidence=(float, Field(alias="Confidence", ge=0, le=1)),
    )
    score = _one_of(list(range(6)))
    mode = (
        {"mode": (_one_of([m.code for m in MODES]), Field(alias="Mode"))}
        if config.menu
        else {"mode": (str, Field(alias="Mode", max_length=DESCRIPTION_CHARS))}
    )
    return create_model(  # type: ignore[call-overload,no-any-return]
        "AuditAnswer",
        __base__=_AuditBase,
        decisions=(list[decision], Field(alias="Decision", max_length=max(1, len(decision_steps)))),  # type: ignore[valid-type]
        outcome=(score, Field(alias="Outcome")),
        control=(score, Field(alias="Control")),
        trajectory=(score, Field(alias="Trajectory")),
        source=(_one_of(list(sources)), Field(alias="Source")),
        impact=(_one_of(list(impacts)), Field(alias="Impact")),
        agent=(_one_of(_responsible(record)), Field(alias="Agent")),
        step=(_one_of(record.candidate_steps()), Field(alias="Step")),
        **mode,
        reason=(str, Field(alias="Reason", max_length=REASON_CHARS)),
    )
