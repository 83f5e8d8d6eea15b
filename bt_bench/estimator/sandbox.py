"""The kernel-enforced sandbox of the scoring process: Linux Landlock, applied by the process to itself.

Why Landlock (and not bubblewrap or a dedicated user): it is unprivileged (no setuid helper, no user namespaces,
no second account to create), in the mainline kernel since 5.13, and it is an *allow-list*: the scoring process can
read only the folders named here, whatever the file permissions say and whoever it runs as (root included). Once
applied it cannot be lifted by the process or anything it starts. Landlock also keeps it from ptrace-ing (and so from
reading the memory of) any process outside its domain, the judging process included; from ABI 4 on TCP bind and
connect are denied, and from ABI 6 on signals to and abstract unix sockets of processes outside it.

What the scoring process may read: the Python installation and the virtual environment (``sys.prefix`` trees and
the entries of its own ``sys.path``), the package folders of bt-bench's estimator API and of the estimator being
scored (reached through links in its private folder), system libraries and ``/proc``, ``/sys``, ``/dev``; it may
write only its private folder. The run cache, the run folders and everything else are out of reach: the caller
carves them out of any allowed folder that contains them (``carve``): such a folder becomes listable only.
"""

from __future__ import annotations

import ctypes
import os
import sys
from pathlib import Path

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446  # same numbers on x86_64 and arm64
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2
_PR_SET_NO_NEW_PRIVS = 38

# access rights per ABI (linux/landlock.h)
_FS_READ = (1 << 0) | (1 << 2) | (1 << 3)  # EXECUTE, READ_FILE, READ_DIR
_FS_READ_DIR = 1 << 3
_FS_WRITE_ABI1 = (1 << 1) | sum(1 << i for i in range(4, 13))  # WRITE_FILE, REMOVE_*, MAKE_*
_FS_REFER, _FS_TRUNCATE, _FS_IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_NET_ALL = (1 << 0) | (1 << 1)  # BIND_TCP, CONNECT_TCP
_SCOPE_ALL = (1 << 0) | (1 << 1)  # ABSTRACT_UNIX_SOCKET, SIGNAL

SYSTEM_READ = ("/usr", "/lib", "/lib64", "/bin", "/etc", "/proc", "/sys", "/opt/conda")
SYSTEM_WRITE = ("/dev",)  # /dev/null, /dev/shm (torch shared memory), GPU device files


class SandboxUnavailable(RuntimeError):
    """Landlock is not available here (not Linux, an old kernel, or disabled)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def abi_version() -> int:
    """The kernel's Landlock ABI version; raises ``SandboxUnavailable`` with the reason when there is none."""
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(f"Landlock is Linux-only (this is {sys.platform})")
    libc = _libc()
    v = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    if v < 0:
        err = ctypes.get_errno()
        raise SandboxUnavailable(f"Landlock is not available in this kernel ({os.uname().release}): "
                                 f"{os.strerror(err)}")
    return int(v)


def available() -> tuple[bool, str]:
    """(True, "Landlock ABI N") or (False, why not)."""
    try:
        return True, f"Landlock ABI {abi_version()}"
    except SandboxUnavailable as e:
        return False, str(e)


def _fs_rights(abi: int) -> tuple[int, int]:
    write = _FS_WRITE_ABI1 | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0) \
        | (_FS_IOCTL_DEV if abi >= 5 else 0)
    return _FS_READ, _FS_READ | write


def restrict(read: list[str], write: list[str], listable: list[str] = ()) -> int:
    """Apply the sandbox to this process (and everything it starts): read-only access beneath ``read``,
    read-write beneath ``write``, listing only (names, not contents) of ``listable`` folders, nothing else; no TCP
    (ABI >= 4); no signals or abstract sockets outside (ABI >= 6). Irreversible. Returns the ABI used. Paths that do
    not exist are skipped."""
    abi = abi_version()
    read_rights, all_rights = _fs_rights(abi)
    attr = _RulesetAttr(all_rights, _NET_ALL if abi >= 4 else 0, _SCOPE_ALL if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    libc = _libc()
    fd = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        raise SandboxUnavailable(f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        for paths, rights in ((read, read_rights), (write, all_rights), (listable, _FS_READ_DIR)):
            for p in paths:
                try:
                    pfd = os.open(p, os.O_PATH | os.O_CLOEXEC)
                except OSError:
                    continue
                try:
                    # a file (not a folder) takes only file rights
                    r = rights if os.path.isdir(p) else rights & ~((1 << 3) | sum(1 << i for i in range(4, 14)))
                    rule = _PathBeneathAttr(r, pfd)
                    if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(fd), ctypes.c_int(_RULE_PATH_BENEATH),
                                    ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                        raise SandboxUnavailable(f"landlock_add_rule({p}): {os.strerror(ctypes.get_errno())}")
                finally:
                    os.close(pfd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise SandboxUnavailable(f"prctl(NO_NEW_PRIVS): {os.strerror(ctypes.get_errno())}")
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)) < 0:
            raise SandboxUnavailable(f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)
    return abi


def carve(allowed: list[str], excluded: list[str]) -> tuple[list[str], list[str]]:
    """(readable, listable): read rules covering ``allowed`` except the ``excluded`` folders (the run cache, the run
    folders). Landlock has no deny rule, so an allowed folder that contains an excluded one (a repository on
    ``PYTHONPATH`` whose ``.bt_cache`` holds the runs, say) is split: that folder and each folder on the way down
    become listable only (file names, not contents), every other child stays readable, the excluded folder gets
    nothing. Children are resolved first, so a link cannot lead a rule into an excluded folder."""
    ex = [Path(e).resolve() for e in excluded]
    readable: list[str] = []
    listable: list[str] = []

    def add(p: Path) -> None:
        inside = [e for e in ex if e == p or p in e.parents]
        if not inside:
            readable.append(str(p))
        elif p not in inside:  # an ancestor of an excluded folder: list it, go down
            listable.append(str(p))
            try:
                kids = sorted(p.iterdir())
            except OSError:
                return
            for k in kids:
                add(k.resolve())

    for a in allowed:
        add(Path(a).resolve())
    return sorted(set(readable)), sorted(set(listable))
