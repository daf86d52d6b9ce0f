"""``failforge show RECORD_ID``: one record in the terminal, laid out like the HTML viewer.

Seed and branch side by side; the shared prefix folded into one line marked identical with its hash;
the decisive step highlighted with the original and the injected action; then the note, the
conformance verdict, the behaviour with its components and chains, the five-outcome class and the
control decisions from the decisive step on, every filter verdict and the evaluator's output.
"""

from __future__ import annotations

import json

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from failforge.judgement import decision_label, recorded_decisions
from failforge.report._dataset import Dataset, Record, prefix_hash
from failforge.trajectory import Step, Trajectory

LIMIT = 600


def _step_text(step: Step | None) -> Text:
    if step is None:
        return Text("(no step)", style="dim")
    out = Text()
    if step.kind == "tool":
        out.append(f"tool {step.tool_name}{' (error)' if step.error else ''} → ", style="bold")
    body = (step.error if step.kind == "tool" and step.error else step.content) or ""
    if body:
        out.append(body[:LIMIT] + (f" … ({len(body) - LIMIT} more characters)" if len(body) > LIMIT else ""))
    for call in step.tool_calls:
        if len(out):
            out.append("\n")
        out.append("calls ", style="bold")
        out.append(f"{call.name}({call.arguments[:LIMIT]})")
    return out if len(out) else Text("(empty)", style="dim")


def render_record(ds: Dataset, record: Record) -> Group:
    seed = ds.seed_for(record)
    t = record.step
    status_style = {"gold": "bold green", "rejected": "yellow", "failed": "red"}[record.status]
    gold_label = record.branch.label if record.branch is not None else None
    changed = gold_label.changed if gold_label is not None else "action"
    how = f"note by the {record.guide_kind} guide" if changed == "action" else f"changed: the {changed} (no note)"
    header = Text.assemble(
        (record.record_id, "bold"),
        "  ",
        (record.status, status_style),
        "  ",
        (f"{record.mode} ({record.family})", "bold magenta"),
        f"\nseed {record.seed_id} · decisive step {t} · agent {record.agent} · environment {record.environment} ·"
        f" {how}",
        f"\nattempt {record.attempt_id}",
    )
    task = record.branch.task.instruction if record.branch is not None else (seed.task.instruction if seed else "")
    parts: list[object] = [
        Panel(header, title="failforge record", expand=True),
        Text.assemble(("task: ", "bold"), task.strip()[:LIMIT]),
    ]

    table = Table(show_lines=True, expand=True)
    table.add_column("step", no_wrap=True)
    table.add_column("seed (successful run)", ratio=1)
    table.add_column(f"branch (injected at step {t})", ratio=1)
    if seed is not None and record.branch is not None and t > 0:
        seed_hash, branch_hash = prefix_hash(seed.steps[:t]), prefix_hash(record.branch.steps[:t])
        same = seed_hash == branch_hash
        mark = Text("identical", style="green") if same else Text(f"DIFFERS (seed {seed_hash[:16]})", style="bold red")
        table.add_row(
            f"0–{t - 1}",
            Text.assemble(f"shared prefix, {t} steps: ", mark, f"  sha256 {branch_hash[:16]}"),
            Text("same", style="dim"),
        )
    seed_after = [s for s in (seed.steps if seed else []) if s.index >= t]
    if record.original is not None:
        seed_after[:1] = [record.original]
    branch_after = record.branch.steps[t:] if record.branch is not None else []
    for k in range(max(len(seed_after), len(branch_after), 1)):
        left = seed_after[k] if k < len(seed_after) else None
        right = branch_after[k] if k < len(branch_after) else None
        shown = right or left
        index = shown.index if shown is not None else t + k
        if record.branch is None:
            right_text = Text(f"no branch was run ({record.stage})" if k == 0 else "", style="dim")
        else:
            right_text = _step_text(right) if right is not None else Text("(run ended)", style="dim")
        left_text = _step_text(left) if left is not None else Text("(run ended)", style="dim")
        decisive = k == 0
        table.add_row(
            Text(f"{index}{' ★' if decisive else ''}", style="bold" if decisive else ""),
            left_text,
            right_text,
            style="on dark_red" if decisive else None,
        )
    parts.append(table)

    parts.append(Text.assemble(("steering note: ", "bold"), record.note or "(none)"))
    parts.extend(_behaviour_lines(record.branch))
    conformance = record.conformance
    if conformance is not None:
        exhibited = conformance.get("exhibited")
        label = "exhibited" if exhibited is True else "not exhibited" if exhibited is False else "unverified"
        line = Text.assemble(
            ("mode conformance: ", "bold"),
            (label, "green" if exhibited else "red" if exhibited is False else "yellow"),
            f" ({conformance.get('method')}) {conformance.get('reason')}",
        )
        judge = conformance.get("judge")
        if judge:
            line.append(f"\njudge {judge.get('model')}: {judge.get('rationale')}")
        parts.append(line)
    verdicts = Table(title="filter verdicts", expand=True)
    verdicts.add_column("filter", no_wrap=True)
    verdicts.add_column("verdict", no_wrap=True)
    verdicts.add_column("reason", ratio=1)
    for v in record.verdicts:
        verdicts.add_row(
            str(v.get("name")),
            Text("passed", style="green") if v.get("passed") else Text("rejected", style="bold red"),
            str(v.get("reason")),
        )
    if not record.verdicts:
        verdicts.add_row("-", record.stage, "; ".join(record.reasons) or "-")
    parts.append(verdicts)
    parts.append(Text.assemble(("decisiveness: ", "bold"), _decisiveness_line(record.decisiveness)))
    evaluation = record.evaluator or record.error
    parts.append(
        Text.assemble(("evaluator: ", "bold"), json.dumps(evaluation, indent=1) if evaluation else "no evaluation")
    )
    return Group(*parts)  # type: ignore[arg-type]


def _behaviour_lines(branch: Trajectory | None) -> list[Text]:
    """What the record shows beyond an agent's own error: its behaviour, the components and chains of its
    label, the injection, the run's five-outcome class with the evidence's reason, and the control decision
    of each agent step from the decisive one on (rules plus the judgements recorded on the record,
    failforge.judgement.recorded_decisions; a judged state reads ``5 refuse (judge)``)."""
    if branch is None:
        return []
    lines: list[Text] = []
    label = branch.label
    if label is not None and (label.behaviour != "failure" or label.primary_component):
        chains = (
            f"attack chain [{', '.join(label.attack_chain)}] · execution chain [{', '.join(label.execution_chain)}]"
        )
        lines.append(
            Text.assemble(
                ("behaviour: ", "bold"),
                (label.behaviour, "bold magenta"),
                f" · primary {label.primary_component} → target {label.target_component} · {chains}",
            )
        )
        if label.injection:
            inj = label.injection
            lines.append(
                Text.assemble(
                    ("injection: ", "bold"),
                    f"{inj.get('suite')} {inj.get('injection_task')} by {inj.get('attack')} "
                    f"in vector {inj.get('vector')}",
                )
            )
    if branch.adjudication is not None:
        why = branch.adjudication.evidence.get("why")
        lines.append(
            Text.assemble(
                ("outcome: ", "bold"),
                (branch.adjudication.outcome, "bold"),
                f" ({branch.adjudication.adjudicator})",
                f": {why}" if why else "",
            )
        )
    start = label.decisive_step if label is not None else 0
    decided = [d for d in recorded_decisions(branch) if d.step >= start]
    if decided:
        how = "rules + recorded judge" if any(d.method == "judge" for d in decided) else "rules"
        lines.append(
            Text.assemble((f"control decisions ({how}): ", "bold"), " · ".join(decision_label(d) for d in decided[:12]))
        )
    return lines


def _decisiveness_line(found: dict | None) -> Text:
    """Both arms, as counts: the seed's own a_t continued live, and the injected step (not checked: said so, in red)."""
    if not found:
        return Text("not recorded (made before the check existed)", style="dim")
    if found.get("checked") is False:
        return Text(str(found.get("reason") or "not checked"), style="bold red")
    original = found.get("original") or {}
    parts = [
        (
            f"original arm {original.get('successes', '?')}/{original.get('k', '?')} succeeded"
            if original
            else f"original arm success rate {found.get('original_success_rate')}"
        )
    ]
    injected = found.get("injected")
    if isinstance(injected, dict):
        parts.append(f"injected arm {injected.get('successes')}/{injected.get('k')} succeeded")
    elif "injected_success_rate" in found:
        parts.append(f"injected arm success rate {found['injected_success_rate']}")
    else:
        parts.append("injected arm not run")
    return Text(" · ".join(parts))
