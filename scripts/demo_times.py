"""Every `failforge demo` on this machine, timed: the default (bundled AgentDojo seeds) and each environment's.

    PYTHONHASHSEED=0 python scripts/demo_times.py [--only tau2,bfcl] [--timeout 900] [--json out.json]

Each demo runs as a user runs it (`python -m failforge demo [--environment NAME]`, a fresh folder, the embedded
model), one after another; one line each: the wall time, its ratio to the 5-minute target, the exit code, the
attempts and gold the demo's manifest counts, the load average around it, and the demo's own last line (what it
says when nothing was kept). The load average matters: every live call is the 135M model on the same two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DEMOS = ["default", "agentdojo", "tau2", "bfcl", "textworld", "scienceworld", "miniwob", "humaneval", "dabench"]
TARGET_SECONDS = 300.0


def _one(name: str, timeout: float) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(prefix=f"demo-{name}-"))
    command = [sys.executable, "-m", "failforge", "demo", "-o", str(folder / "out")]
    if name != "default":
        command += ["--environment", name]
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=folder, capture_output=True, text=True, timeout=timeout, env={**os.environ, "COLUMNS": "200"}
        )
        code, text = done.returncode, done.stdout + done.stderr
    except subprocess.TimeoutExpired as exc:
        code, text = None, f"{exc.stdout or ''}{exc.stderr or ''}"
        text = text if isinstance(text, str) else ""
    seconds = time.monotonic() - started
    manifest = folder / "out" / "manifest.json"
    totals: dict[str, Any] = {}
    if manifest.exists():
        totals = (json.loads(manifest.read_text(encoding="utf-8")).get("result") or {}).get("totals") or {}
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return {
        "demo": name,
        "seconds": round(seconds, 1),
        "ratio_to_5_min": round(seconds / TARGET_SECONDS, 2),
        "exit": code,
        "totals": totals,
        "load_before": round(load_before, 1),
        "load_after": round(os.getloadavg()[0], 1),
        "last_line": lines[-1][:300] if lines else "",
        "folder": str(folder),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default=",".join(DEMOS))
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = []
    for name in args.only.split(","):
        row = _one(name, args.timeout)
        rows.append(row)
        t = row["totals"]
        print(
            f"{name:13s} {row['seconds']:7.1f} s  x{row['ratio_to_5_min']:.2f} of 5 min  exit {row['exit']}  "
            f"kept {t.get('kept', '?')} rejected {t.get('rejected', '?')} failed {t.get('failed', '?')}  "
            f"load {row['load_before']}->{row['load_after']}  | {row['last_line'][:140]}",
            flush=True,
        )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
