#!/usr/bin/env python3
"""Charts delivery_bench.py's sweep: records/s and CPU per record against --max-in-flight.

Usage: delivery_chart.py docs/bench-raw/delivery-sweep.json docs/perf/delivery-max-in-flight.png
"""
import json, sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def main():
    source, target = sys.argv[1], sys.argv[2]
    with open(source) as handle:
        results = json.load(handle)
    rows = sorted(results["sweep"], key=lambda row: row["max_in_flight"])
    x = [row["max_in_flight"] for row in rows]
    figure, left = plt.subplots(figsize=(7, 4))
    left.plot(x, [row["records_per_second"] for row in rows], marker="o", color="tab:blue")
    left.set_xscale("log", base=2)
    left.set_xticks(x, [str(value) for value in x])
    left.set_xlabel("--max-in-flight")
    left.set_ylabel("records/s delivered", color="tab:blue")
    right = left.twinx()
    right.plot(x, [row["cpu_microseconds_per_record"] for row in rows], marker="s", color="tab:orange")
    right.set_ylabel("queued CPU µs per record", color="tab:orange")
    delay = rows[0]["delay_ms"] if rows else "?"
    left.set_title(f"queued → fake Braze at {delay} ms per request, {results['records']:,} events, "
                   f"{results['users']:,} users")
    left.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(target, dpi=110)
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
