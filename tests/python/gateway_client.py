"""Drives `toolgate mcp` as an MCP gateway with the official MCP Python SDK.

Usage: gateway_client.py TOOLGATE_BINARY PROJECT_DIR MARKS_DIR
The project's config names the test server as `py`, with a 5 s request timeout. Prints one JSON object with what
the client saw; the Rust test checks it.
"""

import asyncio
import json
import os
import sys
from pathlib import Path

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def texts(result):
    return [part.text for part in result.content if getattr(part, "type", "") == "text"]


def error(result):
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


async def wait_for(event, seconds=20):
    await asyncio.wait_for(event.wait(), seconds)


async def appears(path, seconds=20):
    for _ in range(seconds * 50):
        if path.exists():
            return True
        await asyncio.sleep(0.02)
    return False


async def main():
    binary, project, marks = sys.argv[1], sys.argv[2], Path(sys.argv[3])
    params = StdioServerParameters(command=binary, args=["mcp", "--dir", project], env=dict(os.environ))
    seen = {"elicited": [], "list_changed": 0}
    changed = asyncio.Event()

    seen["asks"] = []

    async def elicit(context, params):
        schema = params.requested_schema
        if hasattr(schema, "model_dump"):
            schema = schema.model_dump(by_alias=True, exclude_none=True)
        if "decision" in schema.get("properties", {}) and "added the tool `added_later`" in params.message:
            # A tool added after first use asks `mcp_pin`: approved once.
            seen.setdefault("pin_asks", []).append(params.message)
            return types.ElicitResult(action="accept", content={"decision": "once"})
        if "decision" in schema.get("properties", {}):
            # toolgate's own permission form (for `py_wipe`): rejected.
            seen["asks"].append({"message": params.message, "schema": schema})
            return types.ElicitResult(action="accept", content={"decision": "reject"})
        seen["elicited"].append({"message": params.message, "schema": schema})
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    def described(tool):
        annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
        return {
            "title": tool.title,
            "annotations": annotations,
            "outputSchema": getattr(tool, "output_schema", getattr(tool, "outputSchema", None)),
        }

    async def on_message(message):
        if isinstance(message, types.ToolListChangedNotification):
            seen["list_changed"] += 1
            changed.set()

    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit, message_handler=on_message) as session:
            await session.initialize()
            listed = (await session.list_tools()).tools
            before = [t.name for t in listed]
            seen["before"] = before
            seen["described"] = {t.name: described(t) for t in listed if t.name in ("py_add", "py_wipe", "read")}
            added = await session.call_tool("py_add", {"a": 2, "b": 40})
            seen["add"] = texts(added)
            seen["add_structured"] = getattr(added, "structured_content", getattr(added, "structuredContent", None))
            wiped = await session.call_tool("py_wipe", {"target": "build"})
            seen["wipe"] = [error(wiped)] + texts(wiped)
            grown = await session.call_tool("py_grow", {})
            seen["grow"] = texts(grown)
            await wait_for(changed)
            changed.clear()
            seen["after"] = [t.name for t in (await session.list_tools()).tools]
            seen["later"] = texts(await session.call_tool("py_added_later", {"word": "hi"}))
            seen["ask"] = texts(await session.call_tool("py_ask_name", {}))
            timed_out = await session.call_tool("py_sleep", {"seconds": 30, "tag": "timeout"})
            seen["timeout"] = [error(timed_out)] + texts(timed_out)
            seen["timeout_cancelled_upstream"] = await appears(marks / "cancelled-timeout")
            try:
                await asyncio.wait_for(session.call_tool("py_sleep", {"seconds": 30, "tag": "client"}), 2)
            except (asyncio.TimeoutError, TimeoutError):
                pass
            seen["client_cancel_reached_upstream"] = await appears(marks / "cancelled-client")
            first = await session.call_tool("py_crash", {})
            seen["crash1"] = [error(first)] + texts(first)
            seen["after_crash"] = texts(await session.call_tool("py_echo", {"text": "back"}))
            second = await session.call_tool("py_crash", {})
            seen["crash2"] = [error(second)] + texts(second)
            third = await session.call_tool("py_echo", {"text": "gone?"})
            seen["after_crash2"] = [error(third)] + texts(third)
    print(json.dumps(seen))


asyncio.run(main())
