#!/usr/bin/env python3
"""`lackpy mcp` `run_program` latency as the official Python MCP SDK's client
sees it (`mcp.ClientSession` over `mcp.client.stdio`), run by
scripts/bench_peers.py inside .venv-bench (where `mcp<2` is installed).

    bench_mcp_sdk.py LACKPY WORKSPACE [RUNS] [CALLS]

Each of RUNS runs (default 5) spawns a fresh server, initializes, waits
300 ms for the warm pool, checks one answer, then times CALLS (default 200)
sequential `run_program` calls of `1 + 1`. Prints one JSON object:
{"p50_us": [...], "p99_us": [...]} (one entry per run), or {"error": ...}.
"""
import asyncio
import json
import statistics
import sys
import time


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


async def one_run(lackpy, ws, calls):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=lackpy, args=["mcp", "--workspace", ws])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            await asyncio.sleep(0.3)  # let the warm pool fill
            args = {"program": "1 + 1"}
            r = await session.call_tool("run_program", args)
            value = (r.structuredContent or {}).get("value")
            if r.isError or value != 2:
                raise RuntimeError(f"different answer: {value!r} (isError={r.isError})")
            xs = []
            for _ in range(calls):
                t = time.perf_counter()
                await session.call_tool("run_program", args)
                xs.append((time.perf_counter() - t) * 1e6)
            return statistics.median(xs), pct(xs, 0.99)


def main():
    lackpy, ws = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    calls = int(sys.argv[4]) if len(sys.argv) > 4 else 200
    out = {"p50_us": [], "p99_us": []}
    try:
        for _ in range(runs):
            p50, p99 = asyncio.run(one_run(lackpy, ws, calls))
            out["p50_us"].append(p50)
            out["p99_us"].append(p99)
    except Exception as e:  # reported in the table, not a crash of the bench
        out = {"error": f"{type(e).__name__}: {str(e)[:160]}"}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
