#!/usr/bin/env bash
# Import the trajectory-attribution fixture cases (one folder per source), export them back, run the
# component-level likelihood baselines on the embedded model and score them; prints what it measured.
# Usage: scripts/components_fixture_run.sh [CASES_DIR] [OUT_DIR]   (CASES_DIR may be a clone of the release)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
cases="${1:-$here/tests/fixtures/attribution/trajectory_attribution}"
out="${2:-$(mktemp -d)}"
mkdir -p "$out"
cd "$out"
python3 -m failforge import -f trajectory-attribution "$cases" -o records.jsonl --summary import.json || echo "(some cases were skipped: see above)"
python3 -m failforge export -f trajectory-attribution records.jsonl -o export
python3 -m failforge import -f trajectory-attribution export -o reimported.jsonl
python3 - <<'PY'
import json
a = [json.loads(l) for l in open("records.jsonl")]
b = {r["id"]: r for r in map(json.loads, open("reimported.jsonl"))}
same = sum(1 for r in a if b.get(r["id"], {}).get("components") == r["components"])
print(f"round trip: {same} of {len(a)} records keep target, primary and chains")
PY
for method in incremental leave-one-out; do
  python3 -m failforge attribute records.jsonl --method "$method" -o "run-$method"
  python3 -m failforge score records.jsonl "run-$method" --json "score-$method.json"
  python3 - "$method" <<'PY'
import json, sys
m = json.load(open(f"score-{sys.argv[1]}.json"))["components"]["overall"]
print(f"{sys.argv[1]}: N {m['n']} top-1 {m['top1']} top-3 {m['top3']} MRR {m['mrr']}"
      f" attack F1 {m['attack_chain']['f1']} exec F1 {m['execution_chain']['f1']}")
PY
done
echo "outputs: $out"
