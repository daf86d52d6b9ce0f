#!/usr/bin/env bash
# crewAI (its native OpenAI provider on chat completions, tools from failforge's MCP server through the
# Agent's own `mcps=` field: the `mcp` SDK is one of crewai's core dependencies, no extra or
# crewai-tools needed). crewAI pins openai/pydantic/mcp<2 apart from failforge's, hence its own venv.
set -euo pipefail
source "$(dirname "$0")/venv.sh"
make_venv crewai "import importlib.metadata as m; assert m.version('crewai') == '1.15.30'; import crewai, crewai.mcp, crewai.llms.providers.openai.completion" \
  "crewai==1.15.30"
