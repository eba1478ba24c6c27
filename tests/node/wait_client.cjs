// Calls one tool of `toolgate serve`'s /mcp with the official TypeScript SDK, as an
// editor would: a client WITHOUT elicitation, the SDK's default 60 s request timeout,
// and `resetTimeoutOnProgress`, so the call lasts as long as progress keeps coming.
//
// Usage: node wait_client.cjs URL TOKEN TOOL ARGUMENTS_JSON
// Prints one JSON object: the result (or the error), every progress notification with
// the time it came, and whether ending the session (DELETE /mcp) went through.
// `NPM_TOOLS` names the directory whose node_modules hold the SDK.

"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");

const tools = createRequire(path.join(process.env.NPM_TOOLS, "package.json"));
const { Client } = tools("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = tools("@modelcontextprotocol/sdk/client/streamableHttp.js");

async function main() {
  const [url, token, tool, args] = process.argv.slice(2);
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: "waiting-client", version: "1.0.0" }, { capabilities: {} });
  await client.connect(transport);
  const started = Date.now();
  const progress = [];
  let result = null;
  let error = null;
  try {
    result = await client.callTool({ name: tool, arguments: JSON.parse(args) }, undefined, {
      onprogress: (p) => progress.push({ progress: p.progress, message: p.message, at: (Date.now() - started) / 1000 }),
      resetTimeoutOnProgress: true,
    });
  } catch (e) {
    error = String((e && e.message) || e);
  }
  const seconds = (Date.now() - started) / 1000;
  let ended = null;
  try {
    await transport.terminateSession();
    ended = "ok";
  } catch (e) {
    ended = String((e && e.message) || e);
  }
  await client.close();
  process.stdout.write(JSON.stringify({ result, error, progress, seconds, ended }) + "\n");
}

main().catch((e) => {
  process.stderr.write(`${(e && e.stack) || e}\n`);
  process.exit(1);
});
