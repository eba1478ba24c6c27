"""Drives `toolgate mcp` with the official MCP Python SDK, as an editor would.

Usage: mcp_client.py TOOLGATE_BINARY PROJECT_DIR
Prints one JSON object with what the client saw; the Rust test checks it.
"""

import asyncio
import json
import os
import sys

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def flag(result, snake, camel):
    return bool(getattr(result, snake, getattr(result, camel, False)))


def texts(result):
    return [part.text for part in result.content if getattr(part, "type", "") == "text"]


async def main():
    binary, project = sys.argv[1], sys.argv[2]
    params = StdioServerParameters(command=binary, args=["mcp", "--dir", project], env=dict(os.environ))
    asked = []

    async def elicit(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"decision": "once"})

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit) as session:
            await session.initialize()
            listed = await session.list_tools()
            read_result = await session.call_tool("read", {"path": "hello.txt"})
            edit_result = await session.call_tool(
                "edit", {"path": "hello.txt", "oldString": "hello", "newString": "goodbye"}
            )
            denied = await session.call_tool("bash", {"command": "rm -rf build"})
    print(
        json.dumps(
            {
                "tools": [tool.name for tool in listed.tools],
                "read": texts(read_result),
                "read_error": flag(read_result, "is_error", "isError"),
                "edit": texts(edit_result),
                "edit_error": flag(edit_result, "is_error", "isError"),
                "asked": asked,
                "denied": texts(denied),
                "denied_error": flag(denied, "is_error", "isError"),
            }
        )
    )


asyncio.run(main())
