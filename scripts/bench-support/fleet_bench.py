#!/usr/bin/env python3
"""A fleet sharing one Braze workspace: H real `queued` daemons (one queue file each) against one `fake-braze`
that enforces a workspace limit in fixed windows aligned to the clock (429 beyond it, the three X-RateLimit-*
headers on every answer), each answer delayed by a network's round trip.

Per case: the time until every host's queue is empty against the ideal (total full requests / limit x window),
the share of requests answered 429, the slowest host's time over the fastest's, and users in two requests in
flight (must be 0). Hosts have distinct users.

Usage: fleet_bench.py --bin-dir .build/release [--out results.json] [--quick]
"""
import argparse, json, os, shutil, sqlite3, subprocess, sys, tempfile, time, urllib.request

KEY = "bench-fleet-key"


def log(*args):
    print(*args, flush=True)


def start_fake(bin_dir, faults, work):
    proc = subprocess.Popen(
        [os.path.join(bin_dir, "fake-braze"), "--port", "0", "--api-key", KEY, "--faults", json.dumps(faults),
         "--max-seconds", "1800"], stdout=subprocess.PIPE, stderr=open(os.path.join(work, "fake.log"), "ab"))
    line = proc.stdout.readline().decode()
    return proc, int(line.rsplit(":", 1)[1])


def fake_stats(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stats", timeout=10) as response:
        return json.load(response)


def build_queue(bin_dir, path, host, records, users):
    lines = "".join(
        '{"type":"event","external_id":"h%d-user-%d","name":"bench","properties":{"n":%d}}\n' % (host, i % users, i)
        for i in range(records))
    subprocess.run([os.path.join(bin_dir, "queuectl"), "enqueue", "--ndjson", "-", "--db", path],
                   input=lines.encode(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def live_records(path):
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    try:
        return connection.execute("SELECT count(*) FROM records WHERE dead_at_ms IS NULL").fetchone()[0]
    finally:
        connection.close()


def run_case(bin_dir, work, hosts, records, users, limit, window, delay_ms, extra):
    faults = {"delayMilliseconds": delay_ms, "workspaceLimit": limit, "workspaceWindowSeconds": window}
    fake, port = start_fake(bin_dir, faults, work)
    dbs, daemons = [], []
    try:
        for host in range(hosts):
            template = os.path.join(work, f"template-{host}-{records}-{users}.db")
            if not os.path.exists(template):
                build_queue(bin_dir, template, host, records, users)
            db = os.path.join(work, f"host{host}.db")
            for suffix in ["", "-wal", "-shm"]:
                if os.path.exists(db + suffix):
                    os.remove(db + suffix)
            shutil.copy(template, db)
            dbs.append(db)
        env = dict(os.environ, BRAZE_API_KEY=KEY)
        for key in ["NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "EVENTQUEUE_SOCKET"]:
            env.pop(key, None)
        start = time.monotonic()
        start_epoch = time.time()
        for host, db in enumerate(dbs):
            daemons.append(subprocess.Popen(
                [os.path.join(bin_dir, "queued"), "--db", db, "--socket", os.path.join(work, f"host{host}.sock"),
                 "--sink", f"braze:http://127.0.0.1:{port}", "--drain-on-start", "--log-level", "notice"] + extra,
                env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, f"host{host}.log"), "wb")))
        finished = [None] * hosts
        deadline = start + 600
        while None in finished and time.monotonic() < deadline:
            time.sleep(0.05)
            for host, db in enumerate(dbs):
                if finished[host] is None and live_records(db) == 0:
                    finished[host] = time.monotonic() - start
        stats = fake_stats(port)
    finally:
        for daemon in daemons:
            daemon.terminate()
        for daemon in daemons:
            daemon.wait(timeout=30)
        fake.terminate()
        fake.wait(timeout=30)
    logs = "".join(open(os.path.join(work, f"host{h}.log")).read() for h in range(hosts))
    by_status = stats["by_status"]
    accepted, refused = by_status.get("201", 0), by_status.get("429", 0)
    ideal = hosts * records / 75 / limit * window
    # The same bound with the windows where they really fell: the limit lets the last request in at the start of
    # the last window needed (the first one is partial), one round trip before it is answered.
    windows = -(-hosts * records // (75 * limit))
    bound = (int(start_epoch // window) + windows - 1) * window - start_epoch + delay_ms / 1000
    done = [f for f in finished if f is not None]
    elapsed = max(done) if len(done) == hosts else None
    result = {
        "hosts": hosts, "records_per_host": records, "users_per_host": users, "limit": limit,
        "window_seconds": window, "delay_ms": delay_ms, "extra": extra,
        "finished_seconds": finished, "elapsed_seconds": elapsed, "ideal_seconds": ideal,
        "efficiency": (ideal / elapsed) if elapsed else 0, "window_bound_seconds": bound,
        "efficiency_vs_window_bound": (bound / elapsed) if elapsed else 0, "accepted": accepted, "rate_limited": refused,
        "rate_limited_share": refused / max(1, accepted + refused),
        "fairness": (max(done) / min(done)) if len(done) == hosts and min(done) > 0 else None,
        "user_overlaps": stats["user_overlaps"], "passes_stopped_early": logs.count("drain pass stopped early"),
    }
    log("  %d host(s) x %d records, %d/%d s, %d ms: %s s (ideal %.1f s, %.0f %%; window-aligned bound %.1f s, "
        "%.0f %%), 429s %d of %d (%.1f %%), slowest/fastest %s, overlaps %d, passes stopped early %d" % (
            hosts, records, limit, window, delay_ms, "%.1f" % elapsed if elapsed else "not done",
            ideal, result["efficiency"] * 100, bound, result["efficiency_vs_window_bound"] * 100, refused, accepted + refused, result["rate_limited_share"] * 100,
            "%.2f" % result["fairness"] if result["fairness"] else "-", result["user_overlaps"],
            result["passes_stopped_early"]))
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin-dir", default=".build/release")
    parser.add_argument("--out")
    parser.add_argument("--quick", action="store_true", help="only 1 and 4 hosts at 50 ms")
    parser.add_argument("--limit", type=int, default=150)
    parser.add_argument("--window", type=int, default=3)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="eq-fleet-")
    cases = [(1, 40_000, 50), (4, 15_000, 50)]
    if not args.quick:
        cases += [(2, 15_000, 50), (8, 15_000, 50), (1, 40_000, 10), (2, 15_000, 10), (4, 15_000, 10),
                  (8, 15_000, 10)]
    results = []
    try:
        log(f"fleet bench: workspace limit {args.limit} requests per {args.window} s, release binaries in "
            f"{args.bin_dir}, load average {os.getloadavg()[0]:.2f}")
        for hosts, records, delay in cases:
            results.append(run_case(args.bin_dir, work, hosts, records, 1000, args.limit, args.window, delay, []))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as out:
            json.dump({"fleet": results, "load_average": os.getloadavg()[0]}, out, indent=2)


if __name__ == "__main__":
    main()
