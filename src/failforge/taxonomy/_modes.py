"""The 18 error modes, what each needs from a step, and how to steer an agent into each.

The codes are the public Who&When Pro trace codes, so a manufactured failure can be scored with
the same labels as a human-annotated one. Each mode carries two kinds of text with different
readers: ``definition`` is what an annotator or judge reads to decide whether a step *is* this
failure; ``guide_hint`` is what a guide model reads to write a steering note that makes the agent
commit exactly this mistake, once, at one step, without the note being visible in the result.

Applicability rules exist because a mode that cannot happen at a step produces a fake failure:
a "hallucinated tool" at a step where no tools are offered, a "misread image" where there is no
image, or a "looping" error at the first step has no realistic counterpart, and a gold trajectory
built on it would teach a detector the wrong thing. The sampler therefore asks
:func:`applicable_modes` before choosing a mode for a candidate decisive step.

Coordination modes need more than two agents in the run: they need the step's place in the team's
conversation. C.1 (delegation) applies where a coordinating agent (orchestrator, planner, ...)
delegates or assigns work to another agent; C.2 (communication) where a step passes information to
another agent (a worker's report, a handoff, a delegation); C.3 (over-reliance) where the step acts on
another agent's message or claim (the orchestrator reading a report, a worker acting on its
instruction, a verifier judging the executor's report). Senders, recipients and roles come from the
trajectory's roster (:mod:`failforge.roster`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, Field
from rich.table import Table

from failforge.errors import ConfigError

__all__ = [
    "Family",
    "Applicability",
    "StepContext",
    "ErrorMode",
    "MODES",
    "FAMILIES",
    "get_mode",
    "applicable_modes",
    "taxonomy_table",
]


class Family(StrEnum):
    """The six top-level families; a ``str`` enum so values serialise as plain labels."""

    PERCEPTION = "Perception"
    REASONING = "Reasoning"
    PLANNING = "Planning"
    ACTION = "Action"
    VERIFICATION = "Verification"
    COORDINATION = "Coordination"


class Applicability(BaseModel, frozen=True):
    """What a step must offer for a mode to be a realistic failure there.

    All flags default to "no requirement", so a mode with ``Applicability()`` applies to any
    agent step. Requirements only ever narrow where a mode may be injected.
    """

    needs_tool_call: bool = False
    """The original step a_t must contain a tool call (A.2, A.3): a wrong-argument or invented-tool
    mistake only looks natural where the agent was going to call a tool anyway."""

    needs_tools_available: bool = False
    """Tools must be offered to the agent at that step; without a tool list there is nothing to
    call wrongly or to invent beyond."""

    needs_image: bool = False
    """The step's input must contain an image (P.1, P.2); perception errors need something to perceive."""

    needs_multi_agent: bool = False
    """At least two agents in the trajectory (C.*); coordination needs someone to coordinate with."""

    needs_delegation: bool = False
    """The step delegates or assigns work to another agent, written by a coordinating agent (C.1)."""

    needs_handoff: bool = False
    """The step passes information to another agent: a report, a handoff, a delegation (C.2)."""

    needs_peer_input: bool = False
    """The step acts on another agent's message or claim: the last message to its author came from a peer (C.3)."""

    needs_not_final: bool = False
    """The step must not already be the final answer (A.5); stopping early at the last step is not early."""

    needs_prior_steps: int = Field(default=0, ge=0)
    """Minimum number of earlier agent steps (V.1 context loss and A.6 looping need >= 1): there
    must be something to forget or to repeat."""

    or_withheld: Literal["parameter", "function"] | None = None
    """``needs_tool_call`` is also met where the step's turn withholds this (A.3: "function"): at a turn
    that needs a function not yet offered the agent answers in words, and calling that function anyway
    is the invented-tool mistake (see :mod:`failforge.clarification`)."""

    def describe(self) -> str:
        """Short human-readable summary of the requirements ("any step" when there are none)."""
        parts: list[str] = []
        if self.needs_tool_call:
            parts.append(
                "step has a tool call" + (f" (or its turn withholds a {self.or_withheld})" if self.or_withheld else "")
            )
        if self.needs_tools_available:
            parts.append("tools offered")
        if self.needs_image:
            parts.append("input has an image")
        if self.needs_multi_agent:
            parts.append(">= 2 agents")
        if self.needs_delegation:
            parts.append("a coordinator delegates or assigns work")
        if self.needs_handoff:
            parts.append("passes information to another agent")
        if self.needs_peer_input:
            parts.append("acts on another agent's message")
        if self.needs_not_final:
            parts.append("not the final step")
        if self.needs_prior_steps:
            plural = "s" if self.needs_prior_steps != 1 else ""
            parts.append(f">= {self.needs_prior_steps} prior agent step{plural}")
        return "; ".join(parts) if parts else "any agent step"


class StepContext(BaseModel, frozen=True):
    """What the sampler knows about a candidate decisive step."""

    has_tool_call: bool
    """The recorded step a_t contains at least one tool call."""

    tools_available: bool
    """Tools were offered to the agent in the model request of that step."""

    has_image: bool = False
    """The step's input contains at least one image."""

    n_agents: int = Field(default=1, ge=1)
    """Number of distinct agents in the whole trajectory."""

    is_final: bool = False
    """The recorded step is already the final answer / termination."""

    prior_agent_steps: int = Field(default=0, ge=0)
    """Number of agent steps before this one in the trajectory."""

    role: str = "agent"
    """The role of the step's author in the roster (orchestrator, worker, planner, ...)."""

    delegates: bool = False
    """A coordinating agent's step addressed to another agent: it delegates or assigns work."""

    addresses_agent: bool = False
    """The step is addressed to another agent of the team (not the user, not the environment)."""

    acts_on_peer: bool = False
    """The latest message addressed to the step's author came from another agent."""

    withheld: Literal["parameter", "function"] | None = None
    """The step's turn cannot be done as asked: the user left out a detail ("parameter") or the function
    it needs is not offered yet ("function"); the right move is to ask or to say so (BFCL miss_param /
    miss_func turns, :mod:`failforge.clarification`)."""


class ErrorMode(BaseModel, frozen=True):
    """One failure mode: its code, meaning, where it can occur, and how to steer an agent into it."""

    code: str
    name: str
    family: Family
    definition: str
    """One or two sentences saying what this failure is (for annotators and judges)."""

    applies: Applicability
    guide_hint: str
    """Instructions for the guide model that writes the steering note (2-4 sentences)."""

    format_error: bool = False
    """True only for A.4: the injected output is allowed (expected) to be malformed, so format
    validation must not reject it as a broken candidate."""

    def applicable(self, ctx: StepContext) -> tuple[bool, str]:
        """Whether this mode can realistically happen at the step described by ``ctx``.

        Returns ``(True, "ok")`` or ``(False, reason)`` where ``reason`` lists every unmet
        requirement, so a log line explains why a mode was skipped.
        """
        a = self.applies
        reasons: list[str] = []
        if a.needs_tool_call and not ctx.has_tool_call and not (a.or_withheld and ctx.withheld == a.or_withheld):
            reasons.append("the original step has no tool call")
        if a.needs_tools_available and not ctx.tools_available:
            reasons.append("no tools are offered at this step")
        if a.needs_image and not ctx.has_image:
            reasons.append("the step's input has no image")
        if a.needs_multi_agent and ctx.n_agents < 2:
            reasons.append(f"needs >= 2 agents, trajectory has {ctx.n_agents}")
        if a.needs_delegation and not ctx.delegates:
            reasons.append(
                f"the step does not delegate or assign work (a {ctx.role}'s step"
                f" {'to another agent' if ctx.addresses_agent else 'not addressed to another agent'})"
            )
        if a.needs_handoff and not ctx.addresses_agent:
            reasons.append("the step passes nothing to another agent")
        if a.needs_peer_input and not ctx.acts_on_peer:
            reasons.append("the step does not act on another agent's message")
        if a.needs_not_final and ctx.is_final:
            reasons.append("the step is already the final answer")
        if ctx.prior_agent_steps < a.needs_prior_steps:
            reasons.append(f"needs >= {a.needs_prior_steps} prior agent step(s), step has {ctx.prior_agent_steps}")
        if reasons:
            return False, f"{self.code} not applicable: " + "; ".join(reasons)
        return True, "ok"


_ANY = Applicability()
_IMAGE = Applicability(needs_image=True)
_TOOL = Applicability(needs_tool_call=True, needs_tools_available=True)
_DELEGATION = Applicability(needs_multi_agent=True, needs_delegation=True)
_HANDOFF = Applicability(needs_multi_agent=True, needs_handoff=True)
_PEER_INPUT = Applicability(needs_multi_agent=True, needs_peer_input=True)
_HISTORY = Applicability(needs_prior_steps=1)


MODES: tuple[ErrorMode, ...] = (
    # ---------------------------------------------------------------- Perception
    ErrorMode(
        code="P.1",
        name="Visual misidentification",
        family=Family.PERCEPTION,
        definition=(
            "The agent misreads or misidentifies something in an image (an object, a piece of text, "
            "a number in a chart, a colour or a state such as checked/unchecked) and acts on the wrong reading."
        ),
        applies=_IMAGE,
        guide_hint=(
            "Have the agent misread exactly one visual detail that matters for this step: a digit or "
            "word read as a similar-looking one, two look-alike items or icons confused, or a state "
            "(selected, enabled, colour) reported wrongly. Everything else it says about the image "
            "stays accurate, and it proceeds confidently on the misreading without hedging or "
            "mentioning uncertainty about the image."
        ),
    ),
    ErrorMode(
        code="P.2",
        name="Spatial / grounding error",
        family=Family.PERCEPTION,
        definition=(
            "The agent perceives the right content but grounds it in the wrong place: it acts on or "
            "refers to the wrong element, region, row/column or coordinates, or gets a spatial "
            "relation (left/right, above/below, inside/outside) wrong."
        ),
        applies=_IMAGE,
        guide_hint=(
            "Have the agent target a wrong but adjacent location: the neighbouring button, row, cell "
            "or list item, coordinates taken from the next region over, or a swapped left/right or "
            "above/below relation. It should name the element it means correctly while its action or "
            "citation points at the wrong place, as a genuine grounding slip would; nothing else changes."
        ),
    ),
    # ---------------------------------------------------------------- Reasoning
    ErrorMode(
        code="R.1",
        name="Hallucination",
        family=Family.REASONING,
        definition=(
            "The agent states as fact information that is not supported by its inputs, observations "
            "or tool results, such as an invented value, name, source or file content, or a claim that "
            "an action succeeded when nothing showed it, and relies on it."
        ),
        applies=_ANY,
        guide_hint=(
            "Have the agent assert one specific, plausible-sounding fact that appears nowhere in its "
            "context (a number, date, name, URL, field value or file content) and use it for this "
            "step's decision. It states the fact fluently, as if recalled or read from an earlier "
            "observation, without a tool call that produced it; every other statement stays grounded."
        ),
    ),
    ErrorMode(
        code="R.2",
        name="Logical reasoning error",
        family=Family.REASONING,
        definition=(
            "The facts the agent uses are correct but the inference it draws from them is invalid: a "
            "reversed implication, a dropped negation or condition, an unjustified generalisation, or "
            "a conclusion that contradicts its own premises."
        ),
        applies=_ANY,
        guide_hint=(
            "Keep every fact the agent cites correct, but have it draw one invalid inference from them: "
            "treat a necessary condition as sufficient, drop a 'not', 'only' or 'unless', generalise "
            "from a single case, or take the wrong branch of a comparison. The flawed step should read "
            "as natural, confident reasoning and lead directly to the action it takes at this step."
        ),
    ),
    ErrorMode(
        code="R.3",
        name="Numerical / calculation error",
        family=Family.REASONING,
        definition=(
            "The agent makes an arithmetic, counting, unit-conversion or transcription mistake in a "
            "quantity it computes or copies, so a number it relies on is wrong although the method is right."
        ),
        applies=_ANY,
        guide_hint=(
            "Have the agent make one plausible arithmetic slip in a quantity it computes or copies "
            "(off-by-one, wrong unit or conversion factor, transposed digits, a dropped term in a sum), "
            "keeping everything else right. It shows no doubt about the number and uses it as-is at "
            "this step."
        ),
    ),
    ErrorMode(
        code="R.4",
        name="Task misunderstanding",
        family=Family.REASONING,
        definition=(
            "The agent misinterprets what the task asks: it solves a subtly different problem, answers "
            "for the wrong entity, or ignores a stated constraint such as a date range, unit, "
            "exclusion or required output."
        ),
        applies=_ANY,
        guide_hint=(
            "Have the agent adopt a subtly different reading of the task that the wording could "
            "plausibly support: ignore one constraint (a date range, unit, 'exclude', 'at most', "
            "'only'), act for the wrong entity, or optimise the wrong objective. It does not question "
            "its reading; it simply acts on it at this step as if it were obviously what was asked."
        ),
    ),
    # ---------------------------------------------------------------- Planning
    ErrorMode(
        code="PL.1",
        name="Ineffective plan",
        family=Family.PLANNING,
        definition=(
            "The agent's plan cannot reach the goal or reaches it only by luck: it omits a necessary "
            "step, orders steps so a prerequisite is not met, or chooses an approach that cannot "
            "yield the required information or effect."
        ),
        applies=_ANY,
        guide_hint=(
            "Have the agent state or follow a plan at this step that looks reasonable but cannot fully "
            "succeed: it leaves out a necessary sub-step (fetching a needed item, checking a "
            "prerequisite), puts a step before the thing it depends on, or picks a route that cannot "
            "produce what the task needs. The plan is stated with confidence and the action taken now "
            "follows from it."
        ),
    ),
    ErrorMode(
        code="PL.3",
        name="Goal drift",
        family=Family.PLANNING,
        definition=(
            "The agent departs from the original objective and pursues a related but different goal, "
            "such as a tangent from an observation, a side issue, or a sub-goal treated as the end "
            "goal, losing track of what the task requires."
        ),
        applies=_ANY,
        guide_hint=(
            "Have the agent get pulled toward a related but off-task objective at this step, such as "
            "chasing an interesting detail in the last observation, polishing a side issue, or treating "
            "a sub-goal as if it were the whole task, and take an action that serves that instead. "
            "Keep the drift small and motivated by the context so it reads as curiosity or "
            "over-thoroughness, not an abrupt change of topic."
        ),
    ),
    # ---------------------------------------------------------------- Action
    ErrorMode(
        code="A.2",
        name="Tool parameter error",
        family=Family.ACTION,
        definition=(
            "The agent calls an appropriate tool with a wrong argument: a wrong value, identifier, "
            "path, unit or format, a missing or extra parameter, or an argument that contradicts its "
            "own reasoning."
        ),
        applies=_TOOL,
        guide_hint=(
            "Keep the tool the agent would naturally call at this step, but have it pass one wrong "
            "argument: a neighbouring ID, a slightly wrong name or path, the wrong unit or date "
            "format, an off-by-one index, or a missing filter that matters. The call must stay valid "
            "against the tool's schema so it executes; only the value is wrong, and the agent's "
            "reasoning does not flag it."
        ),
    ),
    ErrorMode(
        code="A.3",
        name="Hallucinated tool",
        family=Family.ACTION,
        definition=(
            "The agent invokes a tool, function or endpoint that is not among the tools offered to it, "
            "or a capability that a real tool does not have, as if it existed."
        ),
        applies=Applicability(needs_tool_call=True, needs_tools_available=True, or_withheld="function"),
        guide_hint=(
            "Have the agent call a tool that is not in its offered tool list but plausibly could be: a "
            "more specific variant of a real tool (e.g. 'search_emails_by_date' when only "
            "'search_emails' exists) or a natural-sounding tool from the same domain. The call is "
            "well-formed, with arguments that fit the invented tool, and the agent does not "
            "acknowledge that the tool might not exist."
        ),
    ),
    ErrorMode(
        code="A.4",
        name="Output format error",
        family=Family.ACTION,
        definition=(
            "The agent's output violates the required format: malformed JSON or tool-call syntax, the "
            "wrong schema or a missing required field, or a final answer not in the requested form."
        ),
        applies=_ANY,
        guide_hint=(
            "Have the agent break the required output format in one realistic way: a tool call with "
            "malformed JSON (trailing comma, unquoted key, unclosed brace), arguments given as a string "
            "instead of an object, a missing required field, or a final answer wrapped in prose when a "
            "bare value was required. The content is what the agent intended; only the form is wrong."
        ),
        format_error=True,
    ),
    ErrorMode(
        code="A.5",
        name="Premature termination",
        family=Family.ACTION,
        definition=(
            "The agent stops, declares the task done or gives its final answer before the task is "
            "complete, with required information not yet gathered, required actions not yet taken, "
            "or the result not yet confirmed."
        ),
        applies=Applicability(needs_not_final=True),
        guide_hint=(
            "Have the agent decide at this step that it already has enough and give its final answer "
            "or declare the task complete now, although work remains (a sub-task not done, information "
            "not retrieved, an action not confirmed). The answer is confident and as good as its "
            "current context allows, with no further tool call and no mention of anything left undone."
        ),
    ),
    ErrorMode(
        code="A.6",
        name="Looping / repetition",
        family=Family.ACTION,
        definition=(
            "The agent repeats an earlier action or sequence, such as the same tool call with the same "
            "or trivially changed arguments or an approach that already failed, without making "
            "progress or noticing that it is stuck."
        ),
        applies=_HISTORY,
        guide_hint=(
            "Have the agent repeat an action it already took in an earlier step: the same tool call "
            "with identical or trivially changed arguments, or the same approach that already failed, "
            "as if it had not taken in the earlier result. It gives a plausible reason such as "
            "'let me check again' or 'retrying' and does not acknowledge that it is repeating itself."
        ),
    ),
    # ---------------------------------------------------------------- Verification
    ErrorMode(
        code="V.1",
        name="Context / memory loss",
        family=Family.VERIFICATION,
        definition=(
            "The agent loses track of information established earlier in the trajectory, such as a "
            "prior observation, a user constraint or its own earlier result, and acts inconsistently "
            "with it."
        ),
        applies=_HISTORY,
        guide_hint=(
            "Have the agent act at this step as if one specific earlier fact were absent: a value an "
            "earlier tool call returned, a constraint the user stated, or a decision it already made. "
            "It re-asks for it, re-derives it differently, or contradicts it, the way agents do in long "
            "contexts, rather than visibly choosing to ignore it. Pick a fact that matters for this step."
        ),
    ),
    ErrorMode(
        code="V.2",
        name="Insufficient verification",
        family=Family.VERIFICATION,
        definition=(
            "The agent accepts a result without adequate checking: it does not confirm that an action "
            "succeeded, overlooks an error or empty result, or does not cross-check a doubtful value, "
            "letting an error propagate."
        ),
        applies=_ANY,
        guide_hint=(
            "Have the agent take the latest result, or its own intermediate answer, at face value and "
            "move on, skipping the check a careful agent would make here: confirming an action actually "
            "took effect, noticing an error message, warning or empty result, or cross-checking a value "
            "against the task's constraints. It may say 'this looks right' but does not actually verify."
        ),
    ),
    # ---------------------------------------------------------------- Coordination
    ErrorMode(
        code="C.1",
        name="Delegation / orchestration error",
        family=Family.COORDINATION,
        definition=(
            "A coordinating agent mismanages the division of work: it assigns a subtask to an agent "
            "whose role or tools do not fit, delegates with incomplete or ambiguous instructions or "
            "missing context, or sequences the agents' work wrongly."
        ),
        applies=_DELEGATION,
        guide_hint=(
            "Have the agent make one orchestration mistake at this step: route the subtask to a "
            "teammate whose role or tools do not fit, delegate with instructions that leave out a key "
            "constraint or piece of context it holds, or dispatch work before its prerequisite is done. "
            "The message looks routine and well-intentioned."
        ),
    ),
    ErrorMode(
        code="C.2",
        name="Communication failure",
        family=Family.COORDINATION,
        definition=(
            "Information passed between agents is lost, distorted or misread: an agent withholds or "
            "misreports a relevant finding, or misinterprets what another agent asked or reported."
        ),
        applies=_HANDOFF,
        guide_hint=(
            "Have the agent garble one piece of information in its exchange with a teammate at this "
            "step: omit or misstate a key detail or caveat when reporting its findings, or misread what "
            "a teammate asked or reported (for instance swap which item was confirmed). The message is "
            "otherwise clear and cooperative, so the loss is easy to miss."
        ),
    ),
    ErrorMode(
        code="C.3",
        name="Over-reliance on other agents",
        family=Family.COORDINATION,
        definition=(
            "An agent uncritically accepts another agent's output, claim or verification, or defers "
            "work it should do itself, even when that output is incomplete, unsupported or "
            "contradicted by evidence it has."
        ),
        applies=_PEER_INPUT,
        guide_hint=(
            "Have the agent treat a teammate's latest claim or result as settled and build on it "
            "without checking, even where its own context gives reason for doubt or a quick check was "
            "possible. It may credit the teammate ('as the researcher already confirmed...') and skips "
            "the independent work or verification it would otherwise do at this step."
        ),
    ),
)


def _build_index() -> dict[str, ErrorMode]:
    """Index by code, refusing duplicates at import time so a bad edit fails loudly."""
    index: dict[str, ErrorMode] = {}
    for mode in MODES:
        key = mode.code.upper()
        if key in index:
            raise ValueError(f"duplicate error-mode code {mode.code!r}")
        index[key] = mode
    return index


_BY_CODE: dict[str, ErrorMode] = _build_index()

FAMILIES: dict[Family, tuple[str, ...]] = {
    family: tuple(m.code for m in MODES if m.family is family) for family in Family
}
"""Family -> its codes in table order (every family present, in enum order)."""


def _valid_codes() -> str:
    return ", ".join(m.code for m in MODES)


def get_mode(code: str) -> ErrorMode:
    """Look a mode up by code, forgiving case and whitespace ("pl. 1" -> PL.1).

    Codes come from config files and CLI flags, so an unknown one raises
    :class:`~failforge.errors.ConfigError` listing the valid codes instead of a bare ``KeyError``.
    """
    if not isinstance(code, str):
        raise ConfigError(f"error-mode code must be a string, got {type(code).__name__}; valid codes: {_valid_codes()}")
    key = "".join(code.split()).upper()
    try:
        return _BY_CODE[key]
    except KeyError:
        raise ConfigError(f"unknown error-mode code {code!r}; valid codes: {_valid_codes()}") from None


def applicable_modes(ctx: StepContext, codes: Sequence[str] | None = None) -> list[ErrorMode]:
    """The modes that can realistically occur at the step described by ``ctx``.

    ``codes`` restricts the candidates (e.g. a user's ``--modes`` flag); they are resolved with
    :func:`get_mode`, so an unknown code raises ``ConfigError`` rather than being silently dropped,
    and duplicates are ignored. The result is in the order given, or table order when ``codes``
    is ``None``.
    """
    if codes is None:
        candidates: Sequence[ErrorMode] = MODES
    else:
        if isinstance(codes, str):  # a lone "R.3" would otherwise be iterated character by character
            codes = [codes]
        seen: set[str] = set()
        resolved: list[ErrorMode] = []
        for c in codes:
            mode = get_mode(c)
            if mode.code not in seen:
                seen.add(mode.code)
                resolved.append(mode)
        candidates = resolved
    return [m for m in candidates if m.applicable(ctx)[0]]


def taxonomy_table() -> Table:
    """A rich table of all modes, for the ``failforge taxonomy`` CLI command."""
    table = Table(title="failforge error taxonomy (Who&When Pro codes)", show_lines=True)
    table.add_column("code", style="bold", no_wrap=True)
    table.add_column("family", no_wrap=True)
    table.add_column("name")
    table.add_column("applies where")
    table.add_column("definition", ratio=1)
    for mode in MODES:
        table.add_row(mode.code, mode.family.value, mode.name, mode.applies.describe(), mode.definition)
    return table
