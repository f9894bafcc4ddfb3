"""Kernel confinement of the sandbox's worker processes: namespaces, Landlock, seccomp, rlimits.

Python-level guards (audit hooks, restricted builtins) are not a security boundary: code in the
same interpreter can undo them. Everything here is enforced by the kernel and cannot be lifted
by the confined process. Loaded by `sandbox_child.py` in the supervisor before any untrusted
code exists; like it, this file imports only the standard library plus `landlockpy` and
`pyseccomp`, and never the project.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import resource
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_THREAD = 0x00010000
PR_SET_PDEATHSIG = 1
FIRST_UID = 200_000  # workers run as FIRST_UID + a random 16-bit number, one uid per call
MAX_THREADS = 64
MAX_FILE_BYTES = 1 << 20  # the worker's stderr, a memory file the supervisor reads

# Syscalls the worker never needs: starting programs, changing what the kernel lets it do,
# reaching other processes, watching directories (inotify would show the names of files
# other processes create, e.g. other calls' copies in /tmp), and kernel-wide state.
# Refused with EPERM.
DENIED_SYSCALLS = (
    "execve",
    "execveat",
    "fork",
    "vfork",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "pidfd_open",
    "pidfd_getfd",
    "pidfd_send_signal",
    "kcmp",
    "socket",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "unshare",
    "setns",
    "mknod",
    "mknodat",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "keyctl",
    "add_key",
    "request_key",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "sethostname",
    "setdomainname",
    "syslog",
    "iopl",
    "ioperm",
    "name_to_handle_at",
    "open_by_handle_at",
    "fanotify_init",
    "fanotify_mark",
    "inotify_init",
    "inotify_init1",
    "inotify_add_watch",
    "open_tree",
    "move_mount",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "setuid",
    "setgid",
    "setreuid",
    "setregid",
    "setresuid",
    "setresgid",
    "setgroups",
    "setfsuid",
    "setfsgid",
    "capset",
    "personality",
    "vhangup",
    "lookup_dcookie",
    "migrate_pages",
    "move_pages",
    "rt_sigqueueinfo",
    "rt_tgsigqueueinfo",
)


class KernelUnavailable(RuntimeError):
    """The kernel lacks a feature the confinement needs: the sandbox refuses to run code."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def load_libraries(paths: list[str], libraries: dict[str, str]) -> tuple[Any, Any]:
    """Import landlockpy and pyseccomp from the service's environment, then forget its path.

    `libraries` maps library names to the file names the service resolved once: the
    standard `ctypes.util.find_library` would start `ldconfig` on every call (and a process
    started in the new PID namespace would end it), so it stays replaced in the supervisor.
    """
    import sys

    resolved = ctypes.util.find_library
    ctypes.util.find_library = lambda name: libraries.get(name) or resolved(name)
    sys.path[:0] = paths
    try:
        import landlockpy
        import pyseccomp
    except (ImportError, OSError, RuntimeError) as exc:
        raise KernelUnavailable(f"the seccomp/Landlock bindings cannot load: {exc}") from exc
    finally:
        del sys.path[: len(paths)]
    return landlockpy, pyseccomp


def enter_namespaces() -> None:
    """New network, IPC, UTS and (for children) PID namespaces; a user namespace if not root."""
    flags = CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID
    uid, gid = os.geteuid(), os.getegid()
    if uid != 0:
        flags |= CLONE_NEWUSER
    libc = _libc()
    if libc.unshare(flags) != 0:
        code = ctypes.get_errno()
        raise KernelUnavailable(
            f"cannot create network/PID namespaces (unshare: {os.strerror(code)}); "
            + (
                "unprivileged user namespaces are disabled on this machine"
                if uid != 0
                else "the kernel lacks namespace support"
            )
        )
    if uid != 0:
        with open("/proc/self/setgroups", "w") as setgroups:
            setgroups.write("deny")
        with open("/proc/self/uid_map", "w") as uid_map:
            uid_map.write(f"{uid} {uid} 1")
        with open("/proc/self/gid_map", "w") as gid_map:
            gid_map.write(f"{gid} {gid} 1")


class Confinement:
    """What every worker of one call gets: a Landlock ruleset and a seccomp filter, built once."""

    def __init__(self, landlockpy: Any, pyseccomp: Any, readable: list[str], min_abi: int) -> None:
        try:
            abi = landlockpy.abi_version()
        except OSError as exc:
            raise KernelUnavailable(f"Landlock is not available: {exc}") from exc
        if abi < min_abi:
            raise KernelUnavailable(
                f"Landlock ABI {abi} is below the required {min_abi} "
                "(Linux 5.13+ with Landlock enabled in the LSM list)"
            )
        self.abi = abi
        access = landlockpy.AccessFS
        self.ruleset = landlockpy.Ruleset(
            handled_fs=landlockpy.fs_for_abi(abi),
            handled_net=landlockpy.net_for_abi(abi),
            scoped=landlockpy.scope_for_abi(abi),
        )
        for path in readable:
            if os.path.isdir(path):
                self.ruleset.allow_path(path, access.READ_FILE | access.READ_DIR)
            elif os.path.exists(path):
                self.ruleset.allow_path(path, access.READ_FILE)
        self.ruleset.allow_path("/dev/null", access.READ_FILE | access.WRITE_FILE)
        self.filter = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
        refuse = pyseccomp.ERRNO(errno.EPERM)
        for name in DENIED_SYSCALLS:
            try:
                self.filter.add_rule(refuse, name)
            except (OSError, ValueError, RuntimeError):
                continue  # not a syscall on this architecture
        self.filter.add_rule(
            refuse, "clone", pyseccomp.Arg(0, pyseccomp.MASKED_EQ, CLONE_THREAD, 0)
        )
        # clone3 hides its flags in memory seccomp cannot read: say "not implemented" and libc
        # falls back to clone, whose flags the rule above checks.
        self.filter.add_rule(pyseccomp.ERRNO(errno.ENOSYS), "clone3")

    def apply(self, limits: dict[str, Any], uid: int) -> None:
        """In the worker, irreversibly: rlimits, an unprivileged uid, Landlock, seccomp.

        The uid is the call's own, shared with no other process on the host: the thread
        limit counts only this call's workers, and no other sandbox's process is its peer.
        """
        _libc().prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
        cpu = int(limits["cpu_seconds"])
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        memory = int(limits["memory_mb"]) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        for kind, value in (
            (resource.RLIMIT_FSIZE, MAX_FILE_BYTES),
            (resource.RLIMIT_CORE, 0),
            (resource.RLIMIT_NOFILE, 64),
            (resource.RLIMIT_NPROC, MAX_THREADS),
            (resource.RLIMIT_MEMLOCK, 0),
            (resource.RLIMIT_MSGQUEUE, 0),
        ):
            resource.setrlimit(kind, (value, value))
        if os.geteuid() == 0:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        else:
            _drop_capabilities()  # those a new user namespace gave its creator
        self.ruleset.restrict()
        self.ruleset.close()
        self.filter.load()


def _drop_capabilities() -> None:
    """capset(2) to empty sets: a non-root caller keeps its uid but loses every capability."""
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this thread
    data = (ctypes.c_uint32 * 6)()
    if _libc().capset(header, data) != 0:
        raise KernelUnavailable(f"cannot drop capabilities: {os.strerror(ctypes.get_errno())}")
