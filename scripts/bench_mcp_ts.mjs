// `lackpy mcp` `run_program` latency as the official TypeScript MCP SDK's
// client sees it (`Client` over `StdioClientTransport`: Node hands the server
// sockets for its stdio), run by scripts/bench_peers.py from a copy inside
// target/test-deps/npm/ (where scripts/test-deps installs the SDK).
//
//   node bench_mcp_ts.mjs LACKPY WORKSPACE [RUNS] [CALLS]
//
// Each of RUNS runs (default 5) spawns a fresh server, initializes, waits
// 300 ms for the warm pool, checks one answer, then times CALLS (default 200)
// sequential `run_program` calls of `1 + 1`. Prints one JSON object:
// {"p50_us": [...], "p99_us": [...]} (one entry per run), or {"error": ...}.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [lackpy, ws, runsArg, callsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 5);
const calls = Number(callsArg ?? 200);

const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))];
};

async function oneRun() {
  const client = new Client({ name: "lackpy-bench-ts", version: "0" });
  const transport = new StdioClientTransport({
    command: lackpy,
    args: ["mcp", "--workspace", ws],
    stderr: "ignore",
  });
  await client.connect(transport);
  try {
    await new Promise((r) => setTimeout(r, 300)); // let the warm pool fill
    const args = { name: "run_program", arguments: { program: "1 + 1" } };
    const first = await client.callTool(args);
    if (first.isError || first.structuredContent?.value !== 2) {
      throw new Error(`different answer: ${JSON.stringify(first.structuredContent)}`);
    }
    const xs = [];
    for (let i = 0; i < calls; i++) {
      const t = process.hrtime.bigint();
      await client.callTool(args);
      xs.push(Number(process.hrtime.bigint() - t) / 1000);
    }
    return [pct(xs, 0.5), pct(xs, 0.99)];
  } finally {
    await client.close();
  }
}

let out = { p50_us: [], p99_us: [] };
try {
  for (let i = 0; i < runs; i++) {
    const [p50, p99] = await oneRun();
    out.p50_us.push(p50);
    out.p99_us.push(p99);
  }
} catch (e) {
  out = { error: `${e.name}: ${String(e.message).slice(0, 160)}` };
}
console.log(JSON.stringify(out));
