"""Produce a real smolagents run on DA-Bench question 0 for ``failforge import --format smolagents``.

smolagents' own CodeAgent, with its own LocalPythonExecutor (not failforge's interpreter), runs in a separate
Python (``--python``: one with smolagents and Debian's pandas 1.5.3 / numpy 1.24.2, the versions the sandbox
has) against a deterministic loopback model (``failforge.testing.LoopbackModelServer``) whose answers are a
pure function of the request: load the table, compute the mean fare, answer. The analyst code computes the
answer from the table; nothing is read from the label. The saved memory is what the fixture
``tests/fixtures/dabench/smolagents_run_q0.json`` is.

    PYTHONPATH=src python3 scripts/dabench_real_smolagents_run.py --python /path/to/venv/bin/python --output run.json
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from failforge.environments.dabench import instruction_for
from failforge.environments.dabench._data import question, resolve_dir, tables_dir
from failforge.testing.model_servers import LoopbackModelServer

QUESTION = "dabench-0"
MODEL = "loopback-analyst"
STEPS = [
    (
        "Thought: I load the table and look at its columns.\n<code>\nimport pandas as pd\n"
        "df = pd.read_csv('data/test_ave.csv')\n"
        "print(df.shape)\nprint(df.columns.tolist())\n</code>"
    ),
    (
        "Thought: The mean of the Fare column, rounded to two decimals.\n<code>\nmean_fare = round(df['Fare'].mean(),"
        " 2)\nprint(mean_fare)\n</code>"
    ),
    "Thought: I answer in the required format.\n<code>\nfinal_answer(f'@mean_fare[{mean_fare}]')\n</code>",
]


def analyst(body: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]] | None]:
    """The k-th answer for a request carrying k earlier assistant turns."""
    turns = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    return STEPS[min(turns, len(STEPS) - 1)], None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", required=True, help="a Python with smolagents[openai] and pandas")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    root = resolve_dir(args.data_dir)
    q = question(root, QUESTION)
    agent_script = Path(__file__).resolve().parents[1] / "examples" / "dabench" / "smolagents_codeagent_run.py"
    with tempfile.TemporaryDirectory() as work, LoopbackModelServer(policy=analyst) as server:
        (Path(work) / "data").mkdir()
        shutil.copy(tables_dir(root) / q.file_name, Path(work) / "data" / q.file_name)
        task = Path(work) / "task.txt"
        task.write_text(instruction_for(q), encoding="utf-8")
        source = (
            f"smolagents CodeAgent (LocalPythonExecutor) via {args.python}, model {MODEL}: "
            "failforge.testing.LoopbackModelServer playing scripts/dabench_real_smolagents_run.py's analyst"
        )
        subprocess.run(
            [
                args.python,
                str(agent_script),
                "--base-url",
                server.base_url,
                "--model",
                MODEL,
                "--task-file",
                str(task),
                "--output",
                str(Path(args.output).resolve()),
                "--source",
                source,
            ],
            check=True,
            cwd=work,
        )
    print(f"saved {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
