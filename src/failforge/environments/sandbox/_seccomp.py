"""The local sandbox's seccomp filter: classic BPF, assembled here in pure Python.

Why a hand-assembled program rather than libseccomp: the filter is one short deny list (about sixty
instructions), bubblewrap takes the raw ``sock_filter`` array on a file descriptor (``--seccomp FD``),
and the only PyPI route to libseccomp is a binding that still needs the C library installed. A
self-contained assembler keeps the sandbox free of a native dependency, and the program is small
enough to read in full (:func:`listing`) and to check instruction by instruction (the unit tests run
it through an independent BPF interpreter; the integration tests run it in the real kernel).

What it forbids, returning ``EPERM`` as Docker's default profile does (so programs see an ordinary
"Operation not permitted", never a killed process):

- new namespaces of any kind: ``unshare``, ``setns``, and ``clone`` with a ``CLONE_NEW*`` flag
  (``clone3`` gets ``ENOSYS``: its flags live in memory a filter cannot read, and glibc falls back to
  ``clone`` on ``ENOSYS``). This is what keeps user namespaces (root inside one) out of reach;
- the mount API, ``chroot``, ``pivot_root``;
- reaching into other processes or the kernel: ``ptrace``, ``process_vm_readv/writev``, ``kcmp``,
  ``pidfd_getfd``, ``perf_event_open``, ``bpf``, ``userfaultfd``, ``io_uring_*``, ``fanotify_init``,
  ``open_by_handle_at`` / ``name_to_handle_at``, the kernel keyring, ``syslog``;
- administering the machine: modules, ``kexec``, ``reboot``, swap, clocks, quotas, ``acct``, port I/O;
- ``ioctl(TIOCSTI)`` and ``ioctl(TIOCLINUX)`` (typing into a terminal; ``--new-session`` covers it too).

Any other architecture (the i386 ``int 0x80`` entry, the x32 ABI) gets ``ENOSYS``, so a syscall
number cannot be smuggled past the list through a second ABI. Only x86-64 has a table here; on any
other machine :func:`seccomp_program` raises and the local backend refuses to run.
"""

from __future__ import annotations

import errno
import platform
import struct
from dataclasses import dataclass

# Classic BPF opcodes (linux/bpf_common.h) and seccomp return values (linux/seccomp.h).
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_JGE_K = 0x35
BPF_JSET_K = 0x45
BPF_RET_K = 0x06
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
#: Offsets in ``struct seccomp_data`` (little-endian: the low word of an argument comes first).
OFF_NR, OFF_ARCH, OFF_ARG0_LO, OFF_ARG1_LO = 0, 4, 16, 24
AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000
#: CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET (linux/sched.h).
CLONE_NEW_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
TIOCSTI, TIOCLINUX = 0x5412, 0x541C

#: x86-64 numbers (arch/x86/entry/syscalls/syscall_64.tbl) of every call the filter refuses outright.
DENIED_X86_64: dict[str, int] = {
    # namespaces, mounts, root changes
    "unshare": 272,
    "setns": 308,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    # other processes and the kernel's internals
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "kcmp": 312,
    "pidfd_getfd": 438,
    "perf_event_open": 298,
    "bpf": 321,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "fanotify_init": 300,
    "open_by_handle_at": 304,
    "name_to_handle_at": 303,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "syslog": 103,
    "lookup_dcookie": 212,
    # administering the machine
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "create_module": 174,
    "get_kernel_syms": 177,
    "query_module": 178,
    "kexec_load": 246,
    "kexec_file_load": 320,
    "reboot": 169,
    "swapon": 167,
    "swapoff": 168,
    "acct": 163,
    "settimeofday": 164,
    "clock_settime": 227,
    "clock_adjtime": 305,
    "quotactl": 179,
    "quotactl_fd": 443,
    "iopl": 172,
    "ioperm": 173,
    "vhangup": 153,
    "nfsservctl": 180,
    "uselib": 134,
    "ustat": 136,
    "sysfs": 139,
    "_sysctl": 156,
    "afs_syscall": 183,
    "vserver": 236,
}
NR_CLONE, NR_CLONE3, NR_IOCTL = 56, 435, 16


@dataclass(frozen=True)
class Insn:
    """One instruction before assembly; jump targets are label names, resolved by :func:`assemble`."""

    code: int
    k: int = 0
    jt: str | int = 0
    jf: str | int = 0
    label: str | None = None  # a label naming this instruction


def _resolve(target: str | int, here: int, labels: dict[str, int]) -> int:
    if isinstance(target, int):
        return target
    offset = labels[target] - (here + 1)
    if not 0 <= offset <= 255:
        raise ValueError(
            f"BPF jump from {here} to {target!r} is {offset} instructions; classic BPF allows 0..255 forward"
        )
    return offset


def assemble(program: list[Insn]) -> bytes:
    """The ``struct sock_filter[]`` bytes bubblewrap reads: ``u16 code, u8 jt, u8 jf, u32 k`` each."""
    labels = {insn.label: i for i, insn in enumerate(program) if insn.label}
    if len(program) > 4096:
        raise ValueError("a classic BPF program holds at most 4096 instructions")
    return b"".join(
        struct.pack("<HBBI", insn.code, _resolve(insn.jt, i, labels), _resolve(insn.jf, i, labels), insn.k & 0xFFFFFFFF)
        for i, insn in enumerate(program)
    )


def filter_insns(denied: dict[str, int] | None = None) -> list[Insn]:
    """The filter as instructions (see the module doc for what it forbids and why)."""
    denied = DENIED_X86_64 if denied is None else denied
    prog = [
        Insn(BPF_LD_W_ABS, OFF_ARCH),
        Insn(BPF_JEQ_K, AUDIT_ARCH_X86_64, jt=0, jf="enosys"),
        Insn(BPF_LD_W_ABS, OFF_NR),
        Insn(BPF_JGE_K, X32_SYSCALL_BIT, jt="enosys", jf=0),
        Insn(BPF_JEQ_K, NR_CLONE, jt="clone", jf=0),
        Insn(BPF_JEQ_K, NR_CLONE3, jt="enosys", jf=0),
        Insn(BPF_JEQ_K, NR_IOCTL, jt="ioctl", jf=0),
    ]
    prog += [Insn(BPF_JEQ_K, nr, jt="eperm", jf=0) for nr in sorted(set(denied.values()))]
    prog += [
        Insn(BPF_RET_K, SECCOMP_RET_ALLOW),
        Insn(BPF_LD_W_ABS, OFF_ARG0_LO, label="clone"),
        Insn(BPF_JSET_K, CLONE_NEW_FLAGS, jt="eperm", jf=0),
        Insn(BPF_RET_K, SECCOMP_RET_ALLOW),
        Insn(BPF_LD_W_ABS, OFF_ARG1_LO, label="ioctl"),
        Insn(BPF_JEQ_K, TIOCSTI, jt="eperm", jf=0),
        Insn(BPF_JEQ_K, TIOCLINUX, jt="eperm", jf=0),
        Insn(BPF_RET_K, SECCOMP_RET_ALLOW),
        Insn(BPF_RET_K, SECCOMP_RET_ERRNO | errno.EPERM, label="eperm"),
        Insn(BPF_RET_K, SECCOMP_RET_ERRNO | errno.ENOSYS, label="enosys"),
    ]
    return prog


def seccomp_program(machine: str | None = None) -> bytes:
    """The assembled filter for this machine; ``ValueError`` where there is no syscall table for it."""
    machine = machine or platform.machine()
    if machine not in ("x86_64", "amd64", "AMD64"):
        raise ValueError(f"the local sandbox's seccomp filter has a syscall table for x86_64 only, not {machine}")
    return assemble(filter_insns())


def listing() -> str:
    """The program, one instruction a line, for review (``python -m failforge.environments.sandbox._seccomp``)."""
    names = {v: k for k, v in DENIED_X86_64.items()} | {NR_CLONE: "clone", NR_CLONE3: "clone3", NR_IOCTL: "ioctl"}
    lines = []
    for i, insn in enumerate(filter_insns()):
        op = {BPF_LD_W_ABS: "ld", BPF_JEQ_K: "jeq", BPF_JGE_K: "jge", BPF_JSET_K: "jset", BPF_RET_K: "ret"}[insn.code]
        note = f"  ; {names[insn.k]}" if insn.code == BPF_JEQ_K and insn.k in names and i > 3 else ""
        lines.append(f"{i:3} {insn.label or '':7} {op:4} {insn.k:#010x} jt={insn.jt} jf={insn.jf}{note}")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a review aid
    print(listing())
