"""The screen a screenshot agent saw at the decisive step, with the seed's click and the injected click marked.

The image is the one in the decisive step's own request (read from the image store by its sha256);
the seed's click is a green ring, the injected click a red cross, so a P.2 record shows at a glance
where the agent should have pointed and where it did. None for a step whose request has no image.
"""

from __future__ import annotations

import base64
import io
from typing import Any

from failforge.images import ImageMissing, ImageStore, last_image
from failforge.trajectory import Step


def _point(step: Step | None) -> tuple[int, int] | None:
    for call in step.tool_calls if step is not None else []:
        args = call.parsed_arguments() or {}
        if call.name == "click" and isinstance(args.get("x"), int) and isinstance(args.get("y"), int):
            return int(args["x"]), int(args["y"])
    return None


def decisive_screenshot(original: Step | None, injected: Step | None, store: ImageStore | None = None) -> str | None:
    """A PNG data URL of the decisive step's screenshot with both clicks marked, or None."""
    source = original if original is not None and original.model_call is not None else injected
    if source is None or source.model_call is None:
        return None
    try:
        png = last_image(source.model_call.request, store or ImageStore())
    except ImageMissing:
        return None
    if png is None:
        return None
    from PIL import Image, ImageDraw

    image: Any = Image.open(io.BytesIO(png)).convert("RGB")
    draw = ImageDraw.Draw(image)
    seed_click, injected_click = _point(original), _point(injected)
    if seed_click is not None:
        x, y = seed_click
        draw.ellipse((x - 7, y - 7, x + 7, y + 7), outline=(0, 160, 0), width=2)
    if injected_click is not None:
        x, y = injected_click
        draw.line((x - 7, y - 7, x + 7, y + 7), fill=(220, 0, 0), width=3)
        draw.line((x - 7, y + 7, x + 7, y - 7), fill=(220, 0, 0), width=3)
    out = io.BytesIO()
    image.save(out, format="PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode("ascii")
