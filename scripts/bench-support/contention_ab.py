#!/usr/bin/env python3
"""Before and after for issue 24: `eventqueue-bench --quick contention`, rounds interleaved.

"before" is the same binary with EVENTQUEUE_BENCH_NO_LINE=1: the writers do not wait in line and commit with the
fsync inside the lock, and the upkeep runs after every pass (nothing is seen in line): what main did before the
line. "after" is the default. Each round runs both, so a noisy neighbour hits both alike; the table gives the
median of the rounds and the range. A mixed round adds Python writers (docs/WRITERS.md's recipe, not in line)
beside the Swift ones and reports both sides.

Usage: contention_ab.py --bench .build/release/eventqueue-bench [--rounds 3] [--out-dir docs/bench-raw]
                        [--chart docs/perf/contention-before-after.png] [--mixed-swift 4 --mixed-python 4]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

MODES = {"before": {"EVENTQUEUE_BENCH_NO_LINE": "1"}, "after": {}}


def run(bench, extra_env, directory):
    env = dict(os.environ, **extra_env)
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as handle:
        out = handle.name
    try:
        subprocess.run([bench, "--quick", "--dir", directory, "--out", out, "contention"], env=env, check=True,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        with open(out) as handle:
            return json.load(handle)["scenarios"]["contention"]
    finally:
        os.unlink(out)


def median_range(values):
    return statistics.median(values), min(values), max(values)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bench", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default="/var/tmp")
    parser.add_argument("--out-dir", default="docs/bench-raw")
    parser.add_argument("--chart", default="docs/perf/contention-before-after.png")
    parser.add_argument("--mixed-swift", type=int, default=4)
    parser.add_argument("--mixed-python", type=int, default=4)
    args = parser.parse_args()

    rounds = {mode: [] for mode in MODES}
    mixed = {mode: [] for mode in MODES}
    for number in range(args.rounds):
        for mode, env in MODES.items():
            rows = run(args.bench, env, args.dir)
            rounds[mode].append(rows)
            print(f"round {number + 1} {mode}: " + " | ".join(
                f"{r['writers']}w {r['enqueued_per_s']:.0f}/s p99 {r['p99_us'] / 1000:.1f} p99.9 "
                f"{r['p999_us'] / 1000:.1f} ms busy {r['busy_errors']} lost {r['lost']}" for r in rows), flush=True)
        if args.mixed_python > 0:
            for mode, env in MODES.items():
                env = dict(env, EVENTQUEUE_BENCH_WRITERS=str(args.mixed_swift),
                           EVENTQUEUE_BENCH_PYTHON_WRITERS=str(args.mixed_python))
                row = run(args.bench, env, args.dir)[0]
                mixed[mode].append(row)
                p = row["python"]
                print(f"round {number + 1} mixed {mode}: swift {row['enqueued_per_s']:.0f}/s p99 "
                      f"{row['p99_us'] / 1000:.1f} p99.9 {row['p999_us'] / 1000:.1f} ms; python "
                      f"{p['enqueued_per_s']:.0f}/s p99 {p['p99_us'] / 1000:.1f} p99.9 {p['p999_us'] / 1000:.1f} "
                      f"max {p['max_us'] / 1000:.1f} ms busy {p['busy_errors']}; lost {row['lost']}", flush=True)

    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "contention-ab.json"), "w") as handle:
        json.dump({"rounds": rounds, "mixed": mixed}, handle, indent=1)

    counts = [row["writers"] for row in rounds["after"][0]]
    table = {}
    lines = ["| writers | | enqueued/s | p50 ms | p99 ms | p99.9 ms | max ms | SQLITE_BUSY | lost |",
             "|---|---|---|---|---|---|---|---|---|"]
    for index, writers in enumerate(counts):
        for mode in MODES:
            rows = [run_rows[index] for run_rows in rounds[mode]]
            cell = {}
            for key in ("enqueued_per_s", "p50_us", "p99_us", "p999_us", "max_us"):
                cell[key] = median_range([row[key] for row in rows])
            cell["busy"] = sum(row["busy_errors"] for row in rows)
            cell["lost"] = sum(row["lost"] for row in rows)
            table[(writers, mode)] = cell

            def fmt(key, scale=1000, digits=2):
                mid, low, high = cell[key]
                return f"{mid / scale:.{digits}f} ({low / scale:.{digits}f}–{high / scale:.{digits}f})"

            lines.append(f"| {writers} | {mode} | {fmt('enqueued_per_s', 1, 0)} | {fmt('p50_us')} | {fmt('p99_us')} | "
                         f"{fmt('p999_us')} | {fmt('max_us', 1000, 1)} | {cell['busy']} | {cell['lost']} |")
    if args.mixed_python > 0:
        lines += ["", f"Mixed: {args.mixed_swift} Swift writers and {args.mixed_python} Python writers "
                  "(median of the rounds, range in brackets):", "",
                  "| | side | enqueued/s | p50 ms | p99 ms | p99.9 ms | max ms | busy | lost |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for mode in MODES:
            for side in ("swift", "python"):
                rows = [row if side == "swift" else row["python"] for row in mixed[mode]]

                def fmt(key, scale=1000, digits=1):
                    mid, low, high = median_range([row[key] for row in rows])
                    return f"{mid / scale:.{digits}f} ({low / scale:.{digits}f}–{high / scale:.{digits}f})"

                busy = sum(row["busy_errors"] for row in rows)
                lost = sum(row["lost"] for row in mixed[mode]) if side == "swift" else "(same run)"
                lines.append(f"| {mode} | {side} | {fmt('enqueued_per_s', 1, 0)} | {fmt('p50_us', 1000, 2)} | "
                             f"{fmt('p99_us')} | {fmt('p999_us')} | {fmt('max_us')} | {busy} | {lost} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(args.out_dir, "contention-ab.md"), "w") as handle:
        handle.write(text)
    print(text)

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no matplotlib: chart not drawn", file=sys.stderr)
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    styles = {"before": "--", "after": "-"}
    for mode in MODES:
        for key, label, marker in (("p99_us", "p99", "o"), ("p999_us", "p99.9", "s")):
            left.plot(counts, [table[(w, mode)][key][0] / 1000 for w in counts], styles[mode], marker=marker,
                      label=f"{label} {mode}")
        right.plot(counts, [table[(w, mode)]["enqueued_per_s"][0] for w in counts], styles[mode], marker="o",
                   label=f"enqueues/s {mode}")
    left.axhline(5, color="gray", linewidth=0.8)
    left.axhline(15, color="gray", linewidth=0.8)
    left.set_yscale("log")
    left.set_ylabel("enqueue latency, ms (medians of the rounds)")
    right.set_ylabel("enqueues per second, all writers")
    right.set_ylim(0, max(table[(w, m)]["enqueued_per_s"][0] for w in counts for m in MODES) * 1.2)
    for axis in (left, right):
        axis.set_xscale("log", base=2)
        axis.set_xticks(counts, [str(v) for v in counts])
        axis.set_xlabel("writer processes (the drainer draining)")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    left.set_title("Tail: before and after the writers' line")
    right.set_title("Throughput")
    fig.tight_layout()
    os.makedirs(os.path.dirname(args.chart), exist_ok=True)
    fig.savefig(args.chart, dpi=110)
    print(f"chart: {args.chart}")


if __name__ == "__main__":
    main()
