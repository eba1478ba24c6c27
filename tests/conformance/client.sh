#!/usr/bin/env bash
# The client under test for `conformance client --command "bash client.sh"`: the suite
# appends the server URL and sets $MCP_CONFORMANCE_SCENARIO. This configures toolgate with
# that URL as the MCP server `conf` (in its global config: a project file's servers need
# trust) and drives it as a user would: `toolgate mcp list` for
# the handshake, `toolgate call conf_<tool> --auto` for the scenarios that call a tool.
# toolgate negotiates the version itself (server/discover offering 2026-07-28, else
# initialize), so $MCP_CONFORMANCE_PROTOCOL_VERSION is not passed on: the suite's server
# for each version is what decides.
# $TOOLGATE_BIN names the binary under test.
set -euo pipefail
url="${*: -1}"
toolgate="${TOOLGATE_BIN:?set TOOLGATE_BIN to the toolgate binary}"
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
mkdir -p "$home/project" "$home/data" "$home/config"
printf '{"mcp": {"conf": {"type": "remote", "url": "%s", "timeout": 20000}}}\n' "$url" >"$home/config/toolgate.json"
export TOOLGATE_DATA_DIR="$home/data" TOOLGATE_CONFIG_DIR="$home/config"
run() { "$toolgate" "$@" --dir "$home/project"; }
case "${MCP_CONFORMANCE_SCENARIO:-}" in
# Both versions (the suite runs them at the one it is asked for).
tools_call) run call conf_add_numbers '{"a": 2, "b": 3}' --auto ;;
# 2025-11-25 and before (initialize handshake).
initialize) run mcp list --json ;;
elicitation-sep1034-client-defaults) run call conf_test_client_elicitation_defaults --auto ;;
sse-retry) run call conf_test_reconnection --auto ;;
# 2026-07-28 (stateless: server/discover, per-request _meta, standard headers, input rounds).
request-metadata | json-schema-ref-no-deref) run mcp list --json ;;
http-standard-headers)
    run call conf_test_headers '{}' --auto
    run call conf_my-hyphenated-tool '{}' --auto
    ;;
http-invalid-tool-headers) run call conf_valid_tool '{"region": "us-west1"}' --auto ;;
http-custom-headers)
    # The calls the suite wants made, from $MCP_CONFORMANCE_CONTEXT.
    while IFS=$'\t' read -r name arguments; do
        run call "conf_$name" "$arguments" --auto
    done < <(python3 -c 'import json, os
for call in json.loads(os.environ["MCP_CONFORMANCE_CONTEXT"])["toolCalls"]:
    print(call["name"], json.dumps(call["arguments"]), sep="\t")')
    ;;
sep-2322-client-request-state)
    for tool in test_mrtr_echo_state test_mrtr_no_state test_mrtr_unrelated test_mrtr_no_result_type; do
        run call "conf_$tool" '{}' --auto
    done
    ;;
json-schema-2020-12-preservation)
    # The focal tool's input schema as toolgate offers it to a model, echoed back.
    schema="$(run tools --json | python3 -c 'import json, sys
tools = json.load(sys.stdin)
tools = tools.get("tools", tools) if isinstance(tools, dict) else tools
tool = next(t for t in tools if t["name"] == "conf_json_schema_2020_12_tool")
print(json.dumps({"schema": tool.get("inputSchema", tool.get("input_schema"))}))')"
    run call conf_json_schema_echo "$schema" --auto
    ;;
*)
    echo "client.sh: no driver for scenario ${MCP_CONFORMANCE_SCENARIO:-<unset>}" >&2
    exit 2
    ;;
esac
