"""scripts/compare_auditor_decisions.py on the bundled gold and seeds with the loopback auditor judge.

The loopback judge's states follow the step's form (a tool call: act; the last audited step: stop; a
text ending in '?': ask; else act). The bundled gold (12 trajectories) has 14 agent steps: 2 tool calls
(no error before them: the rules say act) and 12 final answers (stop), so both agree on all 14 (kappa 1).
The 18 bundled seeds have 110 agent steps: 29 act, 18 stop, and 63 mid-run messages to another agent
that the rules leave undecided and the loopback judge calls act. Counted with `decisions()` by hand in
the session that wrote this test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_bundled_gold_and_seeds_with_the_loopback_auditor(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONHASHSEED="0")
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "compare_auditor_decisions.py"), "--json", str(tmp_path / "r.json")],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    gold, seeds = report["gold"], report["seeds"]
    assert (gold["records"], gold["steps"], gold["both_decided"], gold["agreement"], gold["kappa"]) == (
        12,
        14,
        14,
        1.0,
        1.0,
    )
    assert gold["confusion"] == {"act": {"act": 2}, "stop": {"stop": 12}}
    assert (seeds["records"], seeds["steps"], seeds["both_decided"], seeds["rules_undecided"]) == (18, 110, 47, 63)
    assert seeds["auditor_on_undecided"] == {"act": 63} and seeds["confusion"] == {
        "act": {"act": 29},
        "stop": {"stop": 18},
    }
