# SPDX-License-Identifier: BSD-3-Clause
"""fio-profiles/rbd_mode.py -- the --rbd mode of fio-profiles/run: libwcache
in front of a Ceph RBD image beside the image on its own, in one run.

  rbd-randwrite-qd1, rbd-randwrite-qd16   fio: the cache (fio/ engine, its
        origin an rbd: spec) and fio's rbd engine on the same image
  rbd-drain   write-back bandwidth: tests/ceph/drain (fill a fresh cache
        with a working set twice its size, then wc_writeback) for random
        and sequential 4 KiB writes, beside `rbd bench --io-type write` at
        4K and 64K, random and sequential, on the same image

The cluster is $WC_CEPH_DIR's (or --ceph-dir's) when it names one; else
tests/ceph/up brings one up for the run in /tmp/wcfio-ceph-PID and
tests/ceph/down takes it away at the end.  The image (the origin size) is
written once from end to end before anything is measured, so no run pays
for creating RADOS objects.
"""
import json
import os
import statistics
import subprocess
import sys

PROFILES = ["rbd-randwrite-qd1", "rbd-randwrite-qd16"]
DRAIN = "rbd-drain"
ALL = PROFILES + [DRAIN]
# Each cache row's IOPS is divided by this row's (the table's xorigin).
RATIO_BASES = {"rbd-cache": (None, "rbd"), "rbd-cache-nofua": (None, "rbd")}
# rbd bench's in-flight requests (its default).
BENCH_THREADS = 16
# What each drain is held to (the target): random dirty blocks against
# rbd bench's random 4K writes, the same work; sequential ones against its
# sequential 64K writes (write-back merges adjacent blocks, so 4K requests
# would be an easy mark).
DRAIN_BASES = {"drain-rand": "bench-4K-rand", "drain-seq": "bench-64K-seq"}
LATENCY_TARGET = 100.0
# The cache on a disk (--cache-dir: the block medium) pays the disk's synced
# write, not a copy into persistent memory.
BLOCK_LATENCY_TARGET = 5.0
DRAIN_TARGET = 0.8


def log(msg):
    print(msg, flush=True)


class Cluster:
    """The cluster and a fresh image on it, for the length of the run."""

    def __init__(self, args, repo):
        self.args, self.repo = args, repo
        self.dir = args.ceph_dir or os.environ.get("WC_CEPH_DIR")
        self.owned = None
        self.image = "wcfio-%d" % os.getpid()
        self.vars = {}

    def rbd(self, *cmd, **kw):
        return subprocess.run(["rbd", "-c", self.vars["CEPH_CONF"], "--id", self.vars["WC_CEPH_ID"]]
                              + list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=kw.get("timeout", 600))

    def __enter__(self):
        if not self.dir:
            self.dir = "/tmp/wcfio-ceph-%d" % os.getpid()
            self.owned = self.dir
        up = subprocess.run([os.path.join(self.repo, "tests", "ceph", "up"), self.dir],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if up.returncode != 0:
            self.__exit__(None, None, None)
            sys.exit("run: tests/ceph/up %s failed:\n%s" % (self.dir, up.stdout))
        env = dict(line.split("=", 1) for line in open(os.path.join(self.dir, "env")).read().split())
        conf, cid, pool = env["WC_CEPH_CONF"], env["WC_CEPH_ID"], env["WC_CEPH_POOL"]
        self.vars = {"CEPH_CONF": conf, "WC_CEPH_ID": cid, "WC_CEPH_POOL": pool,
                     "WC_RBD_IMAGE": self.image,
                     "WC_ORIGIN": "rbd:%s/%s:conf=%s:id=%s" % (pool, self.image, conf, cid)}
        self.name = "%s/%s" % (pool, self.image)
        self.rbd("rm", "--no-progress", self.name)
        r = self.rbd("create", "--size", str(self.args.origin_size // (1 << 20)) + "M", self.name)
        if r.returncode:
            self.__exit__(None, None, None)
            sys.exit("run: rbd create %s failed: %s" % (self.name, r.stderr))
        log("cluster %s (%s), image %s (%d MiB), written once from end to end" % (
            self.dir, "brought up for this run" if self.owned else "given", self.name,
            self.args.origin_size >> 20))
        r = self.rbd("bench", "--io-type", "write", "--io-size", "4M", "--io-pattern", "seq",
                     "--io-total", str(self.args.origin_size), "--rbd-cache=false", self.name)
        if r.returncode:
            self.__exit__(None, None, None)
            sys.exit("run: filling %s failed: %s" % (self.name, r.stderr))
        return self.vars

    def __exit__(self, *exc):
        if self.vars:
            self.rbd("rm", "--no-progress", self.name)
        if self.owned and not self.args.keep:
            subprocess.run([os.path.join(self.repo, "tests", "ceph", "down"), self.owned],
                           stdout=subprocess.DEVNULL)
        return False


def find_drain(engine, builddir):
    cands = []
    if builddir:
        cands.append(os.path.join(builddir, "tests", "ceph", "drain"))
    if engine:
        cands.append(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(engine))),
                                  "tests", "ceph", "drain"))
    for c in cands:
        if os.access(c, os.X_OK):
            return c
    sys.exit("run: tests/ceph/drain not found (tried %s): build it (make)" % ", ".join(cands))


def bench_row(cluster, io_size, pattern, total):
    cmd = ["bench", "--io-type", "write", "--io-size", io_size, "--io-pattern", pattern,
           "--io-threads", str(BENCH_THREADS), "--io-total", str(total), "--rbd-cache=false",
           cluster.name]
    r = cluster.rbd(*cmd)
    out = {"cmd": "rbd -c $CEPH_CONF --id %s %s" % (cluster.vars["WC_CEPH_ID"], " ".join(cmd)),
           "rc": r.returncode}
    last = [l for l in r.stdout.splitlines() if l.startswith("elapsed:")]
    if r.returncode or not last:
        out["stderr"] = (r.stderr or r.stdout)[-2000:]
        return out
    f = last[-1].split()
    ops_s = float(f[f.index("ops/sec:") + 1])
    size = int(io_size[:-1]) * 1024
    out.update(mbps=ops_s * size / 1e6, iops=ops_s, elapsed_s=float(f[1]))
    return out


def drain_row(runner, cluster, drain, pattern):
    a = runner.args
    cache = os.path.join(a.dir, "wcfio-drain.cache")
    cmd = [drain, cluster.vars["WC_ORIGIN"], cache, "--cache-size", str(a.cache_size),
           "--working-set", str(2 * a.cache_size), "--pattern", pattern, "--config", a.config]
    r = subprocess.run(cmd, env=runner.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if os.path.exists(cache):
        os.unlink(cache)
    out = {"cmd": " ".join(cmd), "rc": r.returncode}
    try:
        out.update(json.loads(r.stdout.strip().splitlines()[-1]))
        out["mbps"] = out["drain_mbps"]
    except (ValueError, IndexError):
        pass
    if r.returncode or "mbps" not in out:
        out["stderr"] = (r.stderr or r.stdout)[-2000:]
    return out


def run_drain(runner, cluster, drain):
    """Every row once per repetition, the order rotated each time."""
    ws = 2 * runner.args.cache_size
    rows = [("drain-rand", lambda: drain_row(runner, cluster, drain, "rand")),
            ("drain-seq", lambda: drain_row(runner, cluster, drain, "seq"))]
    for size in ("4K", "64K"):
        for pattern in ("rand", "seq"):
            # 4K requests take long: a quarter of the working set is enough
            # for a steady rate.
            total = ws // 4 if size == "4K" else ws
            rows.append(("bench-%s-%s" % (size, pattern),
                         lambda s=size, p=pattern, t=total: bench_row(cluster, s, p, t)))
    runs = {name: [] for name, _ in rows}
    for rep in range(max(1, runner.args.reps)):
        k = rep % len(rows)
        for name, fn in rows[k:] + rows[:k]:
            r = fn()
            r.update(profile=DRAIN, target=name, rep=rep)
            runs[name].append(r)
            if r.get("stderr"):
                runner.failures.append(r)
                print("  FAILED: %s [%s]: %s" % (DRAIN, name, r["stderr"]), file=sys.stderr)
            else:
                log("  %-20s %-14s rep %d: %9.1f MB/s%s" % (
                    DRAIN, name, rep + 1, r["mbps"],
                    "  (fill %.1f s, drain %.1f s, %d write-back I/Os)" % (
                        r["fill_s"], r["drain_s"], r["writeback_ios"]) if "fill_s" in r else ""))
    return runs


def paired(runs, target, base, key, invert=False):
    """Median over repetitions of target/base (or base/target) of `key`."""
    vals = []
    for r in runs.get(target, []):
        mate = [x for x in runs.get(base, []) if x.get("rep") == r.get("rep")]
        if mate and not r.get("stderr") and not mate[0].get("stderr") and \
                r.get(key) and mate[0].get(key):
            vals.append(mate[0][key] / r[key] if invert else r[key] / mate[0][key])
    return statistics.median(vals) if vals else None


def summarize(summary, all_runs, block=False):
    """Add the ratios of this mode to the summary: latency (rbd / cache,
    mean and p50) on the fio rows, bandwidth (drain / rbd bench) on the
    drain rows.  Returns a verdict line per target."""
    verdicts = []
    for p in PROFILES:
        runs, rows = all_runs.get(p, {}), summary.get(p, {})
        for t in ("rbd-cache", "rbd-cache-nofua"):
            if t in rows:
                rows[t]["x_lat_mean"] = paired(runs, t, "rbd", "lat_mean_us", invert=True)
                rows[t]["x_lat_p50"] = paired(runs, t, "rbd", "p50_us", invert=True)
    qd1 = summary.get("rbd-randwrite-qd1", {}).get("rbd-cache", {})
    target = BLOCK_LATENCY_TARGET if block else LATENCY_TARGET
    if qd1.get("x_lat_mean"):
        verdicts.append("QD1 4 KiB write latency, FUA through the cache%s vs the image: %.1fx lower "
                        "(mean), %.1fx (p50); target >= %.0fx: %s" % (
                            " on a disk" if block else "",
                            qd1["x_lat_mean"], qd1.get("x_lat_p50") or 0, target,
                            "met" if qd1["x_lat_mean"] >= target else "MISSED"))
    runs, rows = all_runs.get(DRAIN, {}), summary.get(DRAIN, {})
    for t, base in list(DRAIN_BASES.items()) + [("drain-seq", "bench-4K-seq"),
                                                ("drain-rand", "bench-64K-rand")]:
        if t in rows and base in rows:
            x = paired(runs, t, base, "mbps")
            rows[t].setdefault("x_bench", {})[base] = x
            if base == DRAIN_BASES.get(t) and x is not None:
                rows[t]["x_origin"] = x
                verdicts.append("write-back (%s) vs rbd bench %s: %.2fx; target >= %.1fx: %s" % (
                    t, base[6:], x, DRAIN_TARGET, "met" if x >= DRAIN_TARGET else "MISSED"))
    return verdicts


def print_report(summary, verdicts):
    rows = [(p, t, r) for p in PROFILES for t, r in summary.get(p, {}).items()]
    if rows:
        print("\nlatency over the image (medians; xlat = rbd / cache, paired per repetition):")
        print("%-20s %-16s %10s %9s %9s %9s %9s" % ("profile", "target", "IOPS", "mean us",
                                                     "p50 us", "xlat mean", "xlat p50"))
        for p, t, r in rows:
            print("%-20s %-16s %10.0f %9.2f %9.2f %9s %9s" % (
                p, t, r.get("iops") or 0, r.get("lat_mean_us") or 0, r.get("p50_us") or 0,
                "%.1f" % r["x_lat_mean"] if r.get("x_lat_mean") else "-",
                "%.1f" % r["x_lat_p50"] if r.get("x_lat_p50") else "-"))
    drain = summary.get(DRAIN, {})
    if drain:
        print("\nwrite-back over the image (medians; MB/s = 10^6 bytes/s):")
        for t, r in drain.items():
            x = r.get("x_bench") or {}
            print("  %-16s %8.1f MB/s  %s" % (t, r.get("mbps") or 0, "  ".join(
                "x %s %.2f" % (b[6:], v) for b, v in x.items() if v is not None)))
    for v in verdicts:
        print(v)
