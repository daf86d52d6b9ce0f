"""The methods config of ``failforge attribute --methods-config``: what it accepts and its one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from failforge.attribution._methods_config import load_methods_config
from failforge.errors import ConfigError


def _load(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    path = tmp_path / "methods.yaml"
    path.write_text(text, encoding="utf-8")
    return load_methods_config(path)


def _error(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, text)
    message = str(info.value)
    assert "\n" not in message and str(tmp_path / "methods.yaml") in message
    return message


def test_a_valid_config_names_folders_endpoints_and_defaults(tmp_path: Path) -> None:
    config = _load(
        tmp_path,
        """
runs:
  - name: audit-big
    method: auditor
    endpoint: {base_url: "http://user:pw@127.0.0.1:9/v1", model: big, api_key_env: BIG_KEY}
    executor: process
    workers: 3
  - method: all-at-once
""",
    )
    assert [r.folder for r in config.runs] == ["audit-big", "all-at-once"]
    assert (config.runs[0].executor, config.runs[0].workers, config.runs[1].executor, config.runs[1].endpoint) == (
        "process",
        3,
        None,
        None,
    )
    provenance = config.provenance(tmp_path / "methods.yaml")
    assert provenance["runs"][0]["endpoint"] == {
        "base_url": "http://***@127.0.0.1:9/v1",
        "model": "big",
        "api_key_env": "BIG_KEY",
    }
    assert "pw" not in str(provenance)


def test_an_unknown_method_lists_the_registered_ones(tmp_path: Path) -> None:
    message = _error(tmp_path, "runs:\n  - method: all-at-twice\n")
    assert "key 'runs[0].method'" in message and "found 'all-at-twice'" in message
    assert "all-at-once" in message and "auditor" in message and "rcta" in message


def test_a_secret_in_the_file_is_refused(tmp_path: Path) -> None:
    message = _error(
        tmp_path, "runs:\n  - method: auditor\n    endpoint: {base_url: 'http://h/v1', model: m, api_key: sk-abc}\n"
    )
    assert "key 'runs[0].endpoint'" in message and "api_key_env" in message and "found key 'api_key'" in message
    assert "sk-abc" not in message


@pytest.mark.parametrize(
    ("text", "key", "expected"),
    [
        (
            "runs:\n  - method: auditor\n    executor: cluster\n",
            "runs[0].executor",
            "expected 'thread', 'process' or 'ray'; found 'cluster'",
        ),
        ("runs:\n  - method: auditor\n    workers: 0\n", "runs[0].workers", "found 0"),
        (
            "runs:\n  - method: auditor\n    endpoint: {base_url: notaurl, model: m}\n",
            "runs[0].endpoint.base_url",
            "not an http(s) URL",
        ),
        (
            "runs:\n  - method: auditor\n    endpoint: {base_url: 'http://h/v1'}\n",
            "runs[0].endpoint.model",
            "expected a value, found none",
        ),
        ("runs:\n  - method: auditor\n    judge: x\n", "runs[0].judge", "unknown key"),
        ("runs:\n  - {method: auditor}\n  - {method: auditor}\n", "runs", "two runs go to 'auditor'"),
        ("runs:\n  - {method: auditor, name: ../up}\n", "runs[0].name", "expected a folder name"),
        ("runs: []\n", "runs", "found []"),
    ],
)
def test_each_bad_value_is_one_line_naming_file_key_expected_and_found(
    tmp_path: Path, text: str, key: str, expected: str
) -> None:
    message = _error(tmp_path, text)
    assert f"key '{key}'" in message and expected in message


def test_not_yaml_and_not_a_mapping(tmp_path: Path) -> None:
    assert "is not valid YAML (line 3)" in _error(tmp_path, "runs:\n  - {method: [x\n  - y: }\n")
    assert "expected a mapping with a 'runs' list, found list" in _error(tmp_path, "- method: auditor\n")
    with pytest.raises(ConfigError, match="does not exist"):
        load_methods_config(tmp_path / "missing.yaml")


def test_a_key_in_the_query_string_is_masked_and_an_own_timeout_is_kept(tmp_path: Path) -> None:
    config = _load(
        tmp_path,
        """
runs:
  - method: auditor
    endpoint: {base_url: "https://host.example/v1?api-key=sk-SECRET1234567890abcdef", model: m, timeout: 42}
""",
    )
    endpoint = config.provenance(tmp_path / "methods.yaml")["runs"][0]["endpoint"]
    assert "sk-SECRET" not in str(endpoint) and endpoint["base_url"].startswith("https://host.example/v1?api-key=")
    assert endpoint["timeout"] == 42
