"""A computer-use agent on MiniWoB++: it sees screenshots and acts by pixel coordinates.

Each observation goes to the model as an OpenAI ``image_url`` content part (a PNG data URL), alone
(``observation="image"``) or beside the DOM text (``"image+dom"``); ``"dom"`` is the text-only
fallback for a model that rejects images. The environment must run the coordinate action space
(``action_space="coordinate"``: click(x, y), type, key, scroll, answer), which also screenshots the
page after every action. The boundary stores each screenshot once by SHA-256 and hashes requests on
that hash (:mod:`failforge.images`), so replay checks every screenshot byte for byte.

Only the latest screenshot stays an image in the conversation; earlier ones are dropped
(their text stays) (a real model is charged per image, and the request stays the same size every step).
"""

from __future__ import annotations

from typing import Any, Literal

import openai
from pydantic import BaseModel, Field

from failforge.environments import Toolbox
from failforge.errors import ConfigError
from failforge.harnesses._base import Harness
from failforge.images import image_part
from failforge.plugins import harnesses
from failforge.roster import AgentProfile, single_agent_roster

PAGE_HEADER = "\n\nPage:\n"
VISION_SYSTEM_PROMPT = (
    "You operate a web page shown to you as a screenshot (pixel (0, 0) is its top-left corner) to complete the user's"
    " task. Act with the tools, one call at a time: click(x, y) clicks at a pixel, type(text) types into the focused"
    " element, key(key) presses a key, scroll(x, y, dx, dy) scrolls, answer(text) reports an answer. After each action"
    " you get a new screenshot. When the task is done, reply with a short final message and no tool call."
)


class VisionAgentConfig(BaseModel):
    system_prompt: str = VISION_SYSTEM_PROMPT
    observation: Literal["image", "image+dom", "dom"] = "image"
    max_model_calls: int = Field(default=27, ge=1)
    temperature: float = Field(default=0.0, ge=0)
    max_tokens: int | None = Field(default=256, ge=1)
    seed: int | None = 0


@harnesses.register(
    "failforge.miniwob_vision",
    aliases=("vision",),
    environments=("miniwob",),
    description="screenshots to the model, coordinate actions (MiniWoB++)",
)
class VisionAgent(Harness):
    name = "failforge.miniwob_vision"
    Config = VisionAgentConfig
    config: VisionAgentConfig

    def __init__(self, config: VisionAgentConfig | None = None) -> None:
        self.config = config or VisionAgentConfig()

    def roster(self) -> list[AgentProfile]:
        return single_agent_roster()

    def _observation(self, toolbox: Any, text: str, lead: str) -> dict[str, Any]:
        cfg = self.config
        if cfg.observation == "dom":
            return {"role": "user", "content": f"{lead}{PAGE_HEADER}{text}"}
        if not hasattr(toolbox, "screenshot_png"):
            raise ConfigError(
                "the vision harness needs an environment that shows screenshots (MiniWoB++ with"
                " action_space='coordinate')"
            )
        _, png = toolbox.screenshot_png()
        words = f"{lead}{PAGE_HEADER}{text}" if cfg.observation == "image+dom" else lead
        return {"role": "user", "content": [{"type": "text", "text": words}, image_part(png)]}

    def run(self, client: openai.OpenAI, model: str, instruction: str, toolbox: Toolbox) -> str | None:
        cfg = self.config
        utterance, _, page = instruction.partition(PAGE_HEADER)
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": cfg.system_prompt},
            self._observation(toolbox, page, utterance),
        ]
        extra: dict[str, Any] = {}
        if cfg.max_tokens is not None:
            extra["max_tokens"] = cfg.max_tokens
        if cfg.seed is not None:
            extra["seed"] = cfg.seed
        tools = toolbox.schemas()
        for _ in range(cfg.max_model_calls):
            completion = client.chat.completions.create(
                model=model,
                messages=messages,  # type: ignore[arg-type]
                tools=tools,  # type: ignore[arg-type]
                temperature=cfg.temperature,
                **extra,  # type: ignore[arg-type]
            )  # type: ignore[arg-type]
            message = completion.choices[0].message
            calls = [c for c in message.tool_calls or [] if c.type == "function"]
            entry: dict[str, Any] = {"role": "assistant", "content": message.content}
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in calls
                ]
            messages.append(entry)
            if not calls:
                return message.content
            result = ""
            for call in calls:
                result = toolbox.call(call.function.name, call.function.arguments or "", call.id)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": self._tool_text(result)})
            _drop_old_images(messages)
            messages.append(self._observation(toolbox, _page_of(result), "The screen after your action:"))
        return None

    def _tool_text(self, result: str) -> str:
        """What the model reads as the tool's answer: an image-only agent gets the error or 'done', not the DOM."""
        if self.config.observation != "image":
            return result
        first = result.split("\n", 1)[0]
        return first if first.startswith(("Error:", "answer recorded:")) else "done"


def _page_of(result: str) -> str:
    """The DOM text of a tool result (after an error line or a note, if any)."""
    head, sep, rest = result.partition("\n")
    return rest if sep and (head.startswith(("Error:", "clicked at", "answer recorded:")) or head == "") else result


def _drop_old_images(messages: list[dict[str, Any]]) -> None:
    """Earlier screenshots leave the conversation (their text parts stay)."""
    for i, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "image_url" for p in content):
            messages[i] = {
                **message,
                "content": [p for p in content if not (isinstance(p, dict) and p.get("type") == "image_url")],
            }


__all__ = ["VISION_SYSTEM_PROMPT", "VisionAgent", "VisionAgentConfig"]
