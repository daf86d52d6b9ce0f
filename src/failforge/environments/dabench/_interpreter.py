"""The stateful Python interpreter behind the tool boundary: one per run, on either sandbox backend.

One tool, ``python_interpreter`` (argument ``code``), runs a code block in the run's interpreter. Its variables
carry across steps in one live process per run: the sandbox's session (:meth:`Sandbox.session_start`) runs
:mod:`._program`'s ``serve``, which keeps the namespace between blocks; it is killed when the run ends (the sandbox
is reset or closed). The state after step *t* is a function of the blocks up to *t* (the same at record, replay
and branch: every replayed observation and namespace fingerprint is still checked). A block that stopped the
interpreter itself (a timeout, a kill) is left out of the run's history: the next block starts a new process,
which first runs that history again (output discarded), so the agent sees the error and the state it had before.
A sandbox without sessions runs each block in a fresh process that rebuilds the state from the history the same
way (:meth:`Interpreter.run_once`); the observations are the same.

The observation is JSON (``logs``: printed text, ``output``: ``str`` of the last value, ``is_final_answer``) and
the step's ``error`` as smolagents words it (``Code execution failed at line '...' due to: ...``, the import
allow-list sorted). The fingerprint after each call is the workspace's files (the table under ``data/``) plus one
part per namespace name, ``ns:<name>`` = its type and a hash of its value (a DataFrame by pandas' row hashes,
an array by its bytes, anything else by its repr; values past :data:`FINGERPRINT_BUDGET` bytes in all are named
with their size instead), so a drift says which variable changed.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from failforge.canonical import canonical_hash
from failforge.environments._base import Fingerprint, ToolResult, observe_tool_call, parse_tool_arguments
from failforge.environments.sandbox import Sandbox
from failforge.errors import SandboxDrift
from failforge.runlog import RunLog

TOOL_NAME = "python_interpreter"
#: Bump when the program's semantics or the fingerprint change; recorded in every seed's spec.
INTERPRETER_VERSION = "dabench-interpreter/2"
#: Bytes of namespace values hashed per step; past it a value is recorded as its type and size.
FINGERPRINT_BUDGET = 64 * 1024 * 1024
RESULT_MARKER = "\n@@failforge-interpreter-result@@\n"

#: smolagents' ``BASE_BUILTIN_MODULES`` (1.26) plus the data stack DA-Bench runs authorise.
BASE_IMPORTS: tuple[str, ...] = (
    "collections",
    "datetime",
    "itertools",
    "math",
    "queue",
    "random",
    "re",
    "stat",
    "statistics",
    "time",
    "unicodedata",
)
DATA_IMPORTS: tuple[str, ...] = ("numpy", "pandas", "scipy", "sklearn", "statsmodels", "json", "csv")

TOOL_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": (
            "Run Python code in this run's interpreter; variables persist between calls. "
            "The table is under ./data/. "
            "Returns the printed output and the last value. Call final_answer(answer) to finish."
        ),
        "parameters": {
            "type": "object",
            "properties": {"code": {"type": "string", "description": "the Python code to run"}},
            "required": ["code"],
            "additionalProperties": False,
        },
    },
}


@cache
def program_source() -> str:
    return Path(__file__).with_name("_program.py").read_text(encoding="utf-8")


def authorized_imports(extra: list[str] | tuple[str, ...] = DATA_IMPORTS) -> list[str]:
    """The allow-list as the interpreter checks and shows it: smolagents' base modules plus ``extra``, sorted."""
    return sorted(set(BASE_IMPORTS) | set(extra))


class Interpreter:
    """The interpreter state of one run: its code history and the namespace fingerprint of the last step."""

    def __init__(
        self, sandbox: Sandbox, *, imports: list[str], step_timeout: float, cpu_seconds: int | None = None
    ) -> None:
        self.sandbox = sandbox
        self.imports = imports
        self.step_timeout = step_timeout
        self.cpu_seconds = cpu_seconds
        self.history: list[str] = []
        self.namespace: dict[str, str] = {}
        #: Whether the sandbox's session process holds this run's namespace (so a block needs no history).
        self._live = False
        #: False: every block in a fresh process (the sandbox has no sessions, or the caller asked for it).
        self.persistent = sandbox.supports_session

    def run(self, code: str) -> ToolResult:
        """One block in the run's live interpreter process (started, and given the history, when there is none)."""
        if not self.persistent:
            return self.run_once(code)
        for attempt in range(2):
            fresh = not self._live
            if fresh:
                limits = {**self.sandbox.limits.rlimits(), "RLIMIT_CPU": self.sandbox.limits.lifetime_seconds}
                self.sandbox.session_start(["python3", "-s", "-c", program_source() + "\nserve()\n"], rlimits=limits)
                self._live = True
            request = {
                "history": self.history if fresh else [],
                "code": code,
                "imports": self.imports,
                "budget": FINGERPRINT_BUDGET,
                "cpu_seconds": self.cpu_seconds,
                # the session's reply is read up to 4 output limits (past them the process is killed)
                "result_limit": 4 * self.sandbox.limits.output_limit - 64,
            }
            reply = self.sandbox.session_send(json.dumps(request), timeout=self.step_timeout)
            if reply.ended:
                self._live = False
                if reply.idle and not fresh and attempt == 0:
                    continue  # it ended between two blocks: a new process rebuilds the state, the block runs there
                why = f"timed out after {self.step_timeout:g}s" if reply.timed_out else f"exit code {reply.exit_code}"
                return self._stopped(why, reply.stderr)
            try:
                return self._result(code, json.loads(reply.line))
            except (ValueError, KeyError, TypeError):  # the block wrote a line of its own where the result goes
                self.stop()
                return self._stopped("its reply was not a result", reply.stderr)
        raise AssertionError("unreachable: the second attempt returns")  # pragma: no cover

    def run_once(self, code: str) -> ToolResult:
        """One block in a fresh process that first runs the history again (output discarded)."""
        request = {
            "history": self.history,
            "code": code,
            "imports": self.imports,
            "budget": FINGERPRINT_BUDGET,
            # a command's stdout is kept up to one output limit, the marker before the result
            "result_limit": self.sandbox.limits.output_limit - len(RESULT_MARKER) - 64,
        }
        source = program_source() + f"\nmain({json.dumps(request)!r})\n"
        result = self.sandbox.exec(["python3", "-s", "-"], timeout=self.step_timeout, stdin=source)
        if RESULT_MARKER not in result.stdout:
            why = f"timed out after {self.step_timeout:g}s" if result.timed_out else f"exit code {result.exit_code}"
            return self._stopped(why, result.stderr)
        try:
            return self._result(code, json.loads(result.stdout.rsplit(RESULT_MARKER, 1)[1]))
        except (ValueError, KeyError, TypeError):  # cut by the output limit, or not the program's result
            return self._stopped("its reply was not a result", result.stderr)

    def stop(self) -> None:
        """End the run's interpreter process (the sandbox's reset or close would too)."""
        if self._live:
            self._live = False
            self.sandbox.session_stop()

    def _stopped(self, why: str, stderr: str) -> ToolResult:
        last = [line for line in stderr.strip().splitlines() if line.strip()][-1:]
        detail = f": {last[0]}" if last else ""
        return ToolResult(
            content=json.dumps({"is_final_answer": False, "logs": "", "output": "None"}, sort_keys=True),
            error=f"Code execution failed: the interpreter stopped ({why}){detail}",
        )

    def _result(self, code: str, raw: dict[str, Any]) -> ToolResult:
        self.history.append(code)
        self.namespace = dict(raw["namespace"])
        body = {"is_final_answer": bool(raw["is_final_answer"]), "logs": raw["logs"], "output": raw["output"]}
        return ToolResult(content=json.dumps(body, sort_keys=True), error=raw["error"])

    def fingerprint(self) -> Fingerprint:
        parts = {k: v for k, v in self.sandbox.fingerprint().parts.items() if not k.startswith("exec:")}
        parts.update({f"ns:{name}": value for name, value in sorted(self.namespace.items())})
        return Fingerprint(digest=canonical_hash({"interpreter": INTERPRETER_VERSION, "parts": parts}), parts=parts)


class InterpreterToolbox:
    """The run's one tool, through the stateful tool boundary (a drift is a :class:`SandboxDrift`)."""

    def __init__(self, interpreter: Interpreter, log: RunLog) -> None:
        self.interpreter = interpreter
        self.log = log

    def schemas(self) -> list[dict[str, Any]]:
        return [json.loads(json.dumps(TOOL_SCHEMA))]

    def call(self, name: str, arguments: str, call_id: str | None) -> str:
        parsed = parse_tool_arguments(arguments)

        def run() -> ToolResult:
            if name != TOOL_NAME:
                return ToolResult(content="", error=f"ValueError: unknown tool {name!r}; the one tool is {TOOL_NAME}")
            code = (parsed or {}).get("code")
            if not isinstance(code, str):
                return ToolResult(content="", error="ValueError: give the code to run as the string argument 'code'")
            return self.interpreter.run(code)

        step = observe_tool_call(
            self.log,
            name=name,
            arguments=parsed,
            call_id=call_id,
            run=run,
            fingerprint=self.interpreter.fingerprint,
            drift=SandboxDrift,
        )
        return (step.content or "") if step.error is None else f"Error: {step.error}"


def parse_observation(content: str | None) -> dict[str, Any]:
    """A tool step's observation as (logs, output, is_final_answer); any other text is read as logs."""
    try:
        body = json.loads(content or "")
    except json.JSONDecodeError:
        return {"logs": content or "", "output": "None", "is_final_answer": False}
    return body if isinstance(body, dict) else {"logs": str(body), "output": "None", "is_final_answer": False}


__all__ = [
    "BASE_IMPORTS",
    "DATA_IMPORTS",
    "INTERPRETER_VERSION",
    "TOOL_NAME",
    "TOOL_SCHEMA",
    "Interpreter",
    "InterpreterToolbox",
    "authorized_imports",
    "parse_observation",
    "program_source",
]
