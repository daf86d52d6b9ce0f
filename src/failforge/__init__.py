"""failforge: gold failure trajectories for LLM agents, by exact replay and on-policy error injection."""

__version__ = "0.1.0"
