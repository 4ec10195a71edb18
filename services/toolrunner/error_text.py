"""The meaningful line of a crashed worker's stderr: the exception, not whatever was printed last.

torch ends a CUDA error with hints ("Compile with `TORCH_USE_CUDA_DSA` to enable device-side
assertions."), Python ends a traceback with the exception line, and a fatal signal leaves "Fatal Python
error: Segmentation fault" above a thread dump. The last line of stderr is then a hint or a stack frame;
the reason a verdict quotes should be the error. Pure.
"""

from __future__ import annotations

import re

# "ValueError: ...", "torch.AcceleratorError: CUDA error: ...", "triton.compiler.errors.CompilationError:
# ...", "RuntimeError: CUDA error: an illegal memory access was encountered", "KeyboardInterrupt".
_EXCEPTION = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Exit|Interrupt|Failure)(?::\s.*)?$")
_FATAL = re.compile(r"^(?:Fatal Python error: .+|.*CUDA error: .+|Segmentation fault.*|Aborted.*)$")


def error_line(stderr: str) -> str:
    """The last exception line of `stderr`, else the last fatal-error line, else its last non-blank line."""
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    for pattern in (_EXCEPTION, _FATAL):
        found = next((ln for ln in reversed(lines) if pattern.match(ln)), None)
        if found is not None:
            return found
    return lines[-1] if lines else ""
