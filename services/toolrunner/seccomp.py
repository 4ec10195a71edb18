"""A seccomp filter for sandboxed workers: the syscalls no kernel task needs and an escape would.

A classic BPF program (the format `bwrap --seccomp FD` loads) written out here because it is 40
instructions and libseccomp's Python binding is not on PyPI. It answers EPERM to: new namespaces (clone
with CLONE_NEW*, unshare, setns: the root-drop mode cannot use bwrap's --disable-userns), ptrace and
cross-process memory access, the kernel keyring, bpf, userfaultfd, mounts and the new mount API, module
loading, kexec, raw I/O ports, clock and reboot calls; clone3 gets ENOSYS (its flags are behind a pointer,
so libc falls back to clone, which is checked). 32-bit and x32 syscalls are refused too (they would
bypass the table). x86_64 only: elsewhere `program()` is None and the layer is reported absent.
"""

from __future__ import annotations

import errno
import platform
import struct

_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
# BPF opcodes: ld word abs, jeq/jge/jset immediate, ret immediate
_LD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
_CLONE_NEW = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

# x86_64 syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl)
DENIED: dict[str, int] = {
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "unshare": 272, "setns": 308,
    "keyctl": 250, "add_key": 248, "request_key": 249, "bpf": 321, "userfaultfd": 323,
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320,
    "iopl": 172, "ioperm": 173, "open_by_handle_at": 304, "name_to_handle_at": 303, "swapon": 167,
    "swapoff": 168, "reboot": 169, "acct": 163, "settimeofday": 164, "clock_settime": 227, "adjtimex": 159,
    "quotactl": 179,
}
_CLONE, _CLONE3 = 56, 435


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def program() -> bytes | None:
    """The filter as `struct sock_filter[]` bytes, or None where it is not built (not x86_64)."""
    if platform.machine() != "x86_64":
        return None
    eperm = _RET_ERRNO | errno.EPERM
    out = [
        _ins(_LD, 4),  # seccomp_data.arch
        _ins(_JEQ, _AUDIT_ARCH_X86_64, jt=1),
        _ins(_RET, eperm),
        _ins(_LD, 0),  # seccomp_data.nr
        _ins(_JGE, _X32_BIT, jf=1),
        _ins(_RET, eperm),
    ]
    for nr in DENIED.values():
        out += [_ins(_JEQ, nr, jf=1), _ins(_RET, eperm)]
    out += [_ins(_JEQ, _CLONE3, jf=1), _ins(_RET, _RET_ERRNO | errno.ENOSYS)]
    # clone: refuse namespace flags (seccomp_data.args[0], low word at offset 16); last, since it
    # replaces the syscall number in the accumulator.
    out += [_ins(_JEQ, _CLONE, jf=3), _ins(_LD, 16), _ins(_JSET, _CLONE_NEW, jf=1), _ins(_RET, eperm),
            _ins(_RET, _RET_ALLOW)]
    return b"".join(out)
