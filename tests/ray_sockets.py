"""The addresses Ray's processes listen on, for the loopback-only checks."""

from __future__ import annotations

import psutil

LOOPBACK = ("127.0.0.1", "::ffff:127.0.0.1", "::1")


def ray_listen_ips() -> list[str]:
    """Return the IP of every listening socket held by a Ray process (raylet, GCS server,
    Ray workers, or anything whose command line names ray)."""
    found = []
    for conn in psutil.net_connections(kind="inet"):
        if conn.status != psutil.CONN_LISTEN or not conn.pid:
            continue
        try:
            proc = psutil.Process(conn.pid)
            cmd = " ".join(proc.cmdline())
        except psutil.Error:
            continue
        if "ray" in cmd or proc.name().startswith(("raylet", "gcs_server", "ray::")):
            found.append(conn.laddr.ip)
    return found
