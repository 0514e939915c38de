"""A loopback port for a server a test starts (ClickHouse, Prometheus, a gloo job's master).
No import of helpers: prom_server.py, which the test runner imports, uses it too.

The port bind(("127.0.0.1", 0)) hands out is one of the kernel's ephemeral ports, the range
every outgoing connection takes its local port from: between the check and the server's own
bind, another test's connection can take it (clickhouse-server: "Address already in use:
127.0.0.1:33055", once in a full make check). A port below that range is never handed to a
connection; only another listener choosing the same one in between could still take it, a
random draw among ~20,000 (drawn from os.urandom: the test workers are forked from one runner,
and Python's random would draw the same ports in each)."""
import random
import socket

LOWEST = 10000  # below: ports other software on the machine may expect to have
_draw = random.SystemRandom()


def ephemeral_low():
    """The first port of the kernel's ephemeral range (32768 unless configured)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    """A port of HOST nobody is bound to now, below the ephemeral range."""
    top = ephemeral_low()
    for _ in range(100 if top > LOWEST + 100 else 0):
        port = _draw.randrange(LOWEST, top)
        with socket.socket(family) as s:
            try:
                s.bind((host, port))
            except OSError:
                continue
            return port
    with socket.socket(family) as s:  # a range configured down to nothing below it
        s.bind((host, 0))
        return s.getsockname()[1]
