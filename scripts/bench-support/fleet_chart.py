#!/usr/bin/env python3
"""Charts the fleet runs: share of the workspace limit used and share of requests answered 429, against the number
of hosts, for the real daemons (fleet_bench.py) and the simulation (eventqueue-bench fleet).

Usage: fleet_chart.py docs/bench-raw/fleet.json docs/bench-raw/fleet-sim.json docs/perf/fleet.png
"""
import json, sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main():
    processes, simulated, target = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(processes) as handle:
        runs = json.load(handle)["fleet"]
    with open(simulated) as handle:
        sims = json.load(handle)["scenarios"]["fleet"]
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for delay, marker in [(50, "o"), (10, "s")]:
        rows = sorted((r for r in runs if r["delay_ms"] == delay), key=lambda r: r["hosts"])
        if rows:
            hosts = [r["hosts"] for r in rows]
            left.plot(hosts, [100 * r["efficiency"] for r in rows], marker=marker, label=f"queued, {delay} ms")
            right.plot(hosts, [100 * r["rate_limited_share"] for r in rows], marker=marker, label=f"queued, {delay} ms")
    rows = sorted((r for r in sims if r["limit"] == 3000 and r["clock_skew_ms"] == 0 and r["latency_ms"] == 50),
                  key=lambda r: r["hosts"])
    if rows:
        hosts = [r["hosts"] for r in rows]
        left.plot(hosts, [100 * r["goodput"] for r in rows], marker="^", linestyle="--", label="simulated, 3000/3 s")
        right.plot(hosts, [100 * r["rate_limited_share"] for r in rows], marker="^", linestyle="--",
                   label="simulated, 3000/3 s")
    left.axhline(85, color="grey", linewidth=0.8, linestyle=":")
    right.axhline(10, color="grey", linewidth=0.8, linestyle=":")
    for axis in (left, right):
        axis.set_xscale("log", base=2)
        axis.set_xlabel("hosts sharing one workspace")
        axis.legend(fontsize=8)
    left.set_ylabel("limit used (ideal time / time taken), %")
    right.set_ylabel("requests answered 429, %")
    figure.suptitle("A fleet on one Braze workspace: 150 requests per 3 s (processes), 3,000 (simulated)")
    figure.tight_layout()
    figure.savefig(target, dpi=110)


if __name__ == "__main__":
    main()
