"""Tool boundary cache for stateless tools (search, HTTP fetch, page loads).

Calls are keyed by SHA-256 of the canonical JSON of ``{tool, version, args}`` with volatile
fields masked and secrets dropped; modes ``record`` / ``replay`` / ``off`` follow vcrpy.
"""

from failforge.cache._store import CacheEntry, CacheMode, ToolCache

__all__ = ["CacheEntry", "CacheMode", "ToolCache"]
