// mcp-agent-client.mjs - a scripted coding agent driving `hutch mcp` through
// the MCP TypeScript SDK 1.x's own Client and StdioClientTransport, the way
// an agent framework does: modules written in one call and imported in the
// next, an edit kept across a failing test run, parallel calls on one
// session, progress, the queue, files out (pages, an image), a workdir's
// diff, and two scopes. The SDK validates each structuredContent against
// the tool's outputSchema; every run result is also written, one per line,
// to $AGENT_RESULTS for check-schema.py (hutch.result/1).
//
//   node mcp-agent-client.mjs WORKDIR
//
// Prints "ok agent" or throws (exit 1).
import assert from "node:assert/strict";
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const workdir = process.argv[2];
const results = process.env.AGENT_RESULTS;

async function server(name, args) {
        const client = new Client({ name, version: "1.0.0" });
        await client.connect(new StdioClientTransport({
                command: process.env.HUTCH, args: ["mcp", "--max-timeout", "60s", ...args],
                env: { ...process.env }, stderr: "inherit",
        }));
        return client;
}

// a tool call; run results go to the schema check
async function call(client, name, args, options = {}) {
        const r = await client.callTool({ name, arguments: args }, undefined, options);
        if ((name === "run_code" || name === "run_command") && r.structuredContent)
                appendFileSync(results, JSON.stringify(r.structuredContent) + "\n");
        return r;
}

const text = r => r.content.filter(b => b.type === "text").map(b => b.text).join("");
const agent = await server("agent-test", []);

// 1. modules one call writes, the next imports: python and node
let r = await call(agent, "run_code", { language: "python", session: "proj",
        code: "open('helper.py', 'w').write('def answer():\\n    return 42\\n')" });
assert.equal(r.isError, false, text(r));
r = await call(agent, "run_code", { language: "python", session: "proj",
        code: "import helper\nprint(helper.answer())" });
assert.equal(r.structuredContent.stdout, "42\n", text(r));
r = await call(agent, "run_code", { language: "node", session: "proj",
        code: "const fs = require('fs');\nfs.writeFileSync('util.js', 'module.exports = x => x * 2;');\n" +
              "fs.mkdirSync('node_modules/lefty', { recursive: true });\n" +
              "fs.writeFileSync('node_modules/lefty/index.js', 'module.exports = s => \"<\" + s;');" });
assert.equal(r.isError, false, text(r));
r = await call(agent, "run_code", { language: "node", session: "proj",
        code: "console.log(require('./util')(21), require('lefty')('x'))" });
assert.equal(r.structuredContent.stdout, "42 <x\n", text(r));

// 2. edit, then a failing test run: the edit is kept, the result says so
r = await call(agent, "run_code", { language: "python", session: "proj",
        code: "open('calc.py', 'w').write('def add(a, b):\\n    return a - b\\n')\n" +
              "import calc\nassert calc.add(2, 2) == 4, 'add is wrong'" });
assert.equal(r.isError, true);
// a live session: kept in its sandbox, committed when the sandbox stops
assert.equal(r.structuredContent.committed, false);
assert.match(text(r), /committed when the sandbox stops/);
r = await call(agent, "run_command", { argv: ["cat", "calc.py"], session: "proj" });
assert.match(r.structuredContent.stdout, /a - b/);

// 3. three parallel calls on one session: all succeed, in order
const par = await Promise.all(["a", "b", "c"].map(x =>
        call(agent, "run_code", { language: "sh", session: "proj", code: `sleep 0.3; echo ${x} >> order.txt; cat order.txt` })));
par.forEach(p => assert.equal(p.isError, false, text(p)));
assert.equal(par[2].structuredContent.stdout, "a\nb\nc\n");
assert.ok(par[0].structuredContent.finished_at <= par[1].structuredContent.started_at);

// 4. progress every 5 s from the call's start (the SDK resets its timeout on it)
const t0 = Date.now();
const ticks = [];
r = await call(agent, "run_command", { argv: ["sleep", "11"], timeout_s: 20 },
               { onprogress: () => ticks.push(Date.now() - t0), timeout: 8000, resetTimeoutOnProgress: true });
assert.equal(r.isError, false, text(r));
assert.ok(ticks.length >= 2, `progress: ${ticks}`);
assert.ok(ticks[0] >= 4500 && ticks[0] <= 5800, `first progress at ${ticks[0]} ms`);
assert.ok(ticks[1] >= 9500 && ticks[1] <= 10800, `second progress at ${ticks[1]} ms`);

// 5. files out: a 3 MiB file in pages, a PNG as an image block
const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
r = await call(agent, "run_code", { language: "python", code:
        "import os, base64\nos.makedirs('output', exist_ok=True)\n" +
        "open('output/big.log', 'w').write(''.join('line %07d\\n' % i for i in range(262200)))\n" +
        `open('output/chart.png', 'wb').write(base64.b64decode('${png}'))\n` });
assert.equal(r.isError, false, text(r));
const id = r.structuredContent.id;
const big = r.structuredContent.files.find(f => f.path === "big.log");
assert.ok(big.size > 3 * 1024 * 1024);
let got = "", off = 0, pages = 0;
for (;;) {
        const p = await call(agent, "get_file", { run_id: id, path: "output/big.log", offset: off });
        assert.equal(p.isError, false, text(p));
        got += p.structuredContent.content;
        off = p.structuredContent.next_offset;
        pages++;
        if (p.structuredContent.eof)
                break;
}
assert.ok(pages >= 4, `${pages} pages`);
assert.equal(createHash("sha256").update(got).digest("hex"), big.sha256);
const img = await call(agent, "get_file", { run_id: id, path: "output/chart.png" });
const block = img.content.find(b => b.type === "image");
assert.ok(block, "no image block");
assert.equal(block.mimeType, "image/png");
assert.equal(block.data, png);
await agent.close();

// 6. the queue: a queued call starts within 0.5 s of a free slot
const one = await server("agent-queue", ["--max-concurrent", "1"]);
const [qa, qb] = await Promise.all([call(one, "run_command", { argv: ["sleep", "2"] }),
                                     call(one, "run_command", { argv: ["true"] })]);
const gap = Date.parse(qb.structuredContent.started_at) - Date.parse(qa.structuredContent.finished_at);
assert.ok(gap >= 0 && gap < 500, `the queued call started ${gap} ms after the slot freed`);
await one.close();

// 7. a workdir run's diff
const repo = await server("agent-repo", ["--workdir", workdir]);
r = await call(repo, "run_command", { argv: ["sh", "-c", "sed -i s/old/new/ README && echo t > test.txt"] });
assert.equal(r.isError, false, text(r));
assert.equal(readFileSync(`${workdir}/README`, "utf8"), "old\n");
const d = await call(repo, "diff", { run_id: r.structuredContent.id });
assert.match(text(d), /-old/);
assert.match(text(d), /\+new/);
assert.match(text(d), /test\.txt/);
await repo.close();

// 8. two scopes cannot see each other
const a = await server("agent-a", ["--scope", "conv_a"]);
const b = await server("agent-b", ["--scope", "conv_b"]);
r = await call(a, "run_command", { argv: ["sh", "-c", "echo secret-a > s.txt; echo secret-a"], session: "w" });
const aid = r.structuredContent.id;
const list = await call(b, "list_runs", {});
assert.ok(!list.structuredContent.runs.some(x => x.id === aid), "b lists a's run");
const peek = await call(b, "read_output", { run_id: aid, stream: "stdout" });
assert.equal(peek.isError, true);
const sess = await call(b, "run_command", { argv: ["ls"], session: "w" });
assert.ok(!sess.structuredContent.stdout.includes("s.txt"), "b sees a's session");
await a.close();
await b.close();
console.log("ok agent");
