#!/usr/bin/env bash
# agno (its OpenAI chat-completions model, tools from failforge's MCP server through agno's MCPTools).
set -euo pipefail
source "$(dirname "$0")/venv.sh"
make_venv agno "import importlib.metadata as m; assert m.version('agno') == '3.1.10'; import agno.team, agno.tools.mcp, agno.models.openai" \
  "agno[openai,mcp]==3.1.10"
