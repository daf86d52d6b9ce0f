"""The doctor's context row reads the context a server states when a prompt exceeds it."""

from __future__ import annotations

from failforge.llm._doctor import stated_context


def test_llama_cpp_python_server_reformatted_error() -> None:
    text = (
        'model endpoint http://127.0.0.1:5/v1/chat/completions refused the request with HTTP 400: {"error":'
        ' {"message": "This model\'s maximum context length is 8192 tokens. However, you requested 15030 tokens'
        ' (15026 in the messages, 4 in the completion)."}}'
    )
    assert stated_context(text) == 8192


def test_llama_cpp_python_raw_error_and_openai_wording() -> None:
    assert stated_context("Requested tokens (15012) exceed context window of 4096") == 4096
    assert stated_context("This model's maximum context length is 128,000 tokens, however you requested") == 128000


def test_llama_cpp_cpp_server_body_and_no_statement() -> None:
    body = '{"error": {"type": "exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": 8192}}'
    assert stated_context(body) == 8192
    assert stated_context("HTTP 500: internal error") is None


def test_the_embedded_server_runs_with_the_context_the_doctor_states_and_a_prompt_cache() -> None:
    from failforge.llm import LOCAL_N_CTX, LocalModelServer
    from failforge.llm._local import LOCAL_PROMPT_CACHE_BYTES

    cached, plain = LocalModelServer(n_threads=1), LocalModelServer(n_threads=1, prompt_cache_bytes=0)
    try:  # never started: command() only builds the command line
        cmd = cached.command()
        assert cmd[cmd.index("--n_ctx") + 1] == str(LOCAL_N_CTX)
        assert cmd[cmd.index("--cache") + 1] == "True"
        assert cmd[cmd.index("--cache_size") + 1] == str(LOCAL_PROMPT_CACHE_BYTES)
        assert "--cache" not in plain.command()
    finally:
        cached.stop()
        plain.stop()
