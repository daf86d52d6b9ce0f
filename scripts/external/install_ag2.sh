#!/usr/bin/env bash
# Run by install_external.sh; idempotent (make_venv keeps a venv whose python passes the check).
# examples/external/ag2_groupchat_team.py runs in it (tests/integration/test_external_ag2.py).
# AG2 classic (the `autogen` namespace: ConversableAgent, GroupChat/GroupChatManager, CaptainAgent), the
# framework of Who&When's Algorithm-Generated logs. ag2 >= 1.0 dropped that API (its `ag2` package has no
# GroupChat or CaptainAgent), and ag2 0.14.0 pins openai < 3, so it gets a venv of its own.
set -euo pipefail
source "$(dirname "$0")/venv.sh"
make_venv ag2 "import importlib.metadata as m; assert m.version('ag2') == '0.14.0'; from autogen import ConversableAgent, GroupChat, GroupChatManager; from autogen.agentchat.contrib.captainagent import CaptainAgent; import autogen.mcp" \
  "ag2[openai,mcp]==0.14.0"
