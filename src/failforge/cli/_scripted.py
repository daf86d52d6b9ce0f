"""``failforge serve-scripted POLICY``: a deterministic scripted model as an OpenAI-compatible server on loopback."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from failforge.cli._app import app, out

POLICIES = ("team", "oracle", "conversation", "bfcl", "analyst")
DEFAULT_TASKS = {
    "team": ["banking/user_task_3"],
    "conversation": ["airline/0"],
    "bfcl": ["multi_turn_base_0"],
    "analyst": ["dabench-18"],
}


def scripted_model(policy: str, tasks: list[str], seeds: Path | None, seed_id: str | None) -> tuple[Any, str]:
    """(the agent policy a loopback server serves, what it plays), or a ConfigError saying what is missing."""
    from failforge.errors import ConfigError
    from failforge.testing.scripted import PolicyModel, TeamModel

    if policy == "team":
        return (
            TeamModel.for_tasks(tasks),
            f"a lead (manager) and one worker per tool domain on {', '.join(tasks)}, delegating with ask_<worker>",
        )
    if policy == "oracle":
        from failforge.testing.oracle_policy import oracle_replay_policy
        from failforge.trajectory import load_jsonl

        if seeds is None:
            raise ConfigError(
                "serve-scripted oracle replays a recorded seed: give --seeds FILE (and --seed-id when it holds several)"
            )
        good, bad = load_jsonl(seeds)
        if bad:
            raise ConfigError(str(bad[0]))
        chosen = [s for s in good if seed_id is None or s.id == seed_id]
        if not chosen:
            raise ConfigError(f"{seeds} has no seed {seed_id!r}" if seed_id else f"{seeds} holds no seed")
        return PolicyModel(oracle_replay_policy(chosen[0])), f"the recorded replies of seed {chosen[0].id}"
    if policy == "conversation":
        from failforge.testing.conversation_policy import ConversationPolicy

        domain, _, task_id = tasks[0].partition("/")
        if not task_id:
            raise ConfigError(f"--task {tasks[0]!r}: a tau2 task is DOMAIN/TASK_ID, e.g. airline/0")
        return ConversationPolicy(domain, task_id), f"agent and customer of tau2 {tasks[0]}"
    if policy == "bfcl":
        from failforge.testing.bfcl_policy import BfclPolicies

        return PolicyModel(BfclPolicies(tasks)), f"BFCL's ground truth on {', '.join(tasks)}"
    if policy == "analyst":
        from failforge.testing.analyst_policy import AnalystPolicy

        return PolicyModel(AnalystPolicy(tasks)), f"smolagents' CodeAgent on DA-Bench {', '.join(tasks)} (the analyst)"
    raise ConfigError(f"no scripted policy {policy!r}; choose one of {', '.join(POLICIES)}")


@app.command("serve-scripted")
def serve_scripted(
    policy: Annotated[str, typer.Argument(help=f"the scripted model: {', '.join(POLICIES)}")],
    task: Annotated[
        Optional[list[str]],
        typer.Option(
            "--task",
            help="task(s) it plays (team: AgentDojo suite/user_task_N; conversation: tau2 "
            "domain/id; bfcl: BFCL ids; analyst: DA-Bench dabench-N); repeatable",
        ),
    ] = None,
    seeds: Annotated[
        Optional[Path], typer.Option("--seeds", help="oracle: the seed file whose recorded replies it replays")
    ] = None,
    seed_id: Annotated[
        Optional[str], typer.Option("--seed-id", help="oracle: which seed of --seeds (default: the first)")
    ] = None,
    port: Annotated[int, typer.Option("--port", "-p", help="TCP port on 127.0.0.1 (0: any free port)")] = 8766,
    requests: Annotated[
        int, typer.Option("--requests", help="stop after this many chat requests (0: run until Ctrl-C)", hidden=True)
    ] = 0,
) -> None:
    """Serve a deterministic scripted model (agent, guide, judges) as an OpenAI-compatible server on loopback.

    Point any framework's OpenAI client at the printed base URL; a team's calls name their agent by the
    route /agents/NAME/v1 or the X-Failforge-Agent header. The protocol (how it answers the guide, the
    judges and a steering note) is in docs/SCRIPTED_MODELS.md; subclass failforge.testing.scripted.ScriptedModel
    for one's own."""
    from failforge.testing import LoopbackModelServer

    tasks = list(task or DEFAULT_TASKS.get(policy, []))
    model, plays = scripted_model(policy, tasks, seeds, seed_id)
    served = threading.Event()
    count = [0]

    def counted(agent: str | None, body: dict[str, Any]) -> Any:
        try:
            return model(agent, body)
        finally:
            count[0] += 1
            if requests and count[0] >= requests:
                served.set()

    signal.signal(signal.SIGTERM, _interrupt)
    with LoopbackModelServer(agent_policy=counted, port=port, name=policy) as server:
        out.print(
            f"failforge scripted model '{policy}' on {server.base_url} (any model name, no key); it plays {plays};"
            " Ctrl-C stops it"
        )
        try:
            while not served.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    out.print(f"served {count[0]} chat requests")


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
