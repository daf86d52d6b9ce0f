"""The stateful interpreter's program: it runs inside the sandbox (``python3 -s``, so the pinned PYTHONHASHSEED
holds), never in failforge.

Standalone on purpose (standard library only, no failforge import). Two ways to run it, the same observations:

- ``serve()`` (the default, one live process per run, the sandbox's session): one request line in, one result
  line out, the namespace kept in the process between blocks. The first request of a process carries the run's
  earlier code blocks (``history``, none for a new run), which it runs again with their output discarded; later
  requests carry only their block.
- ``main(<the request as a JSON string literal>)`` (``persistent = false``, a fresh process per block, sent on
  stdin after the source): the history is run again every time, then the block; the result is printed after
  :data:`RESULT_MARKER`.

A result is the printed text (``logs``), the last value (``output``, as ``str``), the error as smolagents words
it, whether ``final_answer`` was called, and the namespace fingerprint, as one JSON line cut to the request's
``result_limit`` when over it (:func:`fit`). The state after a block is a function of the blocks so far: the same
in record, replay and branch, on either backend.

Deterministic by construction: the hash seed is pinned by the sandbox; ``random`` and numpy's global
generator are seeded; ``time.time``/``time_ns``/``monotonic``/``perf_counter`` and ``datetime.now``/``today``
read a fixed instant; the allow-list is shown sorted.
"""

import ast
import builtins
import contextlib
import hashlib
import io
import json
import os
import random
import sys
import time
import warnings

RESULT_MARKER = "\n@@failforge-interpreter-result@@\n"
FROZEN_EPOCH = 1700000000.0
MAX_LOGS = 50000
#: smolagents' ``MAX_LENGTH_TRUNCATE_CONTENT``: what its memory keeps of a last value (head and tail, a notice between).
MAX_OUTPUT = 20000
#: A name longer than this is never shown in the fingerprint on its own when the result must be cut.
MAX_NAME = 200


class FinalAnswer(BaseException):
    def __init__(self, value):
        super().__init__("final_answer")
        self.value = value


def final_answer(answer):
    raise FinalAnswer(answer)


def _freeze_clock():
    counter = [0.0]

    def tick():
        counter[0] += 0.001
        return counter[0]

    time.time = lambda: FROZEN_EPOCH
    time.time_ns = lambda: int(FROZEN_EPOCH * 1e9)
    time.monotonic = tick
    time.perf_counter = tick
    import datetime as _datetime

    class datetime(_datetime.datetime):  # noqa: N801 - stands in for the class of the same name
        @classmethod
        def now(cls, tz=None):
            return cls.fromtimestamp(FROZEN_EPOCH, tz)

        @classmethod
        def utcnow(cls):
            return cls.utcfromtimestamp(FROZEN_EPOCH)

        @classmethod
        def today(cls):
            return cls.fromtimestamp(FROZEN_EPOCH)

    class date(_datetime.date):  # noqa: N801
        @classmethod
        def today(cls):
            return cls.fromtimestamp(FROZEN_EPOCH)

    _datetime.datetime = datetime  # type: ignore[misc]
    _datetime.date = date  # type: ignore[misc]


def _preload():
    """numpy and pandas imported before the clock is frozen (their own references stay real), their seeds set."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MKL_NUM_THREADS", "1")
    warnings.simplefilter("ignore")
    random.seed(0)
    try:
        import numpy

        numpy.random.seed(0)
    except ImportError:
        pass
    with contextlib.suppress(ImportError):
        import pandas  # noqa: F401


def _authorized(name, allowed):
    for entry in allowed:
        if entry == "*" or name == entry or name.startswith(entry + "."):
            return True
        if entry.endswith(".*") and (name == entry[:-2] or name.startswith(entry[:-1])):
            return True
    return False


class InterpreterError(Exception):
    pass


def _check_imports(tree, allowed):
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for name in names:
            if not _authorized(name, allowed):
                raise InterpreterError(
                    f"Import of {name} is not allowed. Authorized imports are: {sorted(allowed)!s}", node
                )


def _segment(code, node):
    return ast.get_source_segment(code, node) or ""


def run_block(code, ns, allowed):
    """Run one code block in ``ns``: (logs, output, error, is_final)."""
    out, err = io.StringIO(), io.StringIO()
    output, error, final = None, None, False
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return (
            "",
            "None",
            (
                f"Code parsing failed on line {exc.lineno} due to: {type(exc).__name__}\n"
                f"{exc.text or ''}{' ' * ((exc.offset or 1) - 1)}^\nError: {exc.msg}"
            ),
            False,
        )
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            _check_imports(tree, allowed)
        except InterpreterError as exc:
            error = (
                f"Code execution failed at line '{_segment(code, exc.args[1])}' due to: InterpreterError: {exc.args[0]}"
            )
        for stmt in [] if error else tree.body:
            try:
                if isinstance(stmt, ast.Expr):
                    output = eval(compile(ast.Expression(stmt.value), "<code>", "eval"), ns)
                else:
                    exec(compile(ast.Module([stmt], type_ignores=[]), "<code>", "exec"), ns)
                    output = _assigned(stmt, ns)
            except FinalAnswer as done:
                output, final = done.value, True
                break
            except Exception as exc:  # the agent's error, shown to it as smolagents words it
                error = f"Code execution failed at line '{_segment(code, stmt)}' due to: {type(exc).__name__}: {exc}"
                break
    logs = out.getvalue()
    if len(logs) > MAX_LOGS:
        logs = logs[:MAX_LOGS] + f"\n_Print outputs have been truncated over the limit of {MAX_LOGS} characters._\n"
    return logs, str(output), error, final


def _assigned(stmt, ns):
    target = None
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target = stmt.targets[0]
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        target = stmt.target
    if isinstance(target, ast.Name):
        return ns.get(target.id)
    return None


# -- the namespace fingerprint -----------------------------------------------------------------


def _code_digest(code, h):
    h.update(code.co_code)
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            _code_digest(const, h)
        else:
            h.update(repr(const).encode())
    h.update(repr(code.co_names).encode())


def _digest(value, budget):
    """(type name, hash or a note, bytes counted) of one namespace value."""
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    h = hashlib.sha256()
    if type(value).__name__ == "module":
        return kind, "module:" + getattr(value, "__name__", "?"), 0
    if hasattr(value, "__code__"):
        _code_digest(value.__code__, h)
        return kind, h.hexdigest()[:16], 0
    size = 0
    try:
        mod = type(value).__module__ or ""
        if mod.startswith("pandas") and hasattr(value, "to_numpy"):
            import pandas

            size = int(value.memory_usage(deep=True).sum()) if hasattr(value, "memory_usage") else 0
            if size > budget:
                return kind, f"over budget ({size} bytes)", 0
            h.update(repr(getattr(value, "shape", None)).encode())
            h.update(repr([str(c) for c in getattr(value, "columns", [])]).encode())
            h.update(
                repr(
                    [str(d) for d in getattr(value, "dtypes", [])] if hasattr(value, "columns") else str(value.dtype)
                ).encode()
            )
            try:
                h.update(pandas.util.hash_pandas_object(value, index=True).to_numpy().tobytes())
            except TypeError:
                h.update(value.to_csv().encode())
            return kind, h.hexdigest()[:16], size
        if mod.startswith("numpy") and hasattr(value, "tobytes"):
            size = int(getattr(value, "nbytes", 0))
            if size > budget:
                return kind, f"over budget ({size} bytes)", 0
            h.update(repr((getattr(value, "shape", None), str(getattr(value, "dtype", "")))).encode())
            h.update(
                value.tobytes()
                if getattr(value, "dtype", None) is None or value.dtype.kind != "O"
                else repr(value.tolist()).encode()
            )
            return kind, h.hexdigest()[:16], size
        if isinstance(value, (set, frozenset)):
            text = repr(sorted(repr(v) for v in value))
        else:
            text = repr(value)
    except Exception as exc:  # a value whose repr fails is named, not hashed
        return kind, f"unhashable ({type(exc).__name__})", 0
    if " at 0x" in text:
        return kind, "opaque (its repr holds an address)", 0
    size = len(text)
    if size > budget:
        return kind, f"over budget ({size} bytes)", 0
    h.update(text.encode("utf-8", "replace"))
    return kind, h.hexdigest()[:16], size


def namespace_fingerprint(ns, budget):
    parts = {}
    left = budget
    for name in sorted(ns):
        if name.startswith("__") or name == "final_answer":
            continue
        kind, digest, used = _digest(ns[name], left)
        left -= used
        parts[name] = f"{kind}|{digest}"
    return parts


def fresh_namespace():
    return {"__name__": "__main__", "__builtins__": builtins, "final_answer": final_answer}


def _smolagents_truncate(text):
    """smolagents' ``truncate_content``: applying it again to its own result gives the same text."""
    if len(text) <= MAX_OUTPUT:
        return text
    half = MAX_OUTPUT // 2
    return (
        text[:half]
        + f"\n..._This content has been truncated to stay below {MAX_OUTPUT} characters_...\n"
        + text[-half:]
    )


def fit(result, limit):
    """The result as one JSON line of at most ``limit`` bytes (None: any size), cut deterministically when over.

    The line goes back through the sandbox, which takes a bounded reply (past it the process is killed as one not
    speaking its protocol, and a fresh process's output is cut): a 300 kB string as the last value, 50,000 printed
    non-ASCII characters (six bytes each escaped) or 20,000 names in the namespace would otherwise stop the
    interpreter, or leave failforge an unreadable result. A result that fits is unchanged. One that does not has,
    in order: the namespace's names past a quarter of the limit (and any name over :data:`MAX_NAME` characters)
    folded into one part ``(folded)`` with their count and a hash of their parts (a change among them is still a
    drift); the last value cut as smolagents' memory cuts it (what the agent sees is the same); then the longest
    of logs, output and error halved, with a notice, until the line fits."""
    text = json.dumps(result, sort_keys=True)
    if not limit or len(text) <= limit:  # json.dumps escapes to ASCII: characters are bytes
        return text
    result = dict(result)
    kept, rest, used = {}, {}, 2
    for name in sorted(result["namespace"]):
        value = result["namespace"][name]
        size = len(json.dumps({name: value})) + 2
        if len(name) <= MAX_NAME and used + size <= limit // 4:
            kept[name], used = value, used + size
        else:
            rest[name] = value
    if rest:
        digest = hashlib.sha256(json.dumps(rest, sort_keys=True).encode()).hexdigest()[:16]
        kept["(folded)"] = f"{len(rest)} names|{digest}"
    result["namespace"] = kept
    result["output"] = _smolagents_truncate(result["output"])
    notice = f"\n_failforge: this step's result was over {limit} bytes, so the rest of this text is cut_\n"
    for _ in range(64):
        text = json.dumps(result, sort_keys=True)
        if len(text) <= limit:
            break
        field = max(("logs", "output", "error"), key=lambda k: len(json.dumps(result[k])))
        value = result[field] or ""
        if len(value) <= 2 * len(notice):
            break
        result[field] = value[: len(value) // 2] + notice
    return text


def step(request, ns):
    """Run the request's ``history`` (output discarded), then its ``code``, in ``ns``: the result as JSON-able."""
    allowed = list(request["imports"])
    for old in request["history"]:
        run_block(old, ns, allowed)
    logs, output, error, final = run_block(request["code"], ns, allowed)
    return {
        "logs": logs,
        "output": output,
        "error": error,
        "is_final_answer": final,
        "namespace": namespace_fingerprint(ns, int(request["budget"])),
    }


def main(request_text):
    """One step in a fresh process (the sandbox's exec): the state rebuilt from the history, then the new block."""
    request = json.loads(request_text)
    _preload()
    _freeze_clock()
    result = step(request, fresh_namespace())
    sys.stdout.write(RESULT_MARKER + fit(result, request.get("result_limit")))
    sys.stdout.flush()


def _limit_cpu(seconds):
    """The CPU limit per step: this process's CPU time so far plus ``seconds`` (a step over it is killed)."""
    import resource

    if not seconds:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = int(usage.ru_utime + usage.ru_stime) + int(seconds)
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def serve():
    """One process for the whole run (the sandbox's session): one request line in, one result line out, the
    namespace kept between them. The first request of a process carries the history it must rebuild (none for a
    new run); later ones only their block. Requests come on the original stdin and results leave on the original
    stdout, both kept on descriptors of their own: the agent's code sees an empty stdin and writes to stderr, so
    nothing it does can read a request or end up inside a result."""
    requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
    results = os.fdopen(os.dup(1), "w", encoding="utf-8")
    empty = os.open(os.devnull, os.O_RDONLY)
    os.dup2(empty, 0)
    os.close(empty)
    os.dup2(2, 1)
    _preload()
    _freeze_clock()
    ns = fresh_namespace()
    for line in requests:
        if not line.strip():
            continue
        request = json.loads(line)
        _limit_cpu(request.get("cpu_seconds"))
        results.write(fit(step(request, ns), request.get("result_limit")) + "\n")
        results.flush()
