"""
Drives a configuration service through TrustGraph's own clients and
backend, the way its processors do. Used by the interop tests.

Reads one JSON command per line on stdin, runs them in order, and prints
one JSON line per command:
  {"op": "put", "workspace": w, "values": [[type, key, value], ...]}  AsyncConfigClient.put_many
  {"op": "get", "workspace": w, "type": t, "key": k}                  AsyncConfigClient.get -> {"value"}
  {"op": "list", "workspace": w, "type": t}                           AsyncConfigClient.keys -> {"keys"}
  {"op": "delete", "workspace": w, "keys": [[type, key], ...]}        AsyncConfigClient.delete_many
  {"op": "request", "request": {...ConfigRequest fields...}}          -> the ConfigResponse, as on the wire
  {"op": "agent-tools"}   what TrustGraph's ReAct agent loads: it fetches "tool" and
                          "tool-service" as AsyncProcessor does at startup and runs the
                          agent's own on_tools_config -> {"workspaces": {w: {tool: {...}}}, "errors": [...]}
A refused call prints {"error": "<the client's exception>"}.
"""

import argparse
import asyncio
import functools
import json
import logging
import os
import sys
import traceback

from trustgraph.base.async_config_client import AsyncConfigClient
from trustgraph.base.async_processor import AsyncProcessor
from trustgraph.base.pubsub import get_async_pubsub
from trustgraph.base.serialization import dataclass_to_dict
from trustgraph.messaging.translators.config import ConfigRequestTranslator
from trustgraph.schema import config_request_queue, config_response_queue


class ErrorLog(logging.Handler):
    def __init__(self):
        super().__init__(logging.ERROR)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


async def agent_tools(client):
    # The agent's own loader, on an agent that was never started (no flows, no LLM).
    from trustgraph.agent.react.service import Processor as Agent
    agent = object.__new__(Agent)
    agent.config_key = "agent"
    agent.agents = {}
    errors = ErrorLog()
    logging.getLogger("trustgraph.agent.react.service").addHandler(errors)

    fetcher = object.__new__(AsyncProcessor)
    fetcher._fetch_type_workspace = functools.partial(AsyncProcessor._fetch_type_workspace, fetcher)
    per_ws, version = {}, 0
    for config_type in ("tool", "tool-service"):
        grouped, v = await AsyncProcessor._fetch_type_all_workspaces(fetcher, client, config_type)
        version = max(version, v)
        for ws, kv in grouped.items():
            per_ws.setdefault(ws, {})[config_type] = kv
    for ws, config in per_ws.items():
        await agent.on_tools_config(ws, config, version)

    workspaces = {}
    for ws, manager in agent.agents.items():
        tools = {}
        for name, tool in manager.tools.items():
            impl = tool.implementation
            tools[name] = {
                "description": tool.description,
                "arguments": [{"name": a.name, "type": a.type, "description": a.description} for a in tool.arguments],
                "implementation": getattr(impl, "func", impl).__name__,
                "settings": {k: v for k, v in getattr(impl, "keywords", {}).items() if k not in ("processor", "arguments")},
            }
        workspaces[ws] = tools
    return {"version": version, "workspaces": workspaces, "errors": errors.messages}


async def run(config, raw, command):
    op = command["op"]
    if op == "put":
        await config.put_many(command["workspace"], [tuple(v) for v in command["values"]])
        return {}
    if op == "get":
        return {"value": await config.get(command["workspace"], command["type"], command["key"])}
    if op == "list":
        return {"keys": await config.keys(command["workspace"], command["type"])}
    if op == "delete":
        await config.delete_many(command["workspace"], [tuple(k) for k in command["keys"]])
        return {}
    if op == "request":
        request = ConfigRequestTranslator().decode(command["request"])
        return {"response": dataclass_to_dict(await raw.request(request))}
    if op == "agent-tools":
        return await agent_tools(raw)
    raise ValueError(f"unknown op {op}")


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="rabbitmq")
    parser.add_argument("--rabbitmq-host", default="127.0.0.1")
    parser.add_argument("--pulsar-host", default="pulsar://127.0.0.1:6650")
    parser.add_argument("--timeout", type=float, default=20)
    args = parser.parse_args()

    commands = [json.loads(line) for line in sys.stdin if line.strip()]
    backend = get_async_pubsub(pubsub_backend=args.backend, rabbitmq_host=args.rabbitmq_host, pulsar_host=args.pulsar_host)
    config = await AsyncConfigClient.create(backend, config_request_queue, config_response_queue, timeout=args.timeout)
    try:
        for command in commands:
            try:
                result = await run(config, config._client, command)
            except Exception as e:
                result = {"error": str(e)}
            print(json.dumps(result), flush=True)
    finally:
        await config.close()
        await backend.close()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except BaseException:
        traceback.print_exc()
        os._exit(1)
    # Skip interpreter teardown: pulsar-client's native library can abort there
    # ("terminate called without an active exception") after all went well.
    sys.stdout.flush()
    os._exit(0)
