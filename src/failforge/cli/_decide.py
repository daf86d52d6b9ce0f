"""``failforge decide``: the recorded control-decision judge run over a file of trajectories.

Shaped like ``failforge attach-audit`` (records in, the same records out with what was recorded attached) and
``failforge attribute``'s endpoint options. Each trajectory's agent steps are decided by rules; the steps the
rules leave undecided, and the final answer the rules call ``stop`` only by the fallback row, go to the judge
(:mod:`failforge.judgement`); the judgements are stored on the record (``provenance["decision_judgements"]``)
and a record that had an adjudication is adjudicated again from the record (a judged refusal can now count).
Run on its own output it replays every judgement at zero model calls; a record whose step changed since it
was judged is a ``PromptDrift``, reported on one line and left out. A record the judge could not be reached
for (an infrastructure error after the endpoint's retries) is written unchanged and named; the command then
exits 1, and running it again on its output judges what is missing (the judgements made are replayed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from failforge.cli._app import _endpoint, app, console, out
from failforge.errors import InfrastructureError, PromptDrift, SeedFormatError


@app.command("decide")
def decide(
    records: Annotated[
        Path, typer.Argument(metavar="FILE.jsonl", help="trajectories (seeds, gold, branches) as JSONL")
    ],
    base_url: Annotated[
        Optional[str],
        typer.Option(
            help="OpenAI-compatible judge endpoint (without it: recorded judgements replay, nothing new is judged)"
        ),
    ] = None,
    model: Annotated[Optional[str], typer.Option(help="judge model name (with --base-url)")] = None,
    api_key_env: Annotated[
        Optional[str], typer.Option(help="environment variable holding the judge's API key")
    ] = "OPENAI_API_KEY",
    output: Annotated[
        Path, typer.Option("--output", "-o", help="the trajectories with their judgements attached (JSONL)")
    ] = Path("decided.jsonl"),
) -> None:
    """Judge the agent steps the control-decision rules leave undecided and write the trajectories with the judgements
    attached."""
    from failforge.judgement import Counting, decide_and_adjudicate
    from failforge.llm import HttpUpstream
    from failforge.trajectory import Trajectory, iter_jsonl, write_jsonl

    endpoint = _endpoint(base_url, model, api_key_env)
    upstream = (
        HttpUpstream(
            endpoint.base_url,
            api_key_env=endpoint.api_key_env,
            timeout=endpoint.timeout,
            max_attempts=endpoint.max_attempts,
        )
        if endpoint
        else None
    )
    judge = Counting(upstream) if upstream is not None else None
    written: list[Trajectory] = []
    problems = judged = replayed = unreached = calls = 0
    try:
        for item in iter_jsonl(records):
            if isinstance(item, SeedFormatError):
                console.print(f"[yellow]skipped[/] {item}")
                problems += 1
                continue
            before = judge.calls if judge is not None else 0
            try:
                record, decided = decide_and_adjudicate(item, judge, model=model or "")
            except PromptDrift as exc:
                console.print(f"[yellow]skipped[/] record {exc.trajectory_id} step {exc.step}: {exc.message}")
                problems += 1
                continue
            except InfrastructureError as exc:
                console.print(
                    f"[yellow]not judged[/] record {item.id}: the judge failed ({exc}); written unchanged, run again on"
                    " the output to retry"
                )
                unreached += 1
                written.append(item)
                continue
            # counted per record that was decided: a record whose judge failed made calls that judged nothing
            here = sum(1 for d in decided if d.judge is not None)
            live = (judge.calls if judge is not None else 0) - before
            judged += here
            calls += min(live, here)
            replayed += max(0, here - live)
            written.append(record)
    finally:
        if upstream is not None:
            upstream.close()
    if written:
        write_jsonl(output, written)
    out.print(
        f"wrote {len(written)} trajectories to {output}: {judged} judged steps ({calls} live judge calls, {replayed}"
        f" replayed); {problems} skipped, {unreached} not judged (judge unavailable)"
    )
    if unreached:
        console.print(
            f"[red]{unreached} record(s) not judged[/]: the judge endpoint failed; run `failforge decide {output}`"
            " again to retry them"
        )
        raise typer.Exit(1)
    if not written:
        console.print(f"[red]nothing written[/]: no record of {records} could be decided")
        raise typer.Exit(1)
    if problems:  # as `import` does: the rest is written, and the exit status says the input was not whole
        console.print(
            f"[red]{problems} line(s) or record(s) of {records} skipped[/] (see above); the rest is in {output}"
        )
        raise typer.Exit(1)
