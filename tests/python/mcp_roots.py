"""Starts `toolgate mcp` without `--dir`, in another directory, with the official MCP
Python SDK as a client that names its workspace as its roots (as editors do).

Usage: mcp_roots.py TOOLGATE_BINARY CWD ROOT_DIR
The client's roots are ROOT_DIR, then CWD (both file:// URLs, as MCP wants them). Prints one JSON object with what the client saw; the Rust test checks it.
"""

import asyncio
import json
import os
import sys
from pathlib import Path

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def main():
    binary, cwd, root = sys.argv[1], sys.argv[2], sys.argv[3]
    asked = []

    async def roots(context):
        asked.append(True)
        return types.ListRootsResult(
            roots=[
                types.Root(uri=Path(root).as_uri(), name="workspace"),
                types.Root(uri=Path(cwd).as_uri(), name="elsewhere"),
            ]
        )

    params = StdioServerParameters(command=binary, args=["mcp"], cwd=cwd, env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, list_roots_callback=roots) as session:
            await session.initialize()
            read_result = await session.call_tool("read", {"path": "hello.txt"})
            glob_result = await session.call_tool("glob", {"pattern": "*.txt"})
    texts = lambda result: [part.text for part in result.content if getattr(part, "type", "") == "text"]
    print(
        json.dumps(
            {
                "asked": len(asked),
                "read": texts(read_result),
                "read_error": bool(getattr(read_result, "is_error", getattr(read_result, "isError", False))),
                "glob_structured": getattr(glob_result, "structured_content", getattr(glob_result, "structuredContent", None)),
            }
        )
    )


asyncio.run(main())
