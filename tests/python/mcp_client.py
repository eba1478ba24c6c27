"""Drives toolgate's MCP server with the official MCP Python SDK, as an editor would.

Usage:
  mcp_client.py stdio TOOLGATE_BINARY PROJECT_DIR
  mcp_client.py exec PROJECT_DIR CWD COMMAND [ARG...]
  mcp_client.py http URL TOKEN

`exec` starts `COMMAND ARG... mcp --dir PROJECT_DIR` in CWD, as an MCP client's config
would (`npx -y toolgate`, `uvx toolgate`).

Lists the tools, reads, edits (answering the permission form "once"), asks two
questions through the `question` tool (answering each form), and calls a denied
command. Prints one JSON object with what the client saw; the Rust test checks it.
"""

import asyncio
import json
import os
import sys

import mcp.types as types
from mcp import ClientSession


def flag(result, snake, camel):
    return bool(getattr(result, snake, getattr(result, camel, False)))


def texts(result):
    return [part.text for part in result.content if getattr(part, "type", "") == "text"]


def schema_of(params):
    schema = getattr(params, "requested_schema", None) or getattr(params, "requestedSchema", None)
    if hasattr(schema, "model_dump"):
        schema = schema.model_dump(by_alias=True, exclude_none=True)
    return schema or {}


async def drive(read, write):
    asked = []
    forms = []

    async def elicit(context, params):
        schema = schema_of(params)
        properties = schema.get("properties", {})
        if "decision" in properties:
            asked.append(params.message)
            return types.ElicitResult(action="accept", content={"decision": "once"})
        # A question form: pick from the enum (the first option, or the first two of
        # a multiple choice) and add words of our own.
        forms.append({"message": params.message, "schema": schema})
        answer = properties.get("answer", {})
        if answer.get("type") == "array":
            choice = answer["items"]["enum"][:2]
        else:
            choice = answer.get("enum", [None])[0]
        return types.ElicitResult(action="accept", content={"answer": choice, "other": "and tea"})

    async with ClientSession(read, write, elicitation_callback=elicit) as session:
        await session.initialize()
        listed = await session.list_tools()
        read_result = await session.call_tool("read", {"path": "hello.txt"})
        edit_result = await session.call_tool(
            "edit", {"path": "hello.txt", "oldString": "hello", "newString": "goodbye"}
        )
        question = await session.call_tool(
            "question",
            {
                "questions": [
                    {
                        "question": "Which colour?",
                        "header": "Colour",
                        "options": [
                            {"label": "Blue", "description": "calm"},
                            {"label": "Red", "description": "loud"},
                        ],
                    },
                    {
                        "question": "Which languages?",
                        "header": "Languages",
                        "multiple": True,
                        "options": [
                            {"label": "Rust", "description": "fast"},
                            {"label": "Go", "description": "simple"},
                            {"label": "C", "description": "old"},
                        ],
                    },
                ]
            },
        )
        denied = await session.call_tool("bash", {"command": "rm -rf build"})
        # Approved through the form; the SDK checks the structured content against the
        # listed output schema.
        echoed = await session.call_tool("bash", {"command": "echo structured", "description": "echo"})
    return {
        "tools": [tool.name for tool in listed.tools],
        "read": texts(read_result),
        "read_error": flag(read_result, "is_error", "isError"),
        "edit": texts(edit_result),
        "edit_error": flag(edit_result, "is_error", "isError"),
        "asked": asked,
        "forms": forms,
        "question": texts(question),
        "question_error": flag(question, "is_error", "isError"),
        "denied": texts(denied),
        "denied_error": flag(denied, "is_error", "isError"),
        "echoed": texts(echoed),
        "echoed_error": flag(echoed, "is_error", "isError"),
        "echoed_structured": getattr(echoed, "structured_content", getattr(echoed, "structuredContent", None)),
        "read_structured": getattr(read_result, "structured_content", getattr(read_result, "structuredContent", None)),
        "described": {
            tool.name: {
                "title": tool.title,
                "annotations": tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None,
                "outputSchema": getattr(tool, "output_schema", getattr(tool, "outputSchema", None)),
            }
            for tool in listed.tools
        },
    }


async def main():
    mode = sys.argv[1]
    if mode == "stdio":
        from mcp.client.stdio import StdioServerParameters, stdio_client

        binary, project = sys.argv[2], sys.argv[3]
        params = StdioServerParameters(command=binary, args=["mcp", "--dir", project], env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            seen = await drive(read, write)
    elif mode == "exec":
        from mcp.client.stdio import StdioServerParameters, stdio_client

        project, cwd, command, args = sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
        params = StdioServerParameters(
            command=command, args=args + ["mcp", "--dir", project], env=dict(os.environ), cwd=cwd
        )
        async with stdio_client(params) as (read, write):
            seen = await drive(read, write)
    else:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        url, token = sys.argv[2], sys.argv[3]
        client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with client:
            async with streamable_http_client(url, http_client=client) as (read, write):
                seen = await drive(read, write)
    print(json.dumps(seen))


asyncio.run(main())
