// mcp-sdk-client.mjs - drive `hutch mcp` end to end with the MCP TypeScript
// SDK's own Client and StdioClientTransport (the tests install the SDK
// in a directory of their own and copy this script next to it).
//
//   node mcp-sdk-client.mjs sdk1|client2-pin|client2-auto
//
// sdk1: @modelcontextprotocol/sdk 1.x (the initialize era); client2-*:
// @modelcontextprotocol/client 2.x pinned to 2026-07-28, or probing with
// server/discover ('auto'). The SDK itself validates each structuredContent
// against the tool's outputSchema; the checks here are on top of that.
// Prints "ok MODE ERA VERSION" or throws (exit 1).
import assert from "node:assert/strict";

const mode = process.argv[2];
let Client, StdioClientTransport, options = {};
if (mode === "sdk1") {
        ({ Client } = await import("@modelcontextprotocol/sdk/client/index.js"));
        ({ StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js"));
} else {
        ({ Client } = await import("@modelcontextprotocol/client"));
        ({ StdioClientTransport } = await import("@modelcontextprotocol/client/stdio"));
        options.versionNegotiation = { mode: mode === "client2-pin" ? { pin: "2026-07-28" } : "auto" };
}

const name = `sdk-test-${mode}-${process.pid}`;
const client = new Client({ name, version: "1.0.0" }, options);
const transport = new StdioClientTransport({
        command: process.env.HUTCH,
        args: ["mcp", "--max-timeout", "20s"],
        env: { ...process.env },
        stderr: "inherit",
});
await client.connect(transport);

const version = client.getNegotiatedProtocolVersion?.() ?? "2025-11-25";
const era = client.getProtocolEra?.() ?? "legacy";
if (mode === "client2-pin")
        assert.equal(version, "2026-07-28");

const { tools } = await client.listTools();
assert.deepEqual(tools.map(t => t.name), ["run_code", "run_command", "read_output", "list_runs", "get_file", "diff",
        "list_processes", "list_ports"]);

const ok = await client.callTool({ name: "run_code", arguments: { language: "python", code: "print(6*7)" } });
assert.equal(ok.isError, false);
assert.equal(ok.structuredContent.status, "success");
assert.match(ok.content[0].text, /^exit_code=0 status=success /);
assert.match(ok.content[0].text, /42/);
assert.equal(ok.structuredContent.labels["mcp.client"], name);

const bad = await client.callTool({ name: "run_command", arguments: { argv: ["sh", "-c", "exit 5"] } });
assert.equal(bad.isError, true);
assert.equal(bad.structuredContent.exit_code, 5);

const slow = await client.callTool({ name: "run_command", arguments: { argv: ["sleep", "10"], timeout_s: 1 } });
assert.equal(slow.structuredContent.status, "timeout");

// cancelling through the SDK's AbortSignal sends notifications/cancelled
const ac = new AbortController();
const sleeper = { name: "run_command", arguments: { argv: ["sleep", "60"] } };
// 1.x takes (params, resultSchema, options), 2.x (params, options)
const pending = mode === "sdk1" ? client.callTool(sleeper, undefined, { signal: ac.signal })
                                : client.callTool(sleeper, { signal: ac.signal });
setTimeout(() => ac.abort("test"), 1000);
await assert.rejects(pending);
// the run is recorded cancelled, not left to its 20 s timeout
let cancelled;
for (let i = 0; i < 100 && !cancelled; i++) {
        const r = await client.callTool({ name: "list_runs", arguments: { label: `mcp.client=${name}`, status: "cancelled" } });
        cancelled = r.structuredContent.runs.find(x => x.argv.join(" ") === "sleep 60");
        if (!cancelled)
                await new Promise(res => setTimeout(res, 200));
}
assert.ok(cancelled, "the aborted call's run is not recorded cancelled");

const page = await client.callTool({ name: "read_output",
                                     arguments: { run_id: ok.structuredContent.id, stream: "stdout" } });
assert.equal(page.structuredContent.text, "42\n");
const list = await client.callTool({ name: "list_runs", arguments: { label: `mcp.client=${name}`, limit: 10 } });
assert.ok(list.structuredContent.runs.length >= 3);

// a JSON-RPC error: 1.x rejects; 2.x hands it back as an isError result
let unknown;
try {
        unknown = await client.callTool({ name: "no_such_tool", arguments: {} });
} catch (e) {
        unknown = { isError: true, content: [{ type: "text", text: String(e.message) }] };
}
assert.equal(unknown.isError, true);
assert.match(unknown.content[0].text, /no_such_tool/);

await client.close();
console.log(`ok ${mode} ${era} ${version}`);
