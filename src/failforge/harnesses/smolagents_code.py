"""``smolagents.code``: smolagents' own CodeAgent, its code executed through failforge's tool boundary.

Everything that makes a CodeAgent run what it is stays smolagents': its system prompt and templates, its
parser (``parse_code_blobs`` with its code-block tags), its ``fix_final_answer_code``, its memory and the
way it writes observations and errors back into the prompt, its closing ``provide_final_answer`` call at
``max_steps``. Only the executor is failforge's: :class:`BoundaryExecutor` is a smolagents
``PythonExecutor`` whose ``__call__`` sends each parsed code block to the environment's ``python_interpreter``
tool (the stateful interpreter of DA-Bench, in a sandbox), so every block is a recorded, replayed and
checked tool step, and smolagents' local executor never runs anything. The interpreter's own ``final_answer``
ends the run as smolagents' does.

The model is smolagents' ``OpenAIModel`` over the boundary client (``retry=False``: a boundary refusal
surfaces once). Tools besides ``final_answer`` are not offered: DA-Bench's agents had none.
"""

from __future__ import annotations

import json
from typing import Any

import openai
from pydantic import BaseModel, ConfigDict, Field

from failforge.harnesses._base import Harness
from failforge.plugins import harnesses

NAME = "smolagents.code"
TOOL = "python_interpreter"
#: What the DA-Bench interpreter allows beyond smolagents' base modules (kept equal to the environment's list).
DEFAULT_IMPORTS = ["numpy", "pandas", "scipy", "sklearn", "statsmodels", "json", "csv"]


class CodeAgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(default=8, ge=1, description="smolagents' max_steps (then its closing final-answer call)")
    max_tokens: int | None = Field(default=1024, description="max_tokens per model call (None: the endpoint's default)")
    temperature: float | None = Field(
        default=None, description="sampling temperature sent with every call (None: not sent)"
    )
    additional_authorized_imports: list[str] = Field(default_factory=lambda: list(DEFAULT_IMPORTS))
    flatten_messages: bool = Field(
        default=False,
        description=(
            "smolagents' flatten_messages_as_text: message contents as plain strings, not lists of parts "
            "(llama.cpp's server, the embedded model, refuses a system message given as parts with HTTP 500)"
        ),
    )


def _executor_class() -> type:
    from smolagents.local_python_executor import CodeOutput, PythonExecutor

    class BoundaryExecutor(PythonExecutor):
        """A smolagents executor: each code block is one ``python_interpreter`` call through the tool boundary."""

        def __init__(self, toolbox: Any) -> None:
            self.toolbox = toolbox
            self.calls = 0
            self.state: dict[str, Any] = {}

        def send_tools(self, tools: dict[str, Any]) -> None:
            # final_answer is the interpreter's own; a CodeAgent here is given no other tool.
            extra = sorted(set(tools) - {"final_answer"})
            if extra:
                raise ValueError(
                    f"smolagents.code runs code in the environment's interpreter and cannot offer tools {extra}"
                )

        def send_variables(self, variables: dict[str, Any]) -> None:
            if variables:
                raise ValueError("smolagents.code cannot send variables to the environment's interpreter")

        def __call__(self, code_action: str) -> Any:
            from failforge.environments.dabench import parse_observation

            call_id = f"call_{self.calls}"
            self.calls += 1
            self.toolbox.call(TOOL, json.dumps({"code": code_action}), call_id)
            step = self.toolbox.last_step()
            body = parse_observation(step.content if step is not None else None)
            self.state["_print_outputs"] = body.get("logs", "")
            if step is not None and step.error:
                raise RuntimeError(step.error)
            return CodeOutput(
                output=body.get("output"),
                logs=str(body.get("logs", "")),
                is_final_answer=bool(body.get("is_final_answer")),
            )

    return BoundaryExecutor


@harnesses.register(
    NAME,
    description="smolagents' CodeAgent (its prompts, parser, final_answer), code run in the environment's interpreter",
    requires=("smolagents",),
    environments=("dabench",),
)
class SmolagentsCodeAgent(Harness):
    name = NAME
    Config = CodeAgentConfig

    def run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Any) -> str | None:
        from smolagents import CodeAgent, OpenAIModel

        cfg = self.config
        assert isinstance(cfg, CodeAgentConfig)
        kwargs: dict[str, Any] = {}
        if cfg.max_tokens is not None:
            kwargs["max_tokens"] = cfg.max_tokens
        if cfg.temperature is not None:
            kwargs["temperature"] = cfg.temperature
        agent = CodeAgent(
            tools=[],
            model=OpenAIModel(
                model, client=client, retry=False, flatten_messages_as_text=cfg.flatten_messages, **kwargs
            ),
            executor=_executor_class()(toolbox),
            additional_authorized_imports=list(cfg.additional_authorized_imports),
            max_steps=cfg.max_steps,
            verbosity_level=-1,
        )
        result = agent.run(instruction)
        self._memory = agent.memory
        return None if result is None else str(result)


__all__ = ["NAME", "CodeAgentConfig", "SmolagentsCodeAgent"]
