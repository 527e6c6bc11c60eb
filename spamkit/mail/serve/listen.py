"""Where the resident filter listens: its sockets, and which hosts may connect.

:func:`unix_listener` and :func:`tcp_listener` open the listening sockets ``spamkit serve`` takes
(``--socket``, ``--spamd``, ``--spamd-socket``), a busy address named in the error;
:class:`AllowList` is ``--allowed-ips`` (spamd's ``-A``: this host only by default), which
:class:`spamkit.mail.serve.server.ServeLoop` checks before reading a byte from a TCP client.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import stat

#: pending connections the kernel queues before refusing (capped by net.core.somaxconn)
BACKLOG = 1024


class AllowList:
    """The client addresses a TCP listener answers: IPv4 and IPv6 networks, as spamd's
    ``--allowed-ips`` takes them -- an address (``10.1.2.3``, ``::1``), a network in CIDR
    notation (``192.0.2.0/24``, ``[2001:db8::]/32``: IPv6 may be in brackets), or an IPv4
    prefix of one to three octets with a trailing dot (``10.`` is 10.0.0.0/8). Hostnames are
    refused, as spamd refuses them (a name's addresses can change under a running server). An
    IPv4 client on an IPv6 socket (``::ffff:127.0.0.1``) is matched as its IPv4 address.

    >>> allowed = AllowList.parse(["127.0.0.1, 10.", "[2001:db8::]/32"])
    >>> [allowed.allows(a) for a in ("10.9.8.7", "::ffff:10.0.0.1", "2001:db8::5", "11.0.0.1", "::1")]
    [True, True, True, False, False]
    """

    #: spamd's default: only this host (any loopback address)
    LOOPBACK = ("127.0.0.0/8", "::1")

    def __init__(self, networks):
        self.networks = tuple(networks)

    @classmethod
    def parse(cls, items) -> "AllowList":
        """From option values, each one or more comma-separated entries; ValueError names a bad one."""
        networks = []
        for item in items:
            for entry in str(item).split(","):
                entry = entry.strip()
                if entry:
                    networks.append(cls._network(entry))
        if not networks:
            raise ValueError("no address or network given")
        return cls(networks)

    @staticmethod
    def _network(entry: str):
        text = entry
        if text.startswith("["):                          # [2001:db8::]/32 or [::1]
            inside, bracket, rest = text[1:].partition("]")
            if not bracket or rest and not rest.startswith("/"):
                raise ValueError(f"{entry!r} is not an IP address or network")
            text = inside + rest
        if text.endswith(".") and 1 <= text.count(".") <= 3:   # spamd's "10." and "192.168." prefixes
            octets = text[:-1].split(".")
            text = ".".join(octets + ["0"] * (4 - len(octets))) + f"/{8 * len(octets)}"
        try:
            return ipaddress.ip_network(text, strict=False)
        except ValueError:
            raise ValueError(f"{entry!r} is not an IP address or network (hostnames are not taken)") from None

    def allows(self, host: str) -> bool:
        try:
            address = ipaddress.ip_address(host.split("%", 1)[0])          # a scope (fe80::1%eth0) dropped
        except ValueError:
            return False
        if address.version == 6 and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address.version == network.version and address in network for network in self.networks)

    def __str__(self) -> str:
        return ", ".join(map(str, self.networks))


def unix_socket_ready(path: str) -> None:
    """Make ``path`` free for a new socket: only a stale socket of a process that is gone is
    removed; a regular file, or a socket someone answers on, is refused (OSError)."""
    if not os.path.lexists(path):
        return
    if not stat.S_ISSOCK(os.lstat(path).st_mode):
        raise OSError(f"{path} exists and is not a socket; not replacing it (choose another socket path)")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)                            # stale socket of a process that is gone
    else:
        raise OSError(f"{path}: another server is already answering here")
    finally:
        probe.close()


def unix_listener(path, socket_mode: int):
    """A listening Unix-domain socket at ``path`` (after :func:`unix_socket_ready`), created
    with ``socket_mode`` (the umask is set while it is made, so it is never more open, even for
    an instant)."""
    path = str(path)
    unix_socket_ready(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        old = os.umask(0o777 & ~socket_mode)
        try:
            sock.bind(path)
        finally:
            os.umask(old)
        os.chmod(path, socket_mode)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise _named(exc, path) if exc.filename is None and exc.errno is not None else exc from None
    except BaseException:
        sock.close()
        raise
    return sock


def tcp_listener(address: tuple[str, int]):
    """A listening TCP socket on ``(host, port)`` (IPv6 when the host has a colon)."""
    sock = socket.socket(socket.AF_INET6 if ":" in address[0] else socket.AF_INET, socket.SOCK_STREAM)
    host, port = address[0], address[1]
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        raise _named(exc, where, port) from None
    except BaseException:
        sock.close()
        raise
    return sock


def _named(exc: OSError, where: str, port: int | None = None) -> OSError:
    """``exc`` as one line that names the address it was about (Python's says only "[Errno 98]
    Address already in use"); its text is the whole message, without the errno."""
    if exc.errno == errno.EADDRINUSE:
        return OSError(f"{where}: address already in use (another server listens there: stop it "
                       "or choose another address)")
    if exc.errno == errno.EADDRNOTAVAIL:
        return OSError(f"{where}: no interface of this machine has that address")
    if exc.errno == errno.EACCES and port is not None and port < 1024:
        return OSError(f"{where}: permission denied (ports below 1024 need root or CAP_NET_BIND_SERVICE)")
    return OSError(f"{where}: {exc.strerror or exc}")


# ----------------------------------------------------------------------------- the spamkit protocol
