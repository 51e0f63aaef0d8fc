#!/usr/bin/env bats
# hutch mcp driven by the real MCP client libraries: the TypeScript SDK
# 1.x (@modelcontextprotocol/sdk, the initialize era) and the 2.x client
# (@modelcontextprotocol/client, which also speaks 2026-07-28), each
# through its own Client and StdioClientTransport (mcp-sdk-client.mjs).
# The packages come from the npm registry into this file's own temporary
# directory, installed once per run of the file; without the registry
# (or with a Node.js too old for a package) the tests skip and say why.

bats_require_minimum_version 1.5.0

load lib

NPM_TIMEOUT=300

setup_file() {
        export MCP_NPM_DIR="$BATS_FILE_TMPDIR/npm"
        mkdir -p "$MCP_NPM_DIR"
        cp "$TESTS_DIR/integration/mcp-sdk-client.mjs" "$TESTS_DIR/integration/mcp-agent-client.mjs" "$MCP_NPM_DIR/"
        command -v node >/dev/null && command -v npm >/dev/null || {
                echo "node or npm not installed" > "$MCP_NPM_DIR/skip-all"
                return 0
        }
        # the cache and the config stay in the test's directory
        export npm_config_cache="$MCP_NPM_DIR/.cache" npm_config_update_notifier=false \
                npm_config_fund=false npm_config_audit=false
        (cd "$MCP_NPM_DIR" && echo '{"private":true}' > package.json &&
                timeout "$NPM_TIMEOUT" npm install --no-save --loglevel=error "@modelcontextprotocol/sdk@1") \
                > "$MCP_NPM_DIR/sdk1.log" 2>&1 ||
                echo "npm install @modelcontextprotocol/sdk@1 failed (registry unreachable?): $(tail -1 "$MCP_NPM_DIR/sdk1.log")" \
                        > "$MCP_NPM_DIR/skip-sdk1"
        if ! node -e 'process.exit(parseInt(process.versions.node) >= 20 ? 0 : 1)'; then
                echo "@modelcontextprotocol/client 2.x needs Node.js 20, this is $(node --version)" > "$MCP_NPM_DIR/skip-client2"
        else
                (cd "$MCP_NPM_DIR" &&
                        timeout "$NPM_TIMEOUT" npm install --no-save --loglevel=error "@modelcontextprotocol/sdk@1" "@modelcontextprotocol/client@2") \
                        > "$MCP_NPM_DIR/client2.log" 2>&1 ||
                        echo "npm install @modelcontextprotocol/client@2 failed (registry unreachable?): $(tail -1 "$MCP_NPM_DIR/client2.log")" \
                                > "$MCP_NPM_DIR/skip-client2"
        fi
}

setup() {
        common_setup
        [ ! -f "$MCP_NPM_DIR/skip-all" ] || skip "$(cat "$MCP_NPM_DIR/skip-all")"
}

drive() {
        [ ! -f "$MCP_NPM_DIR/skip-$1" ] || skip "$(cat "$MCP_NPM_DIR/skip-$1")"
        run -0 timeout 180 node "$MCP_NPM_DIR/mcp-sdk-client.mjs" "$2"
        echo "$output"
        [[ "$output" == *"ok $2 $3"* ]]
}

@test "mcp-sdk: @modelcontextprotocol/sdk 1.x Client over stdio: list, calls, cancel, history" {
        drive sdk1 sdk1 "legacy 2025-11-25"
}

@test "mcp-sdk: @modelcontextprotocol/client 2.x pinned to 2026-07-28" {
        drive client2 client2-pin "modern 2026-07-28"
}

@test "mcp-sdk: @modelcontextprotocol/client 2.x probing with server/discover picks 2026-07-28" {
        drive client2 client2-auto "modern 2026-07-28"
}

@test "mcp-sdk: a scripted coding agent: imports across calls, kept edits, parallel session calls, progress, queue, files, diff, scopes" {
        [ ! -f "$MCP_NPM_DIR/skip-sdk1" ] || skip "$(cat "$MCP_NPM_DIR/skip-sdk1")"
        command -v python3 >/dev/null || skip "python3 not installed"
        local repo="$BATS_TEST_TMPDIR/repo"
        mkdir -p "$repo"
        echo old > "$repo/README"
        # the sandbox user (root's is unprivileged) must read the workdir
        chmod -R a+rX "$BATS_TEST_TMPDIR"
        export AGENT_RESULTS="$BATS_TEST_TMPDIR/results.jsonl"
        run -0 timeout 300 node "$MCP_NPM_DIR/mcp-agent-client.mjs" "$repo"
        echo "$output"
        [[ "$output" == *"ok agent"* ]]
        # every run result the agent got is a valid hutch.result/1
        [ "$(wc -l < "$AGENT_RESULTS")" -ge 15 ]
        python3 "$TESTS_DIR/integration/check-schema.py" hutch.result/1 "$AGENT_RESULTS"
}
