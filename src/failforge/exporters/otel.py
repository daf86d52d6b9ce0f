"""Gold and seeds as OpenTelemetry traces (OTLP-JSON), the labels in a sidecar file.

One trace per run, written as one OTLP ``ExportTraceServiceRequest`` per line of ``<out>/traces.jsonl`` (the
OTLP file format: JSON with hex trace and span ids, 64-bit integers and times as strings). Every step is one
span under the run's root span, in step order:

==========================  ===============================  ==========================================
step                        OpenInference span kind          GenAI semantic conventions
==========================  ===============================  ==========================================
the run (root)              ``AGENT`` (one agent),           ``gen_ai.operation.name`` ``invoke_agent``
                            ``CHAIN`` (a team)               (one agent) or ``invoke_workflow``
an agent step (model call)  ``LLM``                          ``chat``, ``gen_ai.agent.name``,
                                                             ``gen_ai.request.model``, usage, output
                                                             messages and tool calls
a tool observation          ``TOOL``                         ``execute_tool``, ``gen_ai.tool.name``,
                                                             ``gen_ai.tool.call.id``, arguments, result
a user message after task   ``CHAIN`` named ``user_message``  --
==========================  ===============================  ==========================================

A trace never carries its own answer: no label, no steering note, no step phase (replayed / injected /
live would point at the decisive step), no run id or provenance (a gold id or an attempt id can name the
step or the mode), and no model requests (the decisive step's request holds the steering note). What an
agent saw is the step before it (``input.value``). ``<out>/labels.jsonl`` maps each trace id to the run's
id, its seed, outcome and, for gold, the decisive step's index and span id, agent and mode (failforge's code
and the release's). Span times are synthetic (failforge records the order of steps, not their clock): the
root starts at a fixed epoch and each step takes one millisecond, so the order is the step order.

Versions are pinned and recorded in every trace (resource attributes) and in ``<out>/manifest.json``: the
GenAI conventions of OpenTelemetry semantic conventions 1.44.0 (still marked development upstream) and
OpenInference semantic conventions 0.1.42.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from failforge.attribution import LabelledFailure, RecordProblem, to_release
from failforge.exporters._common import ExportSummary, check_codes
from failforge.plugins import exporters
from failforge.trajectory import Trajectory

GENAI_SEMCONV = "1.44.0"
GENAI_SCHEMA_URL = f"https://opentelemetry.io/schemas/{GENAI_SEMCONV}"
OPENINFERENCE_SEMCONV = "0.1.42"
#: 2026-01-01T00:00:00Z: the synthetic clock's start (step k starts k milliseconds later).
EPOCH_NS = 1_767_225_600_000_000_000
STEP_NS = 1_000_000
SPAN_KIND_INTERNAL, SPAN_KIND_CLIENT = 1, 3


@dataclass
class SpanStep:
    """One step as a span needs it, from a failforge trajectory or a labelled-failure record alike."""

    index: int
    kind: str  # task | agent | tool | user
    agent: str
    content: str
    tool_calls: list[tuple[str | None, str, str]] = field(default_factory=list)  # (id, name, arguments)
    tool_call_id: str | None = None
    model: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)


@dataclass
class Run:
    id: str
    question: str
    environment: str
    benchmark: str
    task_id: str
    framework: str
    agents: list[str]
    steps: list[SpanStep]
    success: bool | None
    seed_id: str | None = None
    gold: dict[str, Any] | None = None


def _from_trajectory(t: Trajectory) -> Run:
    steps = []
    for s in t.steps:
        call = s.model_call
        steps.append(
            SpanStep(
                index=s.index,
                kind="task" if s.kind == "task" else s.kind,
                agent=s.tool_name or s.agent if s.kind == "tool" else s.agent,
                content=(s.error or s.content or "") if s.kind == "tool" else (s.content or ""),
                tool_calls=[(c.id, c.name, c.arguments) for c in s.tool_calls],
                tool_call_id=s.tool_call_id,
                model=(call.request.get("model") if call else None) or (t.model.name if s.kind == "agent" else None),
                usage=dict((call.response.get("usage") or {}) if call else {}),
            )
        )
    from failforge.attribution.importers.failforge_gold import run_framework

    label = t.label
    gold = (
        None if label is None else {"step": label.decisive_step, "agent": label.decisive_agent, "mode": label.mode_code}
    )
    return Run(
        id=t.id,
        question=t.task.instruction,
        environment=t.environment.name,
        task_id=t.task.task_id,
        benchmark=f"{t.task.benchmark}_{t.task.suite}" if t.task.suite else t.task.benchmark,
        framework=run_framework(t),
        agents=list(t.agents),
        steps=steps,
        success=t.outcome.success if t.outcome else None,
        seed_id=label.seed_id if label else t.parent_id,
        gold=gold,
    )


def _from_record(r: LabelledFailure) -> Run:
    first = next((s.index for s in r.steps if s.kind == "user"), None)
    steps = [
        SpanStep(
            index=s.index,
            kind="task" if s.index == first else s.kind,
            agent=s.agent,
            content=s.content,
            tool_calls=[(c.id, c.name, c.arguments) for c in s.tool_calls],
            tool_call_id=s.tool_call_id,
        )
        for s in r.steps
        if s.kind != "system"
    ]
    return Run(
        id=r.id,
        question=r.task.question,
        environment=str(r.extra.get("environment") or r.source.split("/")[0]),
        benchmark=r.benchmark or "",
        task_id=str(r.extra.get("task_id") or ""),
        framework=r.framework,
        agents=list(r.agents),
        steps=steps,
        success=False,
        seed_id=r.extra.get("seed_id"),
        gold={"step": r.gold.step, "agent": r.gold.agent, "mode": r.gold.mode},
    )


def _hex(text: str, chars: int) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:chars]


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    return {"stringValue": str(v)}


def _attributes(values: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in values.items() if v is not None]


def _span(
    trace_id: str,
    span_id: str,
    parent: str | None,
    name: str,
    start: int,
    end: int,
    kind: int,
    attributes: dict[str, Any],
) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": trace_id,
        "spanId": span_id,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": _attributes(attributes),
        "status": {},
    }
    if parent:
        span["parentSpanId"] = parent
    return span


def span_id(run_id: str, index: int) -> str:
    return _hex(f"{run_id}#{index}", 16)


def _step_span(
    run: Run, trace_id: str, root: str, step: SpanStep, previous: SpanStep | None, calls: dict[str, str]
) -> dict[str, Any]:
    start = EPOCH_NS + step.index * STEP_NS
    common = {"failforge.step.index": step.index}
    if step.kind == "agent":
        attrs: dict[str, Any] = {
            "openinference.span.kind": "LLM",
            "gen_ai.operation.name": "chat",
            "gen_ai.agent.name": step.agent,
            "gen_ai.request.model": step.model,
            "llm.model_name": step.model,
            "input.value": previous.content if previous is not None else None,
            "input.mime_type": "text/plain",
            "output.value": step.content,
            "output.mime_type": "text/plain",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": step.content,
            "gen_ai.output.messages": json.dumps(
                [
                    {
                        "role": "assistant",
                        "parts": (
                            [{"type": "text", "content": step.content}]
                            + [{"type": "tool_call", "id": i, "name": n, "arguments": a} for i, n, a in step.tool_calls]
                        ),
                    }
                ],
                ensure_ascii=False,
            ),
            **common,
        }
        for k, (call_id, name, arguments) in enumerate(step.tool_calls):
            prefix = f"llm.output_messages.0.message.tool_calls.{k}.tool_call"
            attrs.update(
                {f"{prefix}.id": call_id, f"{prefix}.function.name": name, f"{prefix}.function.arguments": arguments}
            )
            if call_id:
                calls[call_id] = arguments
        usage = step.usage
        attrs.update(
            {
                "gen_ai.usage.input_tokens": usage.get("prompt_tokens"),
                "gen_ai.usage.output_tokens": usage.get("completion_tokens"),
                "llm.token_count.prompt": usage.get("prompt_tokens"),
                "llm.token_count.completion": usage.get("completion_tokens"),
                "llm.token_count.total": usage.get("total_tokens"),
            }
        )
        name, kind = f"chat {step.model or step.agent}", SPAN_KIND_CLIENT
    elif step.kind == "tool":
        called_with = calls.get(step.tool_call_id or "")
        attrs = {
            "openinference.span.kind": "TOOL",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": step.agent,
            "tool.name": step.agent,
            "gen_ai.tool.call.id": step.tool_call_id,
            "gen_ai.tool.call.arguments": called_with,
            "gen_ai.tool.call.result": step.content,
            "input.value": called_with,
            "output.value": step.content,
            "output.mime_type": "text/plain",
            **common,
        }
        name, kind = f"execute_tool {step.agent}", SPAN_KIND_INTERNAL
    else:
        attrs = {
            "openinference.span.kind": "CHAIN",
            "input.value": step.content,
            "input.mime_type": "text/plain",
            **common,
        }
        name, kind = "user_message", SPAN_KIND_INTERNAL
    return _span(trace_id, span_id(run.id, step.index), root, name, start, start + STEP_NS, kind, attrs)


def trace_of(run: Run) -> dict[str, Any]:
    """One run as an OTLP ``ExportTraceServiceRequest`` (JSON)."""
    trace_id = _hex(run.id, 32)
    root = _hex(f"{run.id}#root", 16)
    single = len(run.agents) <= 1
    final = next((s.content for s in reversed(run.steps) if s.kind == "agent"), "")
    end = EPOCH_NS + (len(run.steps) + 1) * STEP_NS
    spans = [
        _span(
            trace_id,
            root,
            None,
            f"{'invoke_agent' if single else 'invoke_workflow'} {run.environment}",
            EPOCH_NS,
            end,
            SPAN_KIND_INTERNAL,
            {
                "openinference.span.kind": "AGENT" if single else "CHAIN",
                "gen_ai.operation.name": "invoke_agent" if single else "invoke_workflow",
                "gen_ai.agent.name": run.agents[0] if single and run.agents else None,
                "input.value": run.question,
                "input.mime_type": "text/plain",
                "output.value": final,
                "output.mime_type": "text/plain",
                "session.id": trace_id,
                "metadata": json.dumps(
                    {
                        "environment": run.environment,
                        "benchmark": run.benchmark,
                        "task_id": run.task_id,
                        "framework": run.framework,
                        "agents": run.agents,
                    },
                    ensure_ascii=False,
                ),
            },
        )
    ]
    calls: dict[str, str] = {}
    previous: SpanStep | None = None
    for step in run.steps:
        if step.kind != "task":
            spans.append(_step_span(run, trace_id, root, step, previous, calls))
        previous = step
    from failforge import __version__

    resource = {
        "service.name": f"failforge.{run.environment}",
        "failforge.framework": run.framework,
        "failforge.benchmark": run.benchmark,
        "openinference.semconv.version": OPENINFERENCE_SEMCONV,
        "gen_ai.semconv.version": GENAI_SEMCONV,
        "telemetry.sdk.name": "failforge",
        "telemetry.sdk.version": __version__,
    }
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": _attributes(resource)},
                "scopeSpans": [
                    {
                        "scope": {"name": "failforge.exporters.otel", "version": __version__},
                        "schemaUrl": GENAI_SCHEMA_URL,
                        "spans": spans,
                    }
                ],
                "schemaUrl": GENAI_SCHEMA_URL,
            }
        ]
    }


def label_of(run: Run) -> dict[str, Any]:
    """The sidecar line: what the trace must not say about itself."""
    gold = None
    if run.gold is not None:
        mode = run.gold["mode"]
        gold = {
            "decisive_step": run.gold["step"],
            "decisive_span_id": span_id(run.id, run.gold["step"]),
            "decisive_agent": run.gold["agent"],
            "mode": mode,
            "release_mode": to_release(mode) if mode else None,
        }
    return {
        "trace_id": _hex(run.id, 32),
        "run_id": run.id,
        "seed_id": run.seed_id,
        "success": run.success,
        "gold": gold,
    }


@exporters.register(
    "otel",
    aliases=("otlp-json",),
    input="trajectories",
    description=(
        "OpenTelemetry traces: <out>/traces.jsonl (OTLP-JSON, OpenInference + GenAI conventions), "
        "labels.jsonl sidecar, manifest.json"
    ),
)
def export_otel(items: Iterable[Trajectory | LabelledFailure], output: Path, codes: str = "release") -> ExportSummary:
    """Gold (and seeds: trajectories without a label) as traces; ``codes`` only names the sidecar's release code."""
    from failforge.exporters._release_card import _digest

    check_codes(codes)
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    summary = ExportSummary()
    traces, labels = [], []
    for item in items:
        try:
            run = _from_trajectory(item) if isinstance(item, Trajectory) else _from_record(item)
        except (ValueError, KeyError) as exc:
            summary.skipped.append(
                RecordProblem(path="<memory>", field="steps", problem=f"{getattr(item, 'id', '?')}: {exc}")
            )
            continue
        traces.append(json.dumps(trace_of(run), ensure_ascii=False, separators=(",", ":")) + "\n")
        labels.append(json.dumps(label_of(run), ensure_ascii=False) + "\n")
    files = {"traces.jsonl": "".join(traces), "labels.jsonl": "".join(labels)}
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
        summary.files.append(str(out / name))
    manifest = {
        "format": "OTLP-JSON ExportTraceServiceRequest per line (traces.jsonl), labels sidecar (labels.jsonl)",
        "gen_ai_semconv": GENAI_SEMCONV,
        "gen_ai_semconv_status": "development (upstream)",
        "openinference_semconv": OPENINFERENCE_SEMCONV,
        "traces": len(traces),
        "files": [{"path": n, "sha256": _digest(out / n), "bytes": (out / n).stat().st_size} for n in files],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    summary.files.append(str(out / "manifest.json"))
    summary.written = len(traces)
    return summary
