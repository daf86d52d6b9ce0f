"""The proxy: the run API on the run gateway's app, for frameworks whose tools stay in their own process.

Routes (besides the gateway's model routes ``/runs/{id}/agents/{agent}/v1/chat/completions`` and
``/runs/{id}/v1/chat/completions``):

- ``POST /runs`` (:class:`RunRequest`) → :class:`RunOpened` (the run's id, its capability token, and its
  model base URL, which carries the token)
- ``GET /runs`` → the open and finished run ids (an id alone reaches no run)
- ``GET /runs/{id}`` → :class:`RunStatus` of an open run, :class:`RunResult` of a finished one
- ``DELETE /runs/{id}`` → drop an open run (nothing is written)
- ``POST /runs/{id}/tools`` (:class:`ToolReport`) → :class:`ToolRecorded`
- ``POST /runs/{id}/finish`` (:class:`FinishRequest`) → :class:`RunResult`
- ``GET /openapi.json``: every body's JSON schema, generated from the models that validate it

Every route of one run needs the run's token: in the path segment (``/runs/{id}~{token}/...``) or a header
(``X-Failforge-Token`` or ``Authorization: Bearer``); an unknown run and a wrong token get the same 404. A
finished run is readable with its token while this proxy runs (a run finished by an earlier proxy is in
the output file). Every answer passes through the run's redactor (:class:`~failforge.secrets.Redactor`),
as the files do. A body that fails its schema is a 400 whose message names the field and whose ``expected`` carries the
schema it must fit. A finished run is appended and fsynced before it is answered (:class:`RunStore`),
and is a seed by ``seed_id`` from that moment on.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import anyio
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from failforge import __version__
from failforge.errors import FailforgeError
from failforge.gateway import (
    DEFAULT_MAX_BODY,
    RUN_HEADER,
    Gateway,
    HTTPRefusal,
    error_reply,
    json_reply,
    quoted,
    read_body,
    response_of,
    token_matches,
    token_of,
    unknown_run,
)
from failforge.llm import Responder
from failforge.proxy._models import (
    ErrorBody,
    FinishRequest,
    RunOpened,
    RunRequest,
    RunResult,
    RunStatus,
    ToolRecorded,
    ToolReport,
)
from failforge.proxy._runs import ProxyRun, failure_of
from failforge.proxy._store import RunStore
from failforge.secrets import Redactor
from failforge.trajectory import Trajectory


def shape_of(model: type[BaseModel]) -> dict[str, str]:
    """A body model's fields and their JSON types, compactly (for an error message)."""
    schema = model.model_json_schema()
    out: dict[str, str] = {}
    for name, prop in (schema.get("properties") or {}).items():
        out[name] = _type_of(prop)
    return out


def _type_of(prop: dict[str, Any]) -> str:
    if "enum" in prop:
        return " | ".join(json.dumps(v) for v in prop["enum"])
    if "const" in prop:
        return json.dumps(prop["const"])
    if "anyOf" in prop:
        return " | ".join(_type_of(p) for p in prop["anyOf"])
    if "$ref" in prop:
        return "object"
    return str(prop.get("type", "any"))


def parse_body(raw: bytes, model: type[BaseModel]) -> Any:
    try:
        data = json.loads(raw or b"{}")
    except ValueError as exc:
        raise _BodyError(f"the body is not JSON: {exc}", model, "invalid_json") from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "<body>"
        shape = ", ".join(f"{k}: {v}" for k, v in shape_of(model).items())
        raise _BodyError(
            f"field '{where}': {first['msg']} (a {model.__name__} is {{{shape}}})", model, "invalid_body"
        ) from None


class _BodyError(Exception):
    def __init__(self, message: str, model: type[BaseModel], code: str) -> None:
        super().__init__(message)
        self.model = model
        self.code = code


class Proxy:
    """The proxy's runs, finished runs and seeds, served on a :class:`~failforge.gateway.Gateway` app."""

    def __init__(
        self,
        *,
        upstream: Responder | None = None,
        seeds: list[Trajectory] | None = None,
        max_body: int = DEFAULT_MAX_BODY,
        output: Path | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.upstream = upstream
        self.seeds = {s.id: s for s in seeds or []}
        self.store = RunStore(output, redactor=redactor)
        self.runs: dict[str, ProxyRun] = {}
        self.tokens: dict[str, str] = {}
        """Each run's capability token by run id, open or finished in this process."""
        self._lock = threading.Lock()
        self.gateway = Gateway(max_body=max_body, routes=self._routes())

    @property
    def base_url(self) -> str:
        return self.gateway.base_url

    @property
    def finished(self) -> list[RunResult]:
        return self.store.finished()

    # --- routes ---------------------------------------------------------------------------------

    def _routes(self) -> list[BaseRoute]:
        return [
            Route("/openapi.json", self._openapi, methods=["GET"]),
            Route("/runs", self._runs, methods=["GET", "POST"]),
            Route("/runs/{run}", self._run, methods=["GET", "DELETE"]),
            Route("/runs/{run}/tools", self._tools, methods=["POST"]),
            Route("/runs/{run}/finish", self._finish, methods=["POST"]),
        ]

    async def _openapi(self, request: Request) -> Response:
        return response_of(json_reply(openapi()))

    async def _runs(self, request: Request) -> Response:
        if request.method == "GET":
            with self._lock:
                open_ = sorted(self.runs)
            return response_of(json_reply({"open": open_, "finished": sorted(r.run_id for r in self.store.finished())}))
        return await self._serve(request, RunRequest, self.open_run)

    def _allowed(self, request: Request) -> str:
        """The run id a request names, once its token is the run's; else the one 404 for an unknown run."""
        run_id, token = token_of(request.path_params["run"], request.headers)
        with self._lock:
            expected = self.tokens.get(run_id)
        if expected is None or not token_matches(expected, token):
            raise HTTPRefusal(404, unknown_run(run_id, token), "unknown_run")
        return run_id

    async def _run(self, request: Request) -> Response:
        try:
            run_id = self._allowed(request)
        except HTTPRefusal as exc:
            return self._error(exc)
        if request.method == "DELETE":
            with self._lock:
                run = self.runs.pop(run_id, None)
                if run is not None:
                    self.tokens.pop(run_id, None)
            if run is None:
                return self._error(HTTPRefusal(404, f"run {run_id!r} is not open (it is finished)", "unknown_run"))
            self.gateway.remove(run_id)
            return response_of(json_reply({"deleted": run_id}))
        with self._lock:
            open_run = self.runs.get(run_id)
        if open_run is not None:
            return self._answer(open_run.status().model_dump(mode="json"))
        done = self.store.result(run_id)
        if done is not None:
            return self._answer(done.model_dump(mode="json"))
        return self._error(HTTPRefusal(404, unknown_run(run_id, None), "unknown_run"))

    async def _tools(self, request: Request) -> Response:
        run = self._open_run_or_404(request)
        if isinstance(run, Response):
            return run
        return await self._serve(request, ToolReport, lambda report: self._tool(run, report))

    async def _finish(self, request: Request) -> Response:
        run = self._open_run_or_404(request)
        if isinstance(run, Response):
            return run
        return await self._serve(request, FinishRequest, lambda body: self.finish(run, body))

    async def _serve(self, request: Request, model: type[BaseModel], handle: Any) -> Response:
        try:
            raw = await read_body(request, self.gateway.max_body)
            body = parse_body(raw, model)
            result = await anyio.to_thread.run_sync(handle, body)
        except HTTPRefusal as exc:
            return self._error(exc)
        except _BodyError as exc:
            return response_of(error_reply(400, str(exc), exc.code, expected=exc.model.model_json_schema()))
        except FailforgeError as exc:
            failure = failure_of(exc)
            extra = {} if failure is None else {"failure": json.loads(self.redactor.text(failure.model_dump_json()))}
            message = self.redactor.text(str(exc))
            return response_of(error_reply(400, message, type(exc).__name__, "failforge_boundary", **extra))
        return self._answer(result.model_dump(mode="json") if isinstance(result, BaseModel) else result)

    @property
    def redactor(self) -> Redactor:
        return self.store.redactor

    def _answer(self, payload: Any) -> Response:
        """A JSON answer, through the redactor every file goes through: a served trajectory is masked as its line is."""
        return Response(self.redactor.text(json.dumps(payload)), media_type="application/json")

    @staticmethod
    def _error(exc: HTTPRefusal) -> Response:
        return response_of(error_reply(exc.status, str(exc), exc.code))

    def _open_run_or_404(self, request: Request) -> ProxyRun | Response:
        try:
            run_id = self._allowed(request)
        except HTTPRefusal as exc:
            return self._error(exc)
        with self._lock:
            run = self.runs.get(run_id)
        if run is not None:
            return run
        return self._error(HTTPRefusal(404, f"run {run_id!r} is finished; open a new run (POST /runs)", "unknown_run"))

    # --- what the routes do ---------------------------------------------------------------------

    def open_run(self, request: RunRequest) -> RunOpened:
        seed: Trajectory | None = None
        if request.seed_id is not None:
            seed = self.seeds.get(request.seed_id) or self.store.seed(request.seed_id)
            if seed is None:
                count = len({*self.seeds, *self.store.trajectories})
                known = (
                    f"it has {count} seed(s)"
                    if count
                    else "it has none: start the proxy with --seeds, or finish a run first"
                )
                raise HTTPRefusal(404, f"unknown seed {quoted(request.seed_id)} ({known})", "unknown_seed")
        elif request.seed is not None:
            try:
                seed = Trajectory.model_validate(request.seed)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise HTTPRefusal(
                    400,
                    f"the seed is not a trajectory: field '{'.'.join(str(p) for p in first['loc'])}': {first['msg']}",
                    "invalid_seed",
                ) from None
        run = ProxyRun(request, seed=seed, upstream=self.upstream)
        with self._lock:
            if run.id in self.runs or self.store.result(run.id) is not None:
                raise HTTPRefusal(409, f"run {run.id!r} already exists", "run_exists")
            self.runs[run.id] = run
            self.tokens[run.id] = run.served.token
        urls = self.gateway.add(run.served)
        return RunOpened(
            run_id=run.id,
            token=run.served.token,
            base_url=urls.model,
            mode=run.request.mode,
            replay_until=run.session.log.replay_until,
        )

    def _tool(self, run: ProxyRun, report: ToolReport) -> ToolRecorded:
        step = run.tool(report)
        return ToolRecorded(step=step.index, state_fingerprint=step.state_fingerprint)

    def finish(self, run: ProxyRun, body: FinishRequest) -> RunResult:
        result = run.finish(body)
        self.store.add(result)  # durable before it is answered
        with self._lock:
            self.runs.pop(run.id, None)
        self.gateway.remove(run.id)
        return result


class ProxyServer:
    """Context manager: the proxy served on loopback; ``base_url`` is valid inside."""

    def __init__(self, proxy: Proxy, *, host: str = "127.0.0.1", port: int = 0) -> None:
        from failforge.gateway import require_loopback

        self.proxy = proxy
        self.host = require_loopback(host)
        self.port = port

    @property
    def base_url(self) -> str:
        return self.proxy.base_url

    def __enter__(self) -> ProxyServer:
        self.proxy.gateway.start(host=self.host, port=self.port)
        return self

    def serve_forever(self) -> None:
        self.proxy.gateway.start(host=self.host, port=self.port)
        self.proxy.gateway.wait()

    def __exit__(self, *exc: object) -> None:
        self.proxy.gateway.stop()


def openapi() -> dict[str, Any]:
    """The run API as an OpenAPI 3.1 document, its schemas generated from the models that validate the bodies."""
    models: list[type[BaseModel]] = [
        RunRequest,
        RunOpened,
        RunStatus,
        RunResult,
        ToolReport,
        ToolRecorded,
        FinishRequest,
        ErrorBody,
    ]
    schemas: dict[str, Any] = {}
    for model in models:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(schema.pop("$defs", {}))
        schemas[model.__name__] = schema

    def body(name: str) -> dict[str, Any]:
        return {"required": True, "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}

    def answers(name: str, *errors: int) -> dict[str, Any]:
        out: dict[str, Any] = {
            "200": {
                "description": name,
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}},
            }
        }
        for status in errors:
            out[str(status)] = {
                "description": "an OpenAI-style error",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
            }
        return out

    run = {"name": "run", "in": "path", "required": True, "schema": {"type": "string"}}
    agent = {"name": "agent", "in": "path", "required": True, "schema": {"type": "string"}}
    chat = {
        "description": (
            "an OpenAI chat-completions request, answered by the run's model boundary (stream=true as server-sent"
            " events)"
        ),
        "required": True,
        "content": {"application/json": {"schema": {"type": "object"}}},
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "failforge proxy",
            "version": __version__,
            "description": (
                "Record, replay and branch runs of any framework; model calls are OpenAI chat completions, tool calls"
                " are reported."
            ),
        },
        "paths": {
            "/runs": {
                "post": {
                    "summary": "open a run",
                    "requestBody": body("RunRequest"),
                    "responses": answers("RunOpened", 400, 404, 409),
                },
                "get": {"summary": "the open and finished run ids", "responses": {"200": {"description": "run ids"}}},
            },
            "/runs/{run}": {
                "get": {
                    "summary": "an open run's status, or a finished run's result",
                    "parameters": [run],
                    "responses": {
                        "200": {
                            "description": "RunStatus or RunResult",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "oneOf": [
                                            {"$ref": "#/components/schemas/RunStatus"},
                                            {"$ref": "#/components/schemas/RunResult"},
                                        ]
                                    }
                                }
                            },
                        },
                        "404": answers("ErrorBody")["200"],
                    },
                },
                "delete": {
                    "summary": "drop an open run",
                    "parameters": [run],
                    "responses": {"200": {"description": "deleted"}},
                },
            },
            "/runs/{run}/tools": {
                "post": {
                    "summary": "report one tool call",
                    "parameters": [run],
                    "requestBody": body("ToolReport"),
                    "responses": answers("ToolRecorded", 400, 404),
                }
            },
            "/runs/{run}/finish": {
                "post": {
                    "summary": "finish the run",
                    "parameters": [run],
                    "requestBody": body("FinishRequest"),
                    "responses": answers("RunResult", 400, 404),
                }
            },
            "/runs/{run}/agents/{agent}/v1/chat/completions": {
                "post": {
                    "summary": "a model call of one agent",
                    "parameters": [run, agent],
                    "requestBody": chat,
                    "responses": {"200": {"description": "a chat completion"}, "400": answers("ErrorBody")["200"]},
                }
            },
            "/runs/{run}/v1/chat/completions": {
                "post": {
                    "summary": (
                        f"a model call naming its agent by the X-Failforge-Agent header ({RUN_HEADER} not needed)"
                    ),
                    "parameters": [run],
                    "requestBody": chat,
                    "responses": {"200": {"description": "a chat completion"}},
                }
            },
        },
        "components": {"schemas": schemas},
    }


__all__ = ["Proxy", "ProxyServer", "openapi", "parse_body", "shape_of"]
