#!/usr/bin/env python3
"""Runs the built test bundle as N processes at once, each running its share of the suites one test at a time.

Why: most of the suite's time is spent waiting (daemons, fake servers, sleeps, outages in real time), so on two
cores one test at a time leaves the machine idle; yet within one process tests must not run concurrently (several
measure timing, and synchronous SQLite calls would occupy the cooperative threads under the others). Processes
give both: each shard is `--no-parallel`, and the shards overlap their waits. Suites are dealt out longest first
(scripts/test-support/suite-seconds.tsv: each suite's seconds in a serial run; a suite not listed counts 2 s) to the
shard with the least so far. The bundle is run directly, not through `swift test`, which holds the build
directory's lock for its whole run and so would run the shards one after another.

Every listed test must run exactly once: the counts the shards report are checked against the listing.

Usage: shards.py BUNDLE SHARDS
"""
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    bundle, count = sys.argv[1], int(sys.argv[2])
    listing = subprocess.run([bundle, "--testing-library", "swift-testing", "--list-tests"], check=True,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.split()
    suites = {}
    for test in listing:
        suite = test.split("/", 1)[0]
        suites[suite] = suites.get(suite, 0) + 1
    seconds = {}
    with open(os.path.join(HERE, "suite-seconds.tsv")) as table:
        for line in table:
            name, value = line.split("\t")
            seconds[name] = float(value)
    shards = [{"suites": [], "seconds": 0.0, "tests": 0} for _ in range(count)]
    for suite in sorted(suites, key=lambda name: -seconds.get(name, 2.0)):
        shard = min(shards, key=lambda s: s["seconds"])
        shard["suites"].append(suite)
        shard["seconds"] += seconds.get(suite, 2.0)
        shard["tests"] += suites[suite]
    started = time.monotonic()
    running = []
    for number, shard in enumerate(shards, 1):
        if not shard["suites"]:
            continue
        pattern = "^(" + "|".join(re.escape(name) for name in shard["suites"]) + ")(/|$)"
        log = open(f"{bundle}.shard{number}.log", "w+")
        process = subprocess.Popen([bundle, "--testing-library", "swift-testing", "--no-parallel", "--filter",
                                    pattern], stdout=log, stderr=subprocess.STDOUT)
        print(f"shard {number}: {len(shard['suites'])} suites, {shard['tests']} tests, about "
              f"{shard['seconds']:.0f} s serially", flush=True)
        running.append((number, shard, process, log))
    failed = False
    ran = 0
    for number, shard, process, log in running:
        status = process.wait()
        log.seek(0)
        output = log.read()
        log.close()
        print(f"== shard {number} ({', '.join(name.split('.')[-1] for name in shard['suites'])})")
        print(output, end="" if output.endswith("\n") else "\n")
        summary = re.findall(r"Test run with (\d+) tests? in \d+ suites? (passed|failed)", output)
        counted = int(summary[-1][0]) if summary else 0
        ran += counted
        print(f"== shard {number}: exit {status}, {counted} of {shard['tests']} tests, done at "
              f"{time.monotonic() - started:.0f} s", flush=True)
        if status != 0 or counted != shard["tests"]:
            failed = True
    print(f"shards: {ran} of {len(listing)} tests ran in {time.monotonic() - started:.0f} s, "
          f"{'FAILED' if failed else 'all passed'}")
    sys.exit(1 if failed or ran != len(listing) else 0)


if __name__ == "__main__":
    main()
