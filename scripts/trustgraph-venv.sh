#!/usr/bin/env bash
# TrustGraph's own Python packages, for the interop tests: a virtual
# environment with trustgraph-base (client, backends) and trustgraph-flow
# (its joke service; --no-deps skips its LLM and database packages), and the
# MCP client its mcp-tool service uses.
# Kept outside the clone so later runs reuse it.
#
#   scripts/trustgraph-venv.sh    create it if missing; prints its path
set -euo pipefail
VERSION=2.11.1
VENV=${TOOLBRIDGE_TRUSTGRAPH_VENV:-$HOME/.cache/toolbridge/tg-venv}

if ! "$VENV/bin/python" -c "import trustgraph.tool_service.joke.service, mcp" 2>/dev/null; then
  echo "creating $VENV (trustgraph-base and trustgraph-flow $VERSION)" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "trustgraph-base==$VERSION"
  "$VENV/bin/pip" install -q --no-deps "trustgraph-flow==$VERSION"
  "$VENV/bin/pip" install -q "mcp==2.3.0"
fi
echo "$VENV"
