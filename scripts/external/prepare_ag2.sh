#!/usr/bin/env bash
# Not run by install_external.sh (which runs install_*.sh): no adapter uses this venv yet (issue 25). Run it by hand.
# AG2 classic (the `autogen` namespace: ConversableAgent, GroupChat/GroupChatManager, CaptainAgent), the
# framework of Who&When's Algorithm-Generated logs. ag2 >= 1.0 dropped that API (its `ag2` package has no
# GroupChat or CaptainAgent), and ag2 0.14.0 pins openai < 3, so it gets a venv of its own.
set -euo pipefail
source "$(dirname "$0")/venv.sh"
make_venv ag2 "import importlib.metadata as m; assert m.version('ag2') == '0.14.0'; from autogen import ConversableAgent, GroupChat, GroupChatManager; from autogen.agentchat.contrib.captainagent import CaptainAgent; import autogen.mcp" \
  "ag2[openai,mcp]==0.14.0"
