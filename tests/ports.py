"""A TCP port for a test's server: the OS hands out one nobody holds. A fixed port (Dash's
test runner counts up from 58050 in every process) would collide when pytest-xdist runs two
workers, and a test could then drive the other worker's app."""

import socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
