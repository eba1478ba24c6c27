"""An MCP server written with the official Python SDK, for toolgate's gateway tests.

Usage: mcp_server.py stdio
       mcp_server.py http|sse PORT_FILE     (binds 127.0.0.1:0 and writes the port to PORT_FILE)

$MARKS, when set, is a directory where tools leave evidence the tests read: a call
that was cancelled writes `cancelled-<tag>`.
"""

import asyncio
import os
import socket
import sys
from typing import Annotated
from pathlib import Path

from pydantic import BaseModel

from mcp.server.mcpserver import Context, Elicit, ElicitationResult, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.utilities.types import Image
from mcp.types import ToolAnnotations

server = MCPServer("toolgate-test-server", version="1.0.0")
MARKS = Path(os.environ["MARKS"]) if os.environ.get("MARKS") else None


def mark(name, text=""):
    if MARKS is not None:
        (MARKS / name).write_text(text)


class Sum(BaseModel):
    sum: int


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> Sum:
    """Add two integers."""
    return Sum(sum=a + b)


@server.tool()
def echo(text: str) -> str:
    """Repeat the text."""
    mark("echo", text)
    return text


@server.tool()
def fail(message: str) -> str:
    """Always fails with the message."""
    raise ToolError(message)


@server.tool()
def long(lines: int) -> str:
    """Many numbered lines."""
    return "\n".join(f"line {i}" for i in range(1, lines + 1))


@server.tool()
async def sleep(seconds: float, tag: str = "sleep") -> str:
    """Sleep, then answer; records a cancellation."""
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        mark(f"cancelled-{tag}")
        raise
    return "slept"


@server.tool(annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False))
def wipe(target: str) -> str:
    """Pretends to delete the target."""
    mark("wiped", target)
    return f"wiped {target}"


@server.tool()
def picture() -> Image:
    """A tiny PNG."""
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
    )
    return Image(data=png, format="png")


async def announce_change(ctx: Context):
    """Tells the client the tool list changed, as its version wants: on the session
    before 2026-07-28, on its `subscriptions/listen` stream at 2026-07-28."""
    if ctx.protocol_version == "2026-07-28":
        await ctx.notify_tools_changed()
    else:
        await ctx.session.send_tool_list_changed()


def added_later(word: str) -> str:
    """Added at run time."""
    return f"later: {word}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Registers the tool `added_later` and tells the client the list changed."""
    server.add_tool(added_later)
    await announce_change(ctx)
    return "grown"


@server.tool()
async def shrink(ctx: Context) -> str:
    """Removes `echo` and tells the client the list changed."""
    server.remove_tool("echo")
    await announce_change(ctx)
    return "shrunk"


class Name(BaseModel):
    name: str
    age: int = 30


def asked_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool()
async def ask_name(answer: Annotated[ElicitationResult[Name], Resolve(asked_name)]) -> str:
    """Asks the person for their name."""
    # The SDK asks as the connection's version wants: an elicitation/create request in
    # the middle of the call before 2026-07-28, an input round (InputRequiredResult) at it.
    if answer.action == "accept" and answer.data is not None:
        return f"hello {answer.data.name} ({answer.data.age})"
    return f"no name ({answer.action})"


@server.tool()
def crash() -> str:
    """Exits the whole server in the middle of the call."""
    mark("crashed")
    os._exit(3)


def serve_socket(app):
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    Path(sys.argv[2]).write_text(str(port))
    config = uvicorn.Config(app, log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if os.environ.get("MCP_LEGACY_ONLY"):
        # A server of MCP 2025-11-25 and before: every connection is a legacy one (the
        # initialize handshake); `server/discover` is a method it does not know.
        import mcp.server.runner

        mcp.server.runner._has_modern_envelope = lambda params: False
    if mode == "stdio":
        server.run("stdio")
    elif mode == "http":
        serve_socket(server.streamable_http_app())
    elif mode == "sse":
        serve_socket(server.sse_app())
    else:
        sys.exit(f"unknown mode {mode}")
