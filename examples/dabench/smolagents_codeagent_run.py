"""Run a real smolagents CodeAgent (its own LocalPythonExecutor) on one task and save its memory for
``failforge import RUN --format smolagents``. Run in a Python that has smolagents and pandas; the working
directory must hold the table under ./data/.

    python smolagents_codeagent_run.py --base-url URL --model ID --task-file TASK.txt --output run.json
"""

from __future__ import annotations

import argparse
import json
from importlib.util import find_spec

from smolagents import CodeAgent, OpenAIModel

#: DA-Bench's allow-list beyond smolagents' base modules, as failforge's harness has it; smolagents refuses to
#: authorise a module that is not installed, so the ones missing here are left out.
IMPORTS = [m for m in ("numpy", "pandas", "scipy", "sklearn", "statsmodels", "json", "csv") if find_spec(m) is not None]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--task-file", required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--source", default="")
    args = parser.parse_args()
    task = open(args.task_file, encoding="utf-8").read()
    model = OpenAIModel(args.model, api_base=args.base_url, api_key="loopback")
    agent = CodeAgent(tools=[], model=model, additional_authorized_imports=IMPORTS, max_steps=6, verbosity_level=0)
    agent.run(task)
    with open(args.output, "w", encoding="utf-8") as handle:
        json.dump(
            {"steps": agent.memory.get_full_steps(), "model": args.model, "source": args.source},
            handle,
            indent=1,
            default=str,
        )


if __name__ == "__main__":
    main()
