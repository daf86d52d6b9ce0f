"""Finished proxy runs, kept durably: each one appended and fsynced the moment it finishes.

``runs.jsonl`` (the ``--output`` file) holds the runs that finished cleanly, one trajectory per line;
``runs.failed.jsonl`` beside it holds the ones that failed or drifted, with the failure in their
provenance. A SIGKILL loses no finished run, and a proxy started again on the same output knows the
runs it finished before (``GET /runs/{id}``, and as seeds by ``seed_id``).
"""

from __future__ import annotations

import threading
from pathlib import Path

from failforge.proxy._models import RunResult
from failforge.secrets import Redactor
from failforge.trajectory import Trajectory, append_jsonl, load_jsonl


def failed_path(output: Path) -> Path:
    return output.with_name(output.stem + ".failed" + (output.suffix or ".jsonl"))


class RunStore:
    """The finished runs of a proxy, in memory and (given ``output``) on disk."""

    def __init__(self, output: Path | None = None, *, redactor: Redactor | None = None) -> None:
        self.output = output
        self.failed = failed_path(output) if output is not None else None
        self.redactor = redactor or Redactor.for_run()
        self.results: dict[str, RunResult] = {}
        self.trajectories: dict[str, Trajectory] = {}
        self.problems: list[str] = []
        self._lock = threading.Lock()
        for path, status in ((self.output, "finished"), (self.failed, "failed")):
            if path is not None and path.is_file():
                good, bad = load_jsonl(path)
                self.problems += [str(b) for b in bad]
                for trajectory in good:
                    self._remember(
                        RunResult(run_id=trajectory.id, status=status, trajectory=trajectory.model_dump(mode="json")),  # type: ignore[arg-type]
                        trajectory,
                    )  # type: ignore[arg-type]

    def add(self, result: RunResult) -> None:
        """Keep a finished run: written first (one write + fsync), then served."""
        trajectory = Trajectory.model_validate(result.trajectory)
        if result.failure is not None:
            trajectory = trajectory.model_copy(
                update={"provenance": {**trajectory.provenance, "failure": result.failure.model_dump(mode="json")}}
            )
        path = self.failed if result.failure is not None else self.output
        if path is not None:
            append_jsonl(path, [trajectory], redact=self.redactor.text)
        with self._lock:
            self._remember(result, trajectory)

    def _remember(self, result: RunResult, trajectory: Trajectory) -> None:
        self.results[result.run_id] = result
        if result.status == "finished":
            self.trajectories[trajectory.id] = trajectory

    def result(self, run_id: str) -> RunResult | None:
        with self._lock:
            return self.results.get(run_id)

    def seed(self, seed_id: str) -> Trajectory | None:
        with self._lock:
            return self.trajectories.get(seed_id)

    def finished(self) -> list[RunResult]:
        with self._lock:
            return list(self.results.values())


__all__ = ["RunStore", "failed_path"]
