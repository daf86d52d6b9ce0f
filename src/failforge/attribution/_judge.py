"""A judge session: one (method, record) conversation with a judge model, through the model boundary.

Every judge call goes through :class:`failforge.llm.ModelBoundary` with a :class:`failforge.runlog.RunLog`
of its own, exactly like an agent's calls: live calls are recorded (request, request hash, response),
and a session that already has recorded calls is served them first, after the request hash check.
That one mechanism gives three behaviours:

- *re-scoring* a finished run: every call comes from the recording (no upstream at all), so it costs 0
  tokens, and a changed prompt raises ``PromptDrift`` instead of silently asking a different question;
  a protocol that needs a call the recording lacks raises ``RecordingExhausted``;
- *resuming* an interrupted session: its calls so far are replayed, the rest go live;
- *auditing*: the recording holds every prompt and reply.

Judge requests are deterministic (temperature 0, fixed seed) so a re-run asks the same questions.

A call that declares its answer's schema (``ask(..., schema=Model)``) asks for it with the endpoint's
mechanism (``structured``, probed once per endpoint: :mod:`failforge.llm._structured`); the structured reply
is handed to the method as the ``Key: value`` lines its free-text parser reads: a JSON reply that does not
validate field by field as written (the method's checks name the bad field), any other reply as written. A
constrained call at the run's budget asks for at least the tokens its schema's bounds admit
(:func:`failforge.llm.answer_tokens`), so ``max_tokens`` does not cut its JSON before the last field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel

from failforge.llm import Mechanism, Responder, answer_tokens, reply_fields, response_format, surface_boundary_error
from failforge.replay import Plan, Session
from failforge.roster import AgentProfile
from failforge.runlog import addressed
from failforge.trajectory import Step

OnCall = Callable[[str, Step], None]


class JudgeSession:
    def __init__(
        self,
        session_id: str,
        model: str,
        *,
        upstream: Responder | None,
        recorded: Sequence[Step] = (),
        on_call: OnCall | None = None,
        max_tokens: int = 256,
        seed: int = 0,
        structured: Mechanism = "none",
    ) -> None:
        self.session_id = session_id
        self.model = model
        self.max_tokens = max_tokens
        self.seed = seed
        self.structured = structured
        self.valid_structured = 0
        # Resume: the recorded calls are served (hash-checked), then live; with no upstream a call past
        # the recording is RecordingExhausted, never a silent live call.
        self.session = Session(
            Plan.resume(len(recorded)),
            run_id=session_id,
            expected=addressed(recorded, session_id),
            upstream=upstream,
            roster=[AgentProfile(name="judge")],
        )
        self.log = self.session.log
        self.boundary = self.session.models
        self.client = self.session.client("judge")
        self.on_call = on_call
        self.replies: list[str] = []
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def ask(
        self, messages: list[dict[str, Any]], *, max_tokens: int | None = None, schema: type[BaseModel] | None = None
    ) -> str:
        """The judge's reply; with ``schema`` (and an endpoint that constrains answers) its fields as ``Key: value``
        lines."""
        fmt = response_format(schema, self.structured) if schema is not None else None
        extra: dict[str, Any] = {"response_format": fmt} if fmt is not None else {}
        budget = max_tokens or self.max_tokens
        if max_tokens is None and fmt is not None and schema is not None:
            # the run's budget does not cut a constrained answer short of what its schema admits (a method's own
            # short budget, a step check's 48 tokens, stays: what its cut reply holds in full is still read)
            budget = max(budget, answer_tokens(schema) or 0)
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                temperature=0,
                seed=self.seed,
                max_tokens=budget,
                **extra,
            )
        except Exception as exc:
            raise surface_boundary_error(self.boundary, exc) from exc
        step = self.log.steps[-1]
        if step.phase == "recorded":
            usage = (step.model_call.response.get("usage") if step.model_call else None) or {}
            self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
            self.completion_tokens += int(usage.get("completion_tokens") or 0)
            if self.on_call is not None:
                self.on_call(self.session_id, step)
        text = (response.choices[0].message.content or "") if response.choices else ""
        if fmt is not None and schema is not None:
            text, validated = reply_fields(text, schema)
            self.valid_structured += validated
        self.replies.append(text)
        return text

    @property
    def calls(self) -> int:
        return len(self.log.steps)

    @property
    def live_calls(self) -> int:
        return self.boundary.live_calls

    def close(self) -> None:
        self.client.close()
