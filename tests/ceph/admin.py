#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""tests/ceph/admin.py -- the monitor and manager commands of tests/ceph/up,
through python3-rados (Debian's, hence /usr/bin/python3): one connection
per step instead of one `ceph` CLI process per command, which costs about
1.5 s each on a busy 2-core machine.

  admin.py keyrings DIR          write the keyrings (mon., client.admin,
                                 client.wcache, mgr.x, osd.0) with their caps
  admin.py osd-new CONF UUID     register the OSD; prints its id
  admin.py wait-osd CONF         until osd.0 is up
  admin.py pool CONF POOL PGS    create a replicated pool (size 1 by the
                                 conf's defaults), tagged for rbd
  admin.py wait-clean CONF       until the manager reports every PG
                                 active+clean
Every wait is bounded by WC_CEPH_START_TIMEOUT (120 s); exit 1 with a
message on failure.
"""
import base64
import json
import os
import struct
import sys
import time

TIMEOUT = float(os.environ.get("WC_CEPH_START_TIMEOUT", "120"))
CLIENT = "wcache"


def die(msg):
    print("ceph/admin: " + msg, file=sys.stderr)
    sys.exit(1)


def gen_key():
    """A cephx secret as ceph-authtool --gen-key writes it: type 1 (AES),
    creation time, length 16, 16 random bytes, base64."""
    secret = os.urandom(16)
    return base64.b64encode(struct.pack("<HIIH", 1, int(time.time()), 0, 16) + secret).decode()


def keyring(entries):
    out = []
    for name, key, caps in entries:
        out.append("[%s]\n\tkey = %s\n" % (name, key))
        for svc, cap in caps:
            out.append('\tcaps %s = "%s"\n' % (svc, cap))
    return "".join(out)


def write(path, text):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def cmd_keyrings(d, pool):
    mon = ("mon.", gen_key(), [("mon", "allow *")])
    admin = ("client.admin", gen_key(),
             [("mon", "allow *"), ("osd", "allow *"), ("mds", "allow *"), ("mgr", "allow *")])
    # What an RBD client needs on the pool, no more.
    client = ("client." + CLIENT, gen_key(),
              [("mon", "profile rbd"), ("osd", "profile rbd pool=" + pool),
               ("mgr", "profile rbd pool=" + pool)])
    mgr = ("mgr.x", gen_key(), [("mon", "allow profile mgr"), ("osd", "allow *"), ("mds", "allow *")])
    osd = ("osd.0", gen_key(), [("mon", "allow profile osd"), ("mgr", "allow profile osd"),
                                ("osd", "allow *")])
    # The monitor's mkfs imports every key with its caps.
    write(os.path.join(d, "mon.keyring"), keyring([mon, admin, client, mgr, osd]))
    write(os.path.join(d, "keyring"), keyring([admin, client]))
    write(os.path.join(d, "mgr", "ceph-x", "keyring"), keyring([(mgr[0], mgr[1], [])]))
    write(os.path.join(d, "osd", "ceph-0", "keyring"), keyring([(osd[0], osd[1], [])]))


def connect(conf):
    import rados  # python3-rados, from ceph-common's dependencies

    deadline = time.monotonic() + TIMEOUT
    while True:
        r = rados.Rados(conffile=conf, name="client.admin",
                        conf={"client_mount_timeout": "10"})
        try:
            r.connect(timeout=10)
            return r
        except rados.Error as e:
            r.shutdown()
            if time.monotonic() > deadline:
                die("cannot reach the monitor of %s: %s" % (conf, e))
            time.sleep(0.3)


def mon(r, prefix, **args):
    args.update(prefix=prefix, format="json")
    ret, out, err = r.mon_command(json.dumps(args), b"", timeout=30)
    if ret < 0:
        die("%s: %s (%d)" % (prefix, err, ret))
    return json.loads(out) if out else None


def wait(what, test):
    deadline = time.monotonic() + TIMEOUT
    while not test():
        if time.monotonic() > deadline:
            die("timed out after %.0f s waiting for %s" % (TIMEOUT, what))
        time.sleep(0.3)


def main():
    if len(sys.argv) < 3:
        die(__doc__)
    verb = sys.argv[1]
    if verb == "keyrings":
        cmd_keyrings(sys.argv[2], sys.argv[3])
        return
    r = connect(sys.argv[2])
    try:
        if verb == "osd-new":
            out = mon(r, "osd new", uuid=sys.argv[3])
            print(out["osdid"])
        elif verb == "wait-osd":
            wait("osd.0 to be up", lambda: any(
                o["osd"] == 0 and o["up"] for o in mon(r, "osd dump")["osds"]))
        elif verb == "pool":
            pool, pgs = sys.argv[3], int(sys.argv[4])
            mon(r, "osd pool create", pool=pool, pg_num=pgs, pgp_num=pgs,
                pool_type="replicated")
            mon(r, "osd pool application enable", pool=pool, app="rbd")
        elif verb == "wait-clean":
            def clean():
                ret, out, _ = r.mgr_command(json.dumps({"prefix": "pg stat", "format": "json"}),
                                            b"", timeout=10)
                if ret < 0 or not out:
                    return False
                s = json.loads(out).get("pg_summary", {})
                states = s.get("num_pg_by_state", [])
                return s.get("num_pgs", 0) > 0 and len(states) == 1 and \
                    states[0]["name"] == "active+clean"
            wait("every placement group to be active+clean", clean)
        else:
            die("unknown verb " + verb)
    finally:
        r.shutdown()


if __name__ == "__main__":
    main()
