"""The runner's jail: Linux Landlock, applied by the runner before any code of its own or of the candidate runs.

A jailed process (and everything it starts) may write only beneath the folders it is given and to the device files
it needs; it may not ptrace, read the memory of, or (Landlock ABI 6 and up) signal any process outside the jail, nor
open TCP connections (ABI 4 and up). Reading stays open: torch, Triton and the candidate need the installed packages.
Landlock needs no privileges (Linux 5.13 and up, enabled in the kernel); where it is missing, `apply` says why and
the runner runs unjailed, which every verdict records (`jail`).
"""
from __future__ import annotations

import ctypes
import glob
import os

_SYS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}
PR_SET_NO_NEW_PRIVS = 38
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH, RULE_NET_PORT = 1, 2

# Filesystem rights (include/uapi/linux/landlock.h); READ_FILE, READ_DIR and EXECUTE are left unhandled (allowed).
WRITE_FILE, REMOVE_DIR, REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
MAKE_CHAR, MAKE_DIR, MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = (1 << i for i in range(6, 13))
REFER, TRUNCATE = 1 << 13, 1 << 14
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

_WRITES_V1 = (WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO
              | MAKE_BLOCK | MAKE_SYM)
DEVICE_FILES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/dri/*")


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _NetPort(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64)]


class _Ruleset(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


def _syscalls():
    import platform

    return _SYS.get(platform.machine())


def abi_version() -> int:
    """Landlock's ABI version in this kernel, 0 where there is none (or no Linux)."""
    numbers = _syscalls()
    if numbers is None:
        return 0
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return 0
    version = libc.syscall(numbers[0], None, ctypes.c_size_t(0), ctypes.c_uint32(CREATE_RULESET_VERSION))
    return max(int(version), 0)


def apply(writable: list[str], ports: range | tuple = (), devices: bool = True, existing: list[str] = ()) -> str:
    """Jail this process. Returns 'landlock ABI N' when applied, else 'none: <why>'.

    existing: folders whose files the jailed process may write but in which it may make, remove or rename nothing
    (the measurer's shared buffers: a runner can neither put a link where the measurer looks nor fill the folder).

    ports: TCP ports the jailed processes may still bind and connect to (Landlock ABI 4 and up; every other port stays
    closed). Only the profiler's child asks for any: Nsight Compute's front end and the process it profiles talk over
    a local TCP port.

    devices: whether the GPU's device files (/dev/nvidia*, /dev/dri/*) may be opened for writing, which the CUDA driver
    needs; a process jailed without them cannot reach a GPU whatever it does to its environment (the compile-only
    runner, which never needs one).

    Landlock binds the thread that applies it and the threads it starts afterwards, so it must be applied while the
    process has one thread: a thread started earlier would stay outside the jail."""
    abi = abi_version()
    if abi < 1:
        return "none: this kernel has no Landlock (Linux 5.13+ with Landlock enabled is needed)"
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        threads = 1
    if threads > 1:
        return f"none: {threads} threads were running when the jail was to be applied; it would bind only one"
    create, add_rule, restrict = _syscalls()
    libc = ctypes.CDLL(None, use_errno=True)
    fs = _WRITES_V1 | (REFER if abi >= 2 else 0) | (TRUNCATE if abi >= 3 else 0)
    net = (NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 else 0
    scoped = (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0
    attr = _Ruleset(fs, net, scoped)
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    ruleset = libc.syscall(create, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        return f"none: landlock_create_ruleset failed ({os.strerror(ctypes.get_errno())})"
    try:
        file_rights = WRITE_FILE | (TRUNCATE if abi >= 3 else 0)
        allowed = DEVICE_FILES if devices else DEVICE_FILES[:3]  # /dev/null, /dev/zero, /dev/full
        paths = [(p, fs) for p in writable] + [(p, file_rights) for p in existing]
        paths += [(p, file_rights) for pattern in allowed for p in glob.glob(pattern)]
        for path, rights in paths:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not os.path.isdir(path):
                    rights &= WRITE_FILE | TRUNCATE
                rule = _PathBeneath(rights, fd)
                if libc.syscall(add_rule, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), ctypes.byref(rule),
                                ctypes.c_uint32(0)) < 0:
                    return f"none: landlock_add_rule({path}) failed ({os.strerror(ctypes.get_errno())})"
            finally:
                os.close(fd)
        for port in ports if net else ():
            rule = _NetPort(net, int(port))
            if libc.syscall(add_rule, ctypes.c_int(ruleset), ctypes.c_int(RULE_NET_PORT), ctypes.byref(rule),
                            ctypes.c_uint32(0)) < 0:
                return f"none: landlock_add_rule(port {port}) failed ({os.strerror(ctypes.get_errno())})"
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return f"none: prctl(NO_NEW_PRIVS) failed ({os.strerror(ctypes.get_errno())})"
        if libc.syscall(restrict, ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            return f"none: landlock_restrict_self failed ({os.strerror(ctypes.get_errno())})"
    finally:
        os.close(ruleset)
    return f"landlock ABI {abi}"


_EXEC_JAILED = ("import importlib.util, os, sys\n"
                "spec = importlib.util.spec_from_file_location('evolve_jail', sys.argv[1])\n"
                "jail = importlib.util.module_from_spec(spec)\n"
                "spec.loader.exec_module(jail)\n"
                "jail.apply([sys.argv[2]], devices=False)\n"
                "os.environ['TMPDIR'] = sys.argv[2]\n"
                "os.execv(sys.argv[3], sys.argv[3:])\n")


def jailed(argv: list[str], folder: str) -> list[str]:
    """The command line that runs argv jailed, its TMPDIR the folder: writes only under folder, no GPU device files,
    no TCP, no signals out (as far as this kernel's Landlock goes). For tools that read files a runner wrote
    (cuobjdump on a cubin): a crafted file then exploits a jailed process, not evolve. It loads this file alone, so
    no package import slows it."""
    import sys

    return [sys.executable, "-c", _EXEC_JAILED, __file__, str(folder), *argv]

