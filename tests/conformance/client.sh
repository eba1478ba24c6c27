#!/usr/bin/env bash
# The client under test for `conformance client --command "bash client.sh"`: the suite
# appends the server URL and sets $MCP_CONFORMANCE_SCENARIO. This configures toolgate with
# that URL as the MCP server `conf` (in its global config: a project file's servers need
# trust) and drives it as a user would: `toolgate mcp list` for
# the handshake, `toolgate call conf_<tool> --auto` for the scenarios that call a tool.
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
initialize) run mcp list --json ;;
tools_call) run call conf_add_numbers '{"a": 2, "b": 3}' --auto ;;
elicitation-sep1034-client-defaults) run call conf_test_client_elicitation_defaults --auto ;;
sse-retry) run call conf_test_reconnection --auto ;;
*)
    echo "client.sh: no driver for scenario ${MCP_CONFORMANCE_SCENARIO:-<unset>}" >&2
    exit 2
    ;;
esac
