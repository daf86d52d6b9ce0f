"""A methods config: several attribution methods, each with its own judge endpoint, run into one folder each.

``failforge attribute DATA --methods-config FILE.yaml -o DIR`` runs every entry of ``runs`` into
``DIR/<name>/`` with the one runner (:func:`failforge.attribution._run.run_attribution`), one after the
other, so every folder is a normal attribution run folder (ledger, resume, recording). The file names
endpoints the way :class:`failforge.llm.ModelEndpoint` does: a URL, a model, and the *name* of the
environment variable holding the key. A key itself is refused, so the file (and the provenance copied into
each folder's manifest) can be committed and shared::

    runs:
      - name: auditor-remote        # folder under -o; default: the method name
        method: auditor
        endpoint: {base_url: "https://judge.example/v1", model: big-judge, api_key_env: JUDGE_KEY}
        executor: process           # optional: thread (default: --executor), process, ray
        workers: 4                  # optional: sessions in flight (default: --workers)
      - method: all-at-once         # no endpoint: the embedded local model
      - method: random              # a baseline needs no judge
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from failforge.attribution._dispatch import Executor
from failforge.attribution._methods import methods
from failforge.canonical import canonical_hash
from failforge.configfile import read_config_data
from failforge.errors import ConfigError
from failforge.llm import ModelEndpoint
from failforge.secrets import safe_url

__all__ = ["MethodRun", "MethodsConfig", "load_methods_config"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
_SECRET_KEYS = ("api_key", "key", "token", "password", "secret")


class RunEndpoint(ModelEndpoint):
    """A judge endpoint as :class:`ModelEndpoint` takes it, with unknown keys refused (a typo is not ignored)."""

    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def _no_secret(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for key in _SECRET_KEYS:
                if key in data:
                    raise ValueError(
                        "a secret does not go in the file; expected api_key_env, the name of the environment variable"
                        f" holding it (found key '{key}')"
                    )
        return data


class MethodRun(BaseModel):
    """One method's run: its folder name, the method, its judge, where its sessions run."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, description="folder under the output folder (default: the method name)")
    method: str
    endpoint: RunEndpoint | None = Field(
        default=None, description="the judge (default: the embedded local model); ignored by baselines"
    )
    executor: Executor | None = Field(default=None, description="thread, process or ray (default: --executor)")
    workers: int | None = Field(default=None, ge=1, description="sessions in flight (default: --workers)")

    @field_validator("method")
    @classmethod
    def _known(cls, value: str) -> str:
        return methods.checked(value)

    @field_validator("name")
    @classmethod
    def _folder(cls, value: str | None) -> str | None:
        if value is not None and not _NAME.match(value):
            raise ValueError(
                "expected a folder name: letters, digits, '.', '_' or '-', starting with a letter or digit"
            )
        return value

    @property
    def folder(self) -> str:
        return self.name or self.method

    def provenance(self) -> dict[str, Any]:
        """The entry as written, minus anything secret (a URL's userinfo, a key-shaped query value)."""
        out = self.model_dump(exclude_none=True)
        if self.endpoint is not None:
            endpoint = self.endpoint
            out["endpoint"] = {
                "base_url": safe_url(endpoint.base_url),
                "model": endpoint.model,
                "api_key_env": endpoint.api_key_env,
            }
            if "timeout" in self.endpoint.model_fields_set:
                out["endpoint"]["timeout"] = self.endpoint.timeout
        return out


class MethodsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    runs: list[MethodRun] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> MethodsConfig:
        seen: set[str] = set()
        for run in self.runs:
            if run.folder in seen:
                raise ValueError(
                    f"expected one run per folder; two runs go to '{run.folder}' (give one of them a name)"
                )
            seen.add(run.folder)
        return self

    def provenance(self, file: Path) -> dict[str, Any]:
        runs = [r.provenance() for r in self.runs]
        return {"file": str(file), "runs": runs, "hash": canonical_hash(runs)[:16]}


def _message(file: Path, exc: ValidationError) -> str:
    """One line: the file, the key (``runs[1].endpoint.model``), what was expected, what was found."""
    first = exc.errors()[0]
    key = ""
    for part in first["loc"]:
        key += f"[{part}]" if isinstance(part, int) else (f".{part}" if key else str(part))
    msg = first["msg"].removeprefix("Value error, ")
    kind = first["type"]
    if kind == "missing":
        return f"{file}: key '{key}': expected a value, found none (the key is required)"
    if kind == "extra_forbidden":
        return (
            f"{file}: key '{key}': unknown key; expected one of the documented keys (docs/ATTRIBUTION.md, methods"
            " config)"
        )
    if msg.startswith("Input should be "):
        msg = "expected " + msg.removeprefix("Input should be ")
    found = first.get("input")
    shown = "" if kind == "value_error" and "found key" in msg else f"; found {_short(found)}"
    return f"{file}: key '{key or 'runs'}': {msg}{shown}"


def _short(value: Any, limit: int = 200) -> str:
    """``repr(value)`` for a one-line message, cut at ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def load_methods_config(path: Path) -> MethodsConfig:
    """Read and validate a methods config (YAML); any problem is a one-line :class:`ConfigError` naming it."""
    data = read_config_data(path, what="methods config", format="yaml")
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with a 'runs' list, found {type(data).__name__}")
    try:
        return MethodsConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(_message(path, exc)) from exc
