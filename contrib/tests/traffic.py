#!/usr/bin/env python3
"""Loopback TCP traffic for the live Prometheus test (contrib/tests/prometheus.sh).

  traffic.py sink PORT              accept on 127.0.0.1:PORT, read and discard
  traffic.py send PORT N RATE SECS  N connections to 127.0.0.1:PORT, each
                                    sending RATE bytes/s for at most SECS s

The connections use the network namespace's default congestion control (the
point: those opened before a switch keep the old one). Bounded in count and
time; only ever talks to 127.0.0.1.
"""
import socket
import sys
import threading
import time


def sink(port):
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(64)

    def drain(c):
        with c:
            while c.recv(1 << 16):
                pass

    while True:
        c, _ = srv.accept()
        threading.Thread(target=drain, args=(c,), daemon=True).start()


def send(port, n, rate, secs):
    chunk = b"\0" * (rate // 10)
    deadline = time.monotonic() + secs

    def one():
        with socket.create_connection(("127.0.0.1", port)) as c:
            while time.monotonic() < deadline:
                c.sendall(chunk)
                time.sleep(0.1)

    threads = [threading.Thread(target=one, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    if sys.argv[1] == "sink":
        sink(int(sys.argv[2]))
    elif sys.argv[1] == "send":
        send(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
    else:
        sys.exit("usage: traffic.py sink PORT | send PORT N RATE SECS")
