"""One plugin mechanism: a third-party environment and harness, one file each, added by entry points.

The toy plugins live in tests/fixtures/plugins (``toy_env.py``, ``toy_harness.py``). Here they are
"installed" the way pip installs a package: a ``*.dist-info`` folder with ``entry_points.txt`` on the
path of a fresh Python process. Nothing in failforge is edited; the CLI, the seeds command, replay and
the environment self-check pick them up from the registry.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from failforge.errors import ConfigError
from failforge.plugins import BrokenPlugin, PluginInfo, Registry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "plugins"


def _install(tmp_path: Path, entry_points: str) -> dict[str, str]:
    dist = tmp_path / "site" / "toy_failforge_plugins-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-failforge-plugins\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_points)
    path = os.pathsep.join([str(tmp_path / "site"), str(FIXTURES), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "PYTHONHASHSEED": "0", "FAILFORGE_NO_REEXEC": "1", "COLUMNS": "300"}


def _run(env: dict[str, str], *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


TOY_ENTRY_POINTS = "[failforge.environments]\ntoy = toy_env\n\n[failforge.harnesses]\ntoy.loop = toy_harness\n"


def test_a_toy_environment_and_harness_from_one_file_each_work_end_to_end(tmp_path: Path) -> None:
    env = _install(tmp_path, TOY_ENTRY_POINTS)
    listed = _run(env, "-m", "failforge", "plugins", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "toy" in listed.stdout and "toy.loop" in listed.stdout

    made = _run(env, "-m", "failforge", "seeds", "toy", "--start", "1", "-o", "toy.jsonl", cwd=tmp_path)
    assert made.returncode == 0, made.stderr + made.stdout
    seeds = [json.loads(line) for line in (tmp_path / "toy.jsonl").read_text().splitlines()]
    assert [s["id"] for s in seeds] == ["toy-count-to-2-oracle", "toy-count-to-3-oracle"]
    assert all(s["harness"]["name"] == "toy.loop" and s["outcome"]["success"] for s in seeds)
    assert [sum(1 for st in s["steps"] if st["kind"] == "tool") for s in seeds] == [1, 2]  # start=1 reached the option

    replayed = _run(env, "-m", "failforge", "replay", "toy.jsonl", cwd=tmp_path)
    assert replayed.returncode == 0, replayed.stdout
    assert "2/2 seeds replayed identically" in " ".join(replayed.stdout.split())

    check = _run(
        env,
        "-c",
        "from failforge.fidelity import assert_self_check; print(assert_self_check('toy', 'count-to-3').summary())",
        cwd=tmp_path,
    )
    assert check.returncode == 0, check.stderr
    assert check.stdout.count(": ok") == 6 and "FAILED" not in check.stdout, check.stdout
    # The toy's evaluator ignores the answer and counts: the altered answer still succeeds, the dropped last add fails.
    assert (
        "a spoiled run fails the evaluator: ok (last write dropped (step 6, add): toy.counter says failed (the"
        " evaluator accepted 1 spoiled run(s) before: final answer altered: success))" in check.stdout
    ), check.stdout


def _toy_variant(tmp_path: Path, old: str, new: str) -> dict[str, str]:
    """The toy environment with one line changed, installed ahead of the original."""
    source = (FIXTURES / "toy_env.py").read_text()
    changed = source.replace(old, new)
    assert changed != source, f"{old!r} is not in toy_env.py"
    pkg = tmp_path / "variant"
    pkg.mkdir()
    (pkg / "toy_env.py").write_text(changed)
    env = _install(tmp_path, TOY_ENTRY_POINTS)
    env["PYTHONPATH"] = os.pathsep.join([str(pkg), env["PYTHONPATH"]])
    return env


def test_conformance_fails_an_environment_whose_evaluator_always_says_success(tmp_path: Path) -> None:
    """The self-check's negative side can fail: an evaluator that accepts anything accepts every spoiled run."""
    env = _toy_variant(tmp_path, "success=self.counter == self.target", "success=True")
    check = _run(
        env,
        "-c",
        "from failforge.fidelity import self_check; r = self_check('toy', 'count-to-3'); print(r.passed);"
        " print(r.summary())",
        cwd=tmp_path,
    )
    assert check.returncode == 0, check.stderr
    first, summary = check.stdout.split("\n", 1)
    assert first == "False", summary
    assert (
        "a spoiled run fails the evaluator: FAILED (the evaluator accepted every spoiled run: final answer altered:"
        " success; last write dropped" in summary
    ), summary
    # Everything else about the toy is still right: only the negative check failed.
    assert summary.count("FAILED") == 1 and summary.count(": ok") == 5, summary
    asserted = _run(
        env,
        "-c",
        "from failforge.fidelity import assert_self_check; assert_self_check('toy', 'count-to-3')",
        cwd=tmp_path,
    )
    assert (
        asserted.returncode != 0
        and "AssertionError" in asserted.stderr
        and "accepted every spoiled run" in asserted.stderr
    )


def test_conformance_passes_an_evaluator_that_checks_the_answer_only(tmp_path: Path) -> None:
    """An evaluator that reads only the final answer is caught... by the altered answer, not by a dropped write."""
    env = _toy_variant(tmp_path, "success=self.counter == self.target", "success=final_output == 'done'")
    check = _run(
        env,
        "-c",
        "from failforge.fidelity import self_check; r = self_check('toy', 'count-to-2'); print(r.passed);"
        " print(r.summary())",
        cwd=tmp_path,
    )
    assert check.returncode == 0, check.stderr
    assert check.stdout.startswith("True\n"), check.stdout
    assert "a spoiled run fails the evaluator: ok (final answer altered: toy.counter says failed)" in check.stdout, (
        check.stdout
    )


def test_conformance_catches_an_environment_whose_replay_checks_nothing(tmp_path: Path) -> None:
    """The self-check is able to fail: a toy whose tool boundary is bypassed (no fingerprint, no
    observation check) must fail the tamper checks."""
    leaky = (
        (FIXTURES / "toy_env.py")
        .read_text()
        .replace(
            "step = observe_tool_call(\n            self.log,\n            name=name,\n            arguments=args,\n"
            "            call_id=call_id,\n            run=run,\n            fingerprint=self.episode.fingerprint,\n"
            '            drift=CounterDrift,\n        )\n        return step.error or step.content or ""',
            "result = run()\n        self.log.append(Step(index=self.log.next_index, kind='tool', agent='environment',"
            " role='tool', content=result.content, tool_name=name, tool_call_id=call_id, tool_arguments=args,"
            " phase=self.log.phase_for(self.log.next_index)))\n        return result.error or result.content",
        )
    )
    assert leaky != (FIXTURES / "toy_env.py").read_text()
    pkg = tmp_path / "leaky"
    pkg.mkdir()
    (pkg / "toy_env.py").write_text(leaky)
    env = _install(tmp_path, TOY_ENTRY_POINTS)
    env["PYTHONPATH"] = os.pathsep.join([str(pkg), env["PYTHONPATH"]])
    check = _run(
        env,
        "-c",
        "from failforge.fidelity import self_check; r = self_check('toy', 'count-to-2'); print(r.passed);"
        " print(r.summary())",
        cwd=tmp_path,
    )
    assert check.returncode == 0, check.stderr
    first, summary = check.stdout.split("\n", 1)
    assert first == "False"
    assert "tampered state fingerprint is caught: FAILED" in summary


def test_a_broken_entry_point_is_reported_and_does_not_break_the_rest(tmp_path: Path) -> None:
    env = _install(tmp_path, TOY_ENTRY_POINTS + "\n[failforge.filters]\nbroken = no_such_module_here\n")
    listed = _run(env, "-m", "failforge", "plugins", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "toy" in listed.stdout and "failed to load" in listed.stdout and "no_such_module_here" in listed.stdout
    used = _run(env, "-c", "from failforge.plugins import filters; filters.get('broken')", cwd=tmp_path)
    assert used.returncode != 0 and "failed to load" in used.stderr and "ConfigError" in used.stderr


def test_registry_rejects_a_second_plugin_under_the_same_name() -> None:
    registry: Registry[object] = Registry("thing", group="failforge.tests.none")

    @registry.register("a", aliases=("alpha",))
    def first() -> None: ...

    registry.add(PluginInfo(name="b", obj=object(), kind="thing", module="elsewhere"))
    with pytest.raises(ConfigError, match="registered twice"):
        registry.add(PluginInfo(name="alpha", obj=object(), kind="thing", module="elsewhere"))
    assert registry.get("alpha") is first and registry.canonical("alpha") == "a"
    with pytest.raises(ConfigError, match="unknown thing 'c'; known: a, b"):
        registry.get("c")


def test_unknown_names_and_broken_plugins_give_one_line_errors() -> None:
    registry: Registry[object] = Registry("thing", group="failforge.tests.none")
    registry._broken.append(
        BrokenPlugin("x = pkg.x", "ImportError: boom")
    )  # what load() records for a failing entry point
    with pytest.raises(ConfigError, match=r"comes from a plugin that failed to load \(x = pkg.x\): ImportError: boom"):
        registry.get("x")


def test_checked_is_canonical_for_pydantic_validators() -> None:
    """One check serves every config field that names a plugin: the alias canonicalised, an unknown
    name a ValueError (which pydantic reports with the field) listing the known names."""
    registry: Registry[object] = Registry("thing", group="failforge.tests.none")
    registry.add(PluginInfo(name="a", obj=object(), kind="thing", module="here", aliases=("alpha",)))
    assert registry.checked("alpha") == "a"
    with pytest.raises(ValueError, match="unknown thing 'c'; known: a") as raised:
        registry.checked("c")
    assert not isinstance(raised.value, ConfigError)
