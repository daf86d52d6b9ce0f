#!/usr/bin/env bash
# pydantic-ai (chat completions through its OpenAI provider, tools from failforge's MCP server).
set -euo pipefail
source "$(dirname "$0")/venv.sh"
make_venv pydantic-ai "import importlib.metadata as m; assert m.version('pydantic-ai-slim') == '2.68.0'; import pydantic_ai.mcp, pydantic_ai.models.openai" \
  "pydantic-ai-slim[openai,mcp]==2.68.0"
