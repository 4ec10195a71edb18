"""Find NVIDIA command-line tools and tell whether a GPU is present, for the GPU-only tools.

Looked up at call time (never at import): PATH first, then the CUDA toolkit and Nsight Compute install
locations the NVIDIA packages use.
"""

from __future__ import annotations

import glob
import os
import shutil

from services.toolrunner.tool import ToolFailure

_CUDA_DIRS = ("/usr/local/cuda/bin", "/usr/local/cuda/compute-sanitizer", "/opt/nvidia/nsight-compute")


def find_tool(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = [os.path.join(d, name) for d in _CUDA_DIRS]
    # Nsight Compute installs as /opt/nvidia/nsight-compute/<version>/ncu; take the newest.
    candidates += sorted(glob.glob(f"/opt/nvidia/nsight-compute/*/{name}"), reverse=True)
    candidates += sorted(glob.glob(f"/usr/local/cuda-*/bin/{name}"), reverse=True)
    return next((c for c in candidates if os.path.isfile(c) and os.access(c, os.X_OK)), None)


def gpu_count() -> int:
    """CUDA devices NVML sees; 0 when there is no driver (CPU machines)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver/library means no GPU, whatever the error class
        return 0
    try:
        return int(pynvml.nvmlDeviceGetCount())
    finally:
        pynvml.nvmlShutdown()


def require_gpu(tool: str, gpu: int, binary: str | None = None) -> str | None:
    """Raise ToolFailure("unavailable") unless GPU `gpu` (and `binary`, when named) exist; the binary path."""
    n = gpu_count()
    if n == 0:
        raise ToolFailure("unavailable", f"unavailable: no GPU ({tool} needs a CUDA GPU; run it on the H200)")
    if not 0 <= gpu < n:
        raise ToolFailure("refused", f"gpu={gpu}: this machine has GPUs 0..{n - 1}")
    if binary is None:
        return None
    path = find_tool(binary)
    if path is None:
        raise ToolFailure(
            "unavailable",
            f"unavailable: {binary} not found on PATH or in /usr/local/cuda/bin "
            f"or /opt/nvidia/nsight-compute ({tool} needs it)",
        )
    return path
