"""Drives toolgate's MCP server with the official MCP Python SDK's `Client` at a chosen
protocol version, as a 2026-07-28 editor would (or one pinned to the handshake).

Usage:
  mcp_modern.py stdio MODE TOOLGATE_BINARY PROJECT_DIR
  mcp_modern.py http MODE URL TOKEN

MODE is the SDK's `mode`: `2026-07-28` (the stateless core, no initialize), `legacy`
(the initialize handshake) or `auto` (server/discover, falling back to initialize).
Lists the tools, reads `hello.txt`, and calls an edit the rules ask for and a command
they deny. Prints one JSON object with what the client saw; the Rust test checks it.
"""

import asyncio
import json
import os
import sys

from mcp import Client


def texts(result):
    return [part.text for part in result.content if getattr(part, "type", "") == "text"]


def flag(result):
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


async def drive(client):
    listed = await client.list_tools()
    read = await client.call_tool("read", {"path": "hello.txt"})
    edit = await client.call_tool("edit", {"path": "hello.txt", "oldString": "hello", "newString": "goodbye"})
    denied = await client.call_tool("bash", {"command": "rm -rf build"})
    return {
        "protocol": client.protocol_version,
        "tools": [tool.name for tool in listed.tools],
        "read": texts(read),
        "read_error": flag(read),
        "edit": texts(edit),
        "edit_error": flag(edit),
        "denied": texts(denied),
        "denied_error": flag(denied),
    }


async def main():
    transport, mode = sys.argv[1], sys.argv[2]
    if transport == "stdio":
        from mcp.client.stdio import StdioServerParameters

        binary, project = sys.argv[3], sys.argv[4]
        server = StdioServerParameters(command=binary, args=["mcp", "--dir", project], env=dict(os.environ))
        async with Client(server, mode=mode) as client:
            seen = await drive(client)
    else:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        url, token = sys.argv[3], sys.argv[4]
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http:
            async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                seen = await drive(client)
    print(json.dumps(seen))


asyncio.run(main())
