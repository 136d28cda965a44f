"""Who runs an in-process run: an owner string per process, and whether that process is still alive.

Without a broker (the embedded default) a run's units are executed by a thread of the web
server or command that started it; nothing redelivers them if that process stops (a server
restart, a killed command). The run row records its owner (``RunBase.owner``) as
``"<host> <boot id> <pid> <start ticks>"``: the host name, the kernel's boot id
(``/proc/sys/kernel/random/boot_id``), the process id and the process's start time in clock
ticks since boot (``/proc/<pid>/stat``, field 22), so a process id reused after a reboot or
by a later process is not mistaken for the owner. ``lifecycle.recover`` resumes a run whose
owner is gone. Where ``/proc`` is missing (not Linux) the boot id and start ticks are
``"-"`` and only the process id is checked.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

from django.dispatch import Signal

#: Sent in each worker process of the embedded executor's pool (``embedded``) once Django is
#: set up, before its first unit (test hooks: tests/ops/poison.py). Here, not in ``embedded``,
#: so that settings can connect to it before the apps are loaded.
worker_ready = Signal()

_PROC = Path("/proc")
_UNKNOWN = "-"


def _boot_id() -> str:
    try:
        return (_PROC / "sys/kernel/random/boot_id").read_text().strip() or _UNKNOWN
    except OSError:
        return _UNKNOWN


def _stat(pid: int) -> list[str] | None:
    """Fields of ``/proc/<pid>/stat`` after the command name (field 3 first), or None."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def owner_of(pid: int) -> str:
    """The owner string of process ``pid`` on this machine (``"<host> <boot id> <pid> <start ticks>"``)."""
    fields = _stat(pid)
    ticks = fields[19] if fields and len(fields) > 19 else _UNKNOWN
    return f"{socket.gethostname()} {_boot_id()} {pid} {ticks}"


_this: tuple[int, str] | None = None


def this_process() -> str:
    """The owner string of the calling process (recomputed after a fork)."""
    global _this
    if _this is None or _this[0] != os.getpid():
        _this = (os.getpid(), owner_of(os.getpid()))
    return _this[1]


def alive(owner: str) -> bool | None:
    """Whether the process named by ``owner`` (an ``owner_of`` string) is still running.

    Returns
    -------
    bool or None
        True: it runs (the same process, same boot, same start time). False: it is gone
        (no such process, a zombie, another process under a reused id, the machine
        rebooted since, or ``owner`` is not an owner string). None: it ran on another host,
        which cannot be checked from here (that host resumes its own runs when it starts).
    """
    parts = owner.split()
    if len(parts) != 4 or not parts[2].isdigit():
        return False
    host, boot, pid, ticks = parts[0], parts[1], int(parts[2]), parts[3]
    if host != socket.gethostname():
        return None
    if boot != _UNKNOWN and boot != _boot_id():
        return False
    fields = _stat(pid)
    if fields is None:
        if _PROC.joinpath("self").exists():  # /proc is there: no such process
            return False
        try:  # no /proc (not Linux): signal 0 only checks that the process exists
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    if fields[0] in ("Z", "X"):  # a zombie or dead process waiting for its parent
        return False
    return ticks == _UNKNOWN or (len(fields) > 19 and fields[19] == ticks)
