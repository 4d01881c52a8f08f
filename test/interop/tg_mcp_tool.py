"""
TrustGraph's own MCP tool service (trustgraph-flow agent/mcp_tool, needs
the `mcp` package) calling tools, the way an agent's `mcp-tool` tools reach
them. Used by the interop tests.

--mcp is the `mcp` config type as TrustGraph stores it: {key: entry, ...}.
Reads one JSON call per line on stdin, {"name": <mcp key>, "parameters": {...}},
runs them in order and prints one JSON line per call:
  {"output": <what the service returns>} or {"error": "<its exception>"}
"""

import argparse
import asyncio
import json
import sys

from trustgraph.agent.mcp_tool.service import Service


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mcp", required=True)
    args = parser.parse_args()

    # The service's own handler loads the config, as on a config push; no broker needed to call out.
    service = object.__new__(Service)
    service.mcp_services = {}
    await service.on_mcp_config("default", {"mcp": {k: json.dumps(v) for k, v in json.loads(args.mcp).items()}}, 1)

    for line in sys.stdin:
        if not line.strip():
            continue
        call = json.loads(line)
        try:
            result = {"output": await service.invoke_tool("default", call["name"], call.get("parameters", {}))}
        except Exception as e:
            # The MCP client's task groups nest the cause in exception groups.
            while isinstance(e, BaseExceptionGroup):
                e = e.exceptions[0]
            result = {"error": f"{type(e).__name__}: {e}"}
        print(json.dumps(result), flush=True)


asyncio.run(main())
