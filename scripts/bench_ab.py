#!/usr/bin/env python3
"""Interleaved A/B of two lackpy builds on the same machine in the same minutes
(driven by `scripts/bench ab REV`; standard library only).

    bench_ab.py BASE_DIR NEW_DIR [--rounds N]

BASE_DIR and NEW_DIR are cargo target profile directories holding a release
`lackpy` and `examples/bench_peers_rs`, with the static `lackpy` of
scripts/build-static beside them in ../x86_64-unknown-linux-gnu/release/
(scripts/bench builds them: NEW_DIR is target/release of the checkout, BASE_DIR
is target/ab-base/release built from the given revision in a temporary worktree).

Each round measures A then B (odd rounds B then A, so a drift of the machine
falls on both sides), per measure:

  cold      `lackpy run --json -c '1 + 1'` of the static binary users get
            (scripts/build-static): median of 20 spawns
  warm      `Supervisor::run` from the warm pool (bench_peers_rs): median of
            REPS runs per program (loop+dict, 1+1)
  toolcall  one `read_file` round trip, tool work subtracted (bench_peers_rs)
  mcp       `lackpy mcp` `run_program` `1 + 1`: p50 of 200 calls, over pipes
            (Python's and rmcp's clients) and over sockets (Node's child_process)
  contended a `lackpy run` of 1,000 `find_files` calls, per call, alone and
            beside two busy loops (a loaded host: each hand-over between
            worker and supervisor may wait for a time slice): median of 3

`--only contended` (comma-separated measures) runs only those; contended needs
only each side's `lackpy`, so BASE_DIR and NEW_DIR may then be any directories
holding a release `lackpy`.

Answers are checked before timing (bench_peers.py does it for its parts; a
wrong answer stops the run). The table gives, per measure, the median over
rounds for A and B, B÷A, and every round's value, so noise is visible: a
ratio inside the spread of the rounds is "no change".
"""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_peers as bp  # noqa: E402  (shared helpers: workspace, time_cmd, StdioMcp)

PROGRAMS = {k: bp.PROGRAMS[k] for k in ("loop+dict", "1+1")}


def static_bin(side):
    """The static binary (scripts/build-static) next to the profile directory `side`:
    TARGET/release -> TARGET/x86_64-unknown-linux-gnu/release/lackpy."""
    return os.path.join(os.path.dirname(side), bp.STATIC_TRIPLE, "release", "lackpy")


CALLS = 1000
CALLS_PROGRAM = f"n = 0\nfor i in range({CALLS}):\n    n += len(find_files('zzz')) + 1\nn\n"


def per_call_us(lackpy, ws):
    """Median over 3 runs of a `lackpy run` of CALLS tool calls, per call (µs)."""
    argv = [lackpy, "run", "--json", "--workspace", ws, "--tools", "find_files",
            "--timeout", "120", "-c", CALLS_PROGRAM]
    xs, err = bp.time_cmd(argv, 3, f'"value":{CALLS}')
    if err:
        raise SystemExit(f"bench_ab: {lackpy}: {CALLS} tool calls failed: {err}")
    return statistics.median(xs) / CALLS


def contended(lackpy, ws, out):
    """Tool calls per call alone, then beside two busy loops (one per core here)."""
    out["contended: per tool call, alone"] = per_call_us(lackpy, ws)
    spin = [sys.executable, "-c", "while True: pass"]
    busy = [subprocess.Popen(spin) for _ in range(2)]
    try:
        out["contended: per tool call, 2 busy loops"] = per_call_us(lackpy, ws)
    finally:
        for b in busy:
            b.kill()
            b.wait()


def measure(side, only=None):
    """One round of every measure (or of those in `only`) for the build in `side`."""
    lackpy = os.path.join(side, "lackpy")
    peers = os.path.join(side, "examples", "bench_peers_rs")
    ws = bp.workspace()
    out = {}
    if only is not None:
        if "contended" in only:
            contended(lackpy, ws, out)
        return out
    cold = static_bin(side)
    xs, err = bp.time_cmd([cold, "run", "--json", "--workspace", ws, "-c", "1 + 1"], 20, '"value":2')
    if err:
        raise SystemExit(f"bench_ab: {cold}: cold run failed: {err}")
    out["cold `1 + 1` (spawn)"] = statistics.median(xs)
    r = subprocess.run([peers, lackpy, ws, str(bp.REPS)], input=json.dumps(PROGRAMS),
                       capture_output=True, text=True, timeout=600)
    try:
        res = json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise SystemExit(f"bench_ab: {peers} failed: {r.stderr.strip()[-300:]}")
    for name in PROGRAMS:
        w = res["warm"].get(name, {})
        if not w.get("ok") or not w.get("samples_us"):
            raise SystemExit(f"bench_ab: {peers}: {name} did not run: {w}")
        out[f"warm `{name}` p50"] = statistics.median(w["samples_us"])
    out["tool call round trip"] = res["toolcall_us"]
    out["tool call crossing (minus tool work)"] = max(res["toolcall_us"] - res["tool_work_us"], 0.0)
    m = bp.bench_mcp_server([lackpy, "mcp", "--workspace", ws], {}, n=200, spawns=3)
    if "error" in m or "error" in m.get("1 + 1", {}):
        raise SystemExit(f"bench_ab: {lackpy} mcp failed: {m}")
    out["mcp `run_program` p50"] = statistics.median(m["1 + 1"]["samples"])
    out["mcp spawn → initialized"] = statistics.median(m["init"])
    m = bp.bench_mcp_server([lackpy, "mcp", "--workspace", ws], {}, n=200, spawns=1, sockets=True)
    if "error" in m or "error" in m.get("1 + 1", {}):
        raise SystemExit(f"bench_ab: {lackpy} mcp on sockets failed: {m}")
    out["mcp `run_program` p50, stdio sockets (Node)"] = statistics.median(m["1 + 1"]["samples"])
    contended(lackpy, ws, out)
    return out


def main():
    a = sys.argv[1:]
    if len(a) < 2:
        print(__doc__, file=sys.stderr)
        return 3
    # Absolute: the MCP client starts the server with the workspace as its cwd.
    base, new = os.path.abspath(a[0]), os.path.abspath(a[1])
    rounds = 5
    if "--rounds" in a:
        rounds = int(a[a.index("--rounds") + 1])
    only = None
    if "--only" in a:
        only = set(a[a.index("--only") + 1].split(","))
        unknown = only - {"contended"}
        if unknown:
            print(f"bench_ab: --only knows `contended`, not {sorted(unknown)}", file=sys.stderr)
            return 3
    for d in (base, new):
        need = ("lackpy",) if only else ("lackpy", "examples/bench_peers_rs", static_bin(d))
        for f in need:
            if not os.access(os.path.join(d, f), os.X_OK):
                print(f"bench_ab: {os.path.join(d, f)} is missing (build it first)", file=sys.stderr)
                return 3
    results = {"A": [], "B": []}
    for i in range(rounds):
        order = (("A", base), ("B", new)) if i % 2 == 0 else (("B", new), ("A", base))
        for label, d in order:
            results[label].append(measure(d, only))
        print(f"round {i + 1}/{rounds} done", file=sys.stderr, flush=True)
    print(f"Interleaved A/B, {rounds} rounds (A = base `{base}`, B = this checkout `{new}`); "
          f"per measure the median over rounds, B÷A, and each round's A → B.\n")
    rows = []
    for key in results["A"][0]:
        av = [r[key] for r in results["A"]]
        bv = [r[key] for r in results["B"]]
        am, bm = statistics.median(av), statistics.median(bv)
        spread = " · ".join(f"{bp.fmt_us(x)} → {bp.fmt_us(y)}" for x, y in zip(av, bv))
        rows.append([key, bp.fmt_us(am), bp.fmt_us(bm), f"{bm / am:.2f}" if am else "—", spread])
    print(bp.table(["measure", "A (base)", "B (new)", "B÷A", "rounds (A → B)"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
