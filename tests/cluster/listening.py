"""The TCP sockets a process listens on, read from /proc (Linux)."""

import ipaddress
import os


def listening_addresses(pid: int | str = "self") -> list[tuple[str, int]]:
    """``(address, port)`` of every TCP socket that process ``pid`` listens on."""
    inodes = set()
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, fd))
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            for line in f:
                parts = line.split()
                if parts[3] == "0A" and parts[9] in inodes:  # 0A: LISTEN
                    found.append(_decode(parts[1]))
    return found


def _decode(local: str) -> tuple[str, int]:
    raw, port = local.split(":")
    data = bytes.fromhex(raw)
    if len(data) == 4:
        return str(ipaddress.IPv4Address(data[::-1])), int(port, 16)
    words = b"".join(data[i : i + 4][::-1] for i in range(0, 16, 4))
    address = ipaddress.IPv6Address(words)
    if address.ipv4_mapped:
        return str(address.ipv4_mapped), int(port, 16)
    return str(address), int(port, 16)


def is_loopback(address: str) -> bool:
    return ipaddress.ip_address(address).is_loopback
