#!/usr/bin/env python3
"""CPU per `lackpy mcp` run_program call over the server's whole process tree
(server, zygote, workers: `perf stat` follows children), interleaved A/B of two
release binaries. The evidence to use when the machine is loaded (latency is
then noise): CPU per call and context switches per call, medians over rounds.

    scripts/mcp_cpu_ab.py CALLS ROUNDS BIN_A BIN_B [PROGRAM...]

PROGRAM is one of loop+dict, 1+1, strings, invalid (a program validation
refuses); default 1+1. Each side's start-up and idle cost (a server that
answers no call) is measured once and subtracted. Every answer is checked.
Needs `perf` and scripts/bench_peers.py (its StdioMcp client and workspace).
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_peers as bp  # noqa: E402

PROGS = {
    "loop+dict": (bp.PROGRAMS["loop+dict"], None),
    "1+1": ("1 + 1", 2),
    "strings": (bp.PROGRAMS["strings"], None),
    "invalid": ("import os\n", "refused"),
}


def one(binp, n, prog):
    """(CPU µs, context switches, p50 µs) of a server answering `n` calls."""
    ws = bp.workspace()
    fd, out = tempfile.mkstemp()
    os.close(fd)
    argv = ["perf", "stat", "-x,", "-e", "task-clock,context-switches", "-o", out,
            "--", binp, "mcp", "--workspace", ws]
    c = bp.StdioMcp(argv, ws)
    try:
        c.initialize()
        time.sleep(0.3)  # let the warm pool fill
        src, want = PROGS[prog]
        args = {"name": "run_program", "arguments": {"program": src}}
        xs = []
        for _ in range(n):
            t = time.perf_counter()
            r = c.request("tools/call", args)
            xs.append((time.perf_counter() - t) * 1e6)
            if want == "refused":
                if r.get("result", {}).get("structuredContent", {}).get("ok", True):
                    raise SystemExit(f"{binp}: {prog} was not refused")
                continue
            v = bp.mcp_value(r)
            if want is not None and v != want:
                raise SystemExit(f"{binp}: {prog}: wrong answer {v!r}")
    finally:
        c.close()
    vals = {}
    with open(out) as f:
        for line in f:
            p = line.strip().split(",")
            if len(p) > 3 and p[2] in ("task-clock", "context-switches"):
                vals[p[2]] = float(p[0])
    os.unlink(out)
    return vals.get("task-clock", 0.0) * 1e3, vals.get("context-switches", 0.0), (
        statistics.median(xs) if xs else 0.0)


def main():
    if len(sys.argv) < 5:
        raise SystemExit(__doc__)
    n, rounds, a, b = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    sides = (("A", a), ("B", b))
    for prog in sys.argv[5:] or ["1+1"]:
        idle = {k: one(p, 0, prog) for k, p in sides}
        res = {"A": [], "B": []}
        for r in range(rounds):
            for k, p in (sides if r % 2 == 0 else sides[::-1]):
                cpu, cs, p50 = one(p, n, prog)
                res[k].append(((cpu - idle[k][0]) / n, (cs - idle[k][1]) / n, p50))
        print(f"== {prog}: {n} calls x {rounds} rounds, load {os.getloadavg()[0]:.2f}")
        med = {}
        for k, p in sides:
            cols = list(zip(*res[k]))
            med[k] = [statistics.median(c) for c in cols]
            print(f"  {k} {p}: CPU/call {med[k][0]:.1f} us, cs/call {med[k][1]:.2f}, "
                  f"p50 {med[k][2]:.1f} us; CPU rounds {[round(x) for x in cols[0]]}")
        print(f"  B/A: CPU {med['B'][0] / med['A'][0]:.3f}, p50 {med['B'][2] / med['A'][2]:.3f}")


if __name__ == "__main__":
    main()
