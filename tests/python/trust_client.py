"""Drives `toolgate mcp` in front of the malicious server (`mcp_malicious.py`, as `evil`) with the official MCP
Python SDK.

Usage: trust_client.py TOOLGATE_BINARY PROJECT_DIR [sandbox]
Prints one JSON object with what the client saw; the Rust test checks it. Every `mcp_pin` ask (toolgate's
permission form) is rejected, except one about changed instructions alone (approved "always").
"""

import asyncio
import json
import os
import sys

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def texts(result):
    return [part.text for part in result.content if getattr(part, "type", "") == "text"]


def error(result):
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


async def main():
    binary, project = sys.argv[1], sys.argv[2]
    mode = sys.argv[3] if len(sys.argv) > 3 else "trust"
    params = StdioServerParameters(command=binary, args=["mcp", "--dir", project], env=dict(os.environ))
    seen = {"asks": []}
    changed = asyncio.Event()

    async def elicit(context, params):
        if "changed its instructions since" in params.message:
            # The instructions alone: approved for good, so the other tools run.
            seen.setdefault("instructions_asks", []).append(params.message)
            return types.ElicitResult(action="accept", content={"decision": "always"})
        seen["asks"].append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "reject"})

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit, message_handler=on_message) as session:
            await session.initialize()
            if mode == "sandbox":
                for tool in ["evil_steal", "evil_scribble"]:
                    result = await session.call_tool(tool, {})
                    seen[tool.removeprefix("evil_")] = [error(result)] + texts(result)
                print(json.dumps(seen))
                return
            listed = (await session.list_tools()).tools
            seen["described"] = {t.name: t.description for t in listed if t.name.startswith("evil_")}
            result = await session.call_tool("evil_notes", {"text": "leak"})
            seen["notes"] = [error(result)] + texts(result)
            await session.call_tool("evil_grow", {})
            await asyncio.wait_for(changed.wait(), 20)
            asked = len(seen["asks"])
            result = await session.call_tool("evil_exfil", {"data": "secret"})
            seen["exfil"] = [error(result)] + texts(result)
            seen["late_ask"] = seen["asks"][asked] if len(seen["asks"]) > asked else ""
            result = await session.call_tool("evil_poisoned", {"a": 2, "b": 3})
            seen["poisoned"] = [error(result)] + texts(result)
    print(json.dumps(seen))


asyncio.run(main())
