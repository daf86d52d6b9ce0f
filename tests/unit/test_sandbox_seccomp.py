"""The local sandbox's seccomp program, run through an independent classic-BPF interpreter.

The interpreter below follows the kernel's semantics for the handful of opcodes a seccomp filter uses
(``ld [k]``, ``jeq``/``jge``/``jset`` with a constant, ``ret k``); it shares no code with the assembler,
so a wrong jump offset, a wrong offset into ``seccomp_data`` or a missing syscall shows up as a wrong
verdict. The real kernel runs the same bytes in tests/integration/test_sandbox_escapes.py.
"""

from __future__ import annotations

import errno
import struct

import pytest

from failforge.environments.sandbox._seccomp import (
    AUDIT_ARCH_X86_64,
    DENIED_X86_64,
    Insn,
    assemble,
    listing,
    seccomp_program,
)

ALLOW = 0x7FFF0000
EPERM = 0x00050000 | errno.EPERM
ENOSYS = 0x00050000 | errno.ENOSYS
AUDIT_ARCH_I386 = 0x40000003


def seccomp_data(nr: int, arch: int = AUDIT_ARCH_X86_64, args: tuple[int, ...] = ()) -> bytes:
    """``struct seccomp_data``: int nr, u32 arch, u64 instruction_pointer, u64 args[6] (little-endian)."""
    full = (list(args) + [0] * 6)[:6]
    return struct.pack("<iIQ6Q", nr, arch, 0x400000, *full)


def run(program: bytes, data: bytes) -> int:
    """Evaluate a classic BPF program the way the kernel's seccomp does."""
    insns = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:  # ld word at absolute offset k
            acc = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code == 0x15:  # jeq k
            pc += 1 + (jt if acc == k else jf)
        elif code == 0x35:  # jge k
            pc += 1 + (jt if acc >= k else jf)
        elif code == 0x45:  # jset k
            pc += 1 + (jt if acc & k else jf)
        elif code == 0x06:  # ret k
            return k
        else:
            raise AssertionError(f"opcode {code:#x} is not one a seccomp filter here should use")


PROGRAM = seccomp_program("x86_64")


@pytest.mark.parametrize("name", sorted(DENIED_X86_64))
def test_every_listed_call_is_refused_with_eperm(name):
    assert run(PROGRAM, seccomp_data(DENIED_X86_64[name])) == EPERM


@pytest.mark.parametrize(
    "name,nr,args",
    [
        ("read", 0, ()),
        ("write", 1, ()),
        ("openat", 257, ()),
        ("execve", 59, ()),
        ("fork", 57, ()),
        ("wait4", 61, ()),
        ("memfd_create", 319, ()),
        ("pidfd_open", 434, ()),
        ("prctl", 157, ()),
        ("seccomp", 317, ()),  # adding filters can only restrict further
        ("ioctl TCGETS", 16, (1, 0x5401)),
        # clone as glibc's fork and pthread_create use it: no namespace flag
        ("clone fork", 56, (0x01200011,)),
        ("clone thread", 56, (0x003D0F00,)),
    ],
)
def test_ordinary_calls_pass(name, nr, args):
    assert run(PROGRAM, seccomp_data(nr, args=args)) == ALLOW, name


@pytest.mark.parametrize("flag", [0x10000000, 0x00020000, 0x20000000, 0x40000000, 0x08000000, 0x04000000, 0x02000000])
def test_clone_with_any_namespace_flag_is_refused(flag):
    assert run(PROGRAM, seccomp_data(56, args=(0x01200011 | flag,))) == EPERM


def test_clone3_says_enosys_so_libc_falls_back_to_clone():
    assert run(PROGRAM, seccomp_data(435)) == ENOSYS


def test_terminal_injection_ioctls_are_refused():
    assert run(PROGRAM, seccomp_data(16, args=(0, 0x5412))) == EPERM  # TIOCSTI
    assert run(PROGRAM, seccomp_data(16, args=(0, 0x541C))) == EPERM  # TIOCLINUX


def test_other_abis_cannot_smuggle_a_syscall_past_the_list():
    # unshare is 310 on i386 and 272 | 0x40000000 through x32: neither may get through.
    assert run(PROGRAM, seccomp_data(310, arch=AUDIT_ARCH_I386)) == ENOSYS
    assert run(PROGRAM, seccomp_data(0, arch=AUDIT_ARCH_I386)) == ENOSYS
    assert run(PROGRAM, seccomp_data(0x40000000 | 272)) == ENOSYS
    assert run(PROGRAM, seccomp_data(0x40000000 | 0)) == ENOSYS


def test_program_is_well_formed_and_reviewable():
    assert len(PROGRAM) % 8 == 0 and len(PROGRAM) // 8 < 256
    assert "unshare" in listing() and "ret" in listing()


def test_assembler_refuses_a_jump_it_cannot_encode():
    far = [Insn(0x15, 1, jt="end")] + [Insn(0x06, 0)] * 300 + [Insn(0x06, ALLOW, label="end")]
    with pytest.raises(ValueError, match="0..255"):
        assemble(far)


def test_no_table_for_other_machines_means_no_filter():
    with pytest.raises(ValueError, match="x86_64 only"):
        seccomp_program("aarch64")
