"""Exporters from failforge's native JSONL to the public formats failure-attribution research uses."""

from failforge.exporters.whowhen_pro import RELEASE_CODES, to_whowhen, to_whowhen_pro

__all__ = ["RELEASE_CODES", "to_whowhen", "to_whowhen_pro"]
