"""The scopes of "always" through the official MCP Python SDK's elicitation.

Usage:
  mcp_scopes.py TOOLGATE_BINARY PROJECT_DIR

Runs `touch a.txt` (answering the permission form "session"), `touch b.txt` (no form
expected: the session covers it), a write of `opencode.json` twice (a file that defines
the rules: answered "once" each time), and `echo hi` (answered "always"). Prints one
JSON object with every form seen; the Rust test checks it.
"""

import asyncio
import json
import os
import sys

import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def schema_of(params):
    schema = getattr(params, "requested_schema", None) or getattr(params, "requestedSchema", None)
    if hasattr(schema, "model_dump"):
        schema = schema.model_dump(by_alias=True, exclude_none=True)
    return schema or {}


def texts(result):
    return [part.text for part in result.content if getattr(part, "type", "") == "text"]


async def main():
    binary, project = sys.argv[1], sys.argv[2]
    forms = []
    answers = []

    async def elicit(context, params):
        schema = schema_of(params)
        forms.append({"message": params.message, "choices": schema["properties"]["decision"].get("enum")})
        return types.ElicitResult(action="accept", content={"decision": answers.pop(0)})

    params = StdioServerParameters(command=binary, args=["mcp", "--dir", project], env=dict(os.environ))
    seen = {}
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=elicit) as session:
            await session.initialize()
            answers.append("session")
            seen["first"] = texts(await session.call_tool("bash", {"command": "touch a.txt"}))
            seen["forms_after_first"] = len(forms)
            seen["second"] = texts(await session.call_tool("bash", {"command": "touch b.txt"}))
            seen["forms_after_second"] = len(forms)
            for name in ["write1", "write2"]:
                answers.append("once")
                seen[name] = texts(
                    await session.call_tool("write", {"path": "opencode.json", "content": "{}\n"})
                )
            answers.append("always")
            seen["echo"] = texts(await session.call_tool("bash", {"command": "echo hi"}))
    seen["forms"] = forms
    print(json.dumps(seen))


asyncio.run(main())
