#!/usr/bin/env python3
"""Mutation check: does the unit layer notice when a guard of failforge stops guarding?

Each mutant is one small, named source edit (drop a branch, flip a comparison, return a constant,
skip an arm) to a function whose behaviour a test claims to guard: every filter branch, both arms of
the decisiveness check, the model boundary's request-hash and agent checks, the run log's integrity
check and the secrets redactor. For each mutant the script copies ``src/`` to a temporary directory,
applies the edit there (the real files are never touched), runs the unit tests of that area with
``PYTHONPATH`` pointing at the mutated copy, and reports whether a test failed (killed, and which
test) or all passed (survived: nothing guards that behaviour).

A mutant whose code is reached only through an integration part (an environment) is listed with the
integration tests that guard it and is not run unless ``--integration`` is given: the unit layer
cannot reach it, and the script says so rather than pretending.

    python3 scripts/mutation_check.py              # all unit-layer mutants, a table at the end
    python3 scripts/mutation_check.py --list       # names, targets and the tests each one runs
    python3 scripts/mutation_check.py --only leak.verbatim.off --only wf.missing_name
    python3 scripts/mutation_check.py --integration --only dec.injected_arm_zero   # needs AgentDojo

Exit status: 0 when every mutant that ran was killed, 1 when one survived, 2 on a broken mutant
(its text not found once in its file, or the unmutated tests failing).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = "src/failforge"

FILTER_TESTS = (
    "tests/unit/test_note_leak_checks.py",
    "tests/unit/test_note_leak_fixtures.py",
    "tests/unit/test_filter_branches.py",
)
BOUNDARY_TESTS = (
    "tests/unit/test_multiagent_boundary.py",
    "tests/unit/test_no_backoff_boundary.py",
    "tests/unit/test_bundled_seeds.py",
    "tests/unit/test_boundary_checks.py",
)
RUNLOG_TESTS = (
    "tests/unit/test_multiagent_boundary.py",
    "tests/unit/test_multiagent_schema.py",
    "tests/unit/test_runlog_integrity.py",
)
SECRETS_TESTS = ("tests/unit/test_secrets.py", "tests/unit/test_secrets_redactor.py")
DECISIVENESS_TESTS = (
    "tests/integration/test_campaign.py::test_decisiveness_keeps_a_decisive_injection_and_records_both_rates",
    "tests/integration/test_campaign.py::test_decisiveness_rejects_every_attempt_at_a_point_whose_original_arm_fails_without_running_them",
    "tests/integration/test_campaign.py::test_decisiveness_is_on_by_default_and_its_original_arm_is_shared_and_reused",
    "tests/integration/test_campaign.py::test_decisiveness_off_only_explicitly_and_then_every_record_says_not_checked",
    "tests/integration/test_campaign.py::test_decisiveness_rejects_an_injection_the_agent_recovers_from",
)


@dataclass(frozen=True)
class Mutant:
    name: str
    file: str
    """Path under src/failforge."""
    function: str
    old: str
    """Exact source text; must occur exactly once in ``file``."""
    new: str
    tests: tuple[str, ...]
    layer: str = "unit"
    """"unit": run by default; "integration": reached only through an environment, run with --integration."""

    @property
    def target(self) -> str:
        return f"{self.file}:{self.function}"


def _m(name: str, file: str, function: str, old: str, new: str, tests: tuple[str, ...], layer: str = "unit") -> Mutant:
    return Mutant(name, file, function, old, new, tests, layer)


NL = "filters/note_leak.py"
MUTANTS: tuple[Mutant, ...] = (
    # --- the leak filter -------------------------------------------------------------------------
    _m(
        "leak.meta_phrase.off",
        NL,
        "meta_phrase",
        'return f"step {step.index} contains the meta phrase {phrase!r}"',
        "continue",
        FILTER_TESTS,
    ),
    _m(
        "leak.meta_phrase.no_context_exemption",
        NL,
        "meta_phrase",
        "if phrase in lowered and phrase not in scan.seen_lower:",
        "if phrase in lowered:",
        FILTER_TESTS,
    ),
    _m(
        "leak.third_person.off",
        NL,
        "third_person",
        'if match and match.group(0).lower() not in scan.seen_lower:\n            return f"step {step.index} speaks',
        'if False:\n            return f"step {step.index} speaks',
        FILTER_TESTS,
    ),
    _m(
        "leak.bracket_hint.off",
        NL,
        "bracket_hint",
        'if match and match.group(0).lower() not in scan.seen_lower:\n            return f"step {step.index} carries',
        'if False:\n            return f"step {step.index} carries',
        FILTER_TESTS,
    ),
    _m(
        "leak.html_entity.off",
        NL,
        "html_entity",
        '        if shared:\n            return (\n                f"step {step.index} contains the HTML entity',
        '        if False:\n            return (\n                f"step {step.index} contains the HTML entity',
        FILTER_TESTS,
    ),
    _m(
        "leak.html_entity.no_reescape",
        NL,
        "html_entity",
        "shared = (\n            entities(text) | entities(html.unescape(text))\n        ) & only_note",
        "shared = (\n            entities(text)\n        ) & only_note",
        FILTER_TESTS,
    ),
    _m(
        "leak.html_entity.no_context_exemption",
        NL,
        "html_entity",
        "only_note = entities(scan.ctx.note) - entities(scan.seen)",
        "only_note = entities(scan.ctx.note)",
        FILTER_TESTS,
    ),
    _m(
        "leak.guide_wording.off",
        NL,
        "guide_wording",
        "return f\"step {step.index} copies the guide's prompt",
        "continue  # ",
        FILTER_TESTS,
    ),
    _m(
        "leak.guide_values.off",
        NL,
        "guide_values",
        '            return (\n                f"step {step.index} uses the value',
        '            continue\n            (\n                f"step {step.index} uses the value',
        FILTER_TESTS,
    ),
    _m(
        "leak.verbatim.off",
        NL,
        "verbatim (n-gram check)",
        '            return (\n                f"step {step.index} repeats the note verbatim',
        '            continue\n            (\n                f"step {step.index} repeats the note verbatim',
        FILTER_TESTS,
    ),
    _m(
        "leak.verbatim.no_context_exemption",
        NL,
        "verbatim (n-gram check)",
        'leaked = ngrams(words(_QUOTED.sub(" | ", scan.ctx.note)), NGRAM) - scan.seen_grams',
        'leaked = ngrams(words(_QUOTED.sub(" | ", scan.ctx.note)), NGRAM)',
        FILTER_TESTS,
    ),
    _m(
        "leak.verbatim.quotes_count",
        NL,
        "verbatim (n-gram check)",
        'leaked = ngrams(words(_QUOTED.sub(" | ", scan.ctx.note)), NGRAM) - scan.seen_grams',
        "leaked = ngrams(words(scan.ctx.note), NGRAM) - scan.seen_grams",
        FILTER_TESTS,
    ),
    _m(
        "leak.verbatim.reads_calls",
        NL,
        "verbatim (n-gram check)",
        'shared = leaked & ngrams(words(step.content or ""), NGRAM)',
        "shared = leaked & ngrams(words(step_text(step)), NGRAM)",
        FILTER_TESTS,
    ),
    _m("leak.paraphrase.off", NL, "paraphrase", "        if enough:\n", "        if False:\n", FILTER_TESTS),
    _m(
        "leak.paraphrase.no_context_exemption",
        NL,
        "paraphrase",
        'novel = content_lemmas(_QUOTED.sub(" ", scan.ctx.note)) - scan.seen_lemmas',
        'novel = content_lemmas(_QUOTED.sub(" ", scan.ctx.note))',
        FILTER_TESTS,
    ),
    _m(
        "leak.paraphrase.numbers_count_as_words",
        NL,
        "paraphrase",
        "len(words_shared) >= PARAPHRASE_MIN_WORDS",
        "len(shared) >= PARAPHRASE_MIN_WORDS",
        FILTER_TESTS,
    ),
    _m(
        "leak.paraphrase.min_shared_flipped",
        NL,
        "paraphrase",
        "len(shared) >= PARAPHRASE_MIN_SHARED\n",
        "len(shared) > PARAPHRASE_MIN_SHARED\n",
        FILTER_TESTS,
    ),
    _m(
        "leak.paraphrase.always_flipped",
        NL,
        "paraphrase",
        "enough = len(shared) >= PARAPHRASE_ALWAYS or (",
        "enough = len(shared) > PARAPHRASE_ALWAYS + 100 or (",
        FILTER_TESTS,
    ),
    _m(
        "leak.only_step_t",
        "gold/_filtering.py",
        "FilterContext.agent_steps_from_t (leaks after t)",
        "self.branch.steps[self.step :] if s.kind",
        "self.branch.steps[self.step : self.step + 1] if s.kind",
        FILTER_TESTS,
    ),
    _m(
        "leak.first_reason_only",
        NL,
        "check",
        'return verdict(NAME, False, "; ".join(found))',
        "return verdict(NAME, False, found[0])",
        FILTER_TESTS,
    ),
    # --- well_formed -----------------------------------------------------------------------------
    _m(
        "wf.format_error_exemption.off",
        "filters/well_formed.py",
        "check",
        "if ctx.mode.format_error:",
        "if False:",
        FILTER_TESTS,
    ),
    _m(
        "wf.empty_step.off",
        "filters/well_formed.py",
        "check",
        'if not (step.content or "").strip() and not step.tool_calls:',
        "if False:",
        FILTER_TESTS,
    ),
    _m(
        "wf.empty_step.whitespace_is_content",
        "filters/well_formed.py",
        "check",
        'if not (step.content or "").strip() and not step.tool_calls:',
        "if not step.content and not step.tool_calls:",
        FILTER_TESTS,
    ),
    _m(
        "wf.missing_name.off", "filters/well_formed.py", "check", "if not call.name.strip():", "if False:", FILTER_TESTS
    ),
    _m(
        "wf.bad_arguments.off",
        "filters/well_formed.py",
        "check",
        "if call.parsed_arguments() is None:",
        "if False:",
        FILTER_TESTS,
    ),
    # --- evaluator_failure -----------------------------------------------------------------------
    _m(
        "ef.no_verdict.off",
        "filters/evaluator_failure.py",
        "check",
        "if outcome is None or outcome.success is None:",
        "if outcome is None:",
        FILTER_TESTS,
    ),
    _m(
        "ef.success.off",
        "filters/evaluator_failure.py",
        "check",
        "    if outcome.success:\n",
        "    if False:\n",
        FILTER_TESTS,
    ),
    # --- differs and gold_exposure ---------------------------------------------------------------
    _m(
        "differs.flipped",
        "filters/differs.py",
        "check",
        "if action_signature(ctx.original) == action_signature(ctx.injected):",
        "if action_signature(ctx.original) != action_signature(ctx.injected):",
        FILTER_TESTS,
    ),
    _m(
        "ge.off",
        "filters/gold_exposure.py",
        "check",
        'if step.kind == "agent" and needle in',
        "if False and needle in",
        FILTER_TESTS,
    ),
    _m(
        "ge.looks_after_t",
        "filters/gold_exposure.py",
        "check",
        "for step in ctx.branch.steps[1 : ctx.step]:",
        "for step in ctx.branch.steps[1:]:",
        FILTER_TESTS,
    ),
    _m(
        "ge.short_gold_searched",
        "filters/gold_exposure.py",
        "check",
        "if len(gold) < MIN_LENGTH:",
        "if not gold:",
        FILTER_TESTS,
    ),
    # --- mode_conformance ------------------------------------------------------------------------
    _m(
        "mc.exhibited.off",
        "filters/mode_conformance.py",
        "check",
        "if found.exhibited is True:",
        "if False:",
        FILTER_TESTS,
    ),
    _m(
        "mc.not_exhibited.off",
        "filters/mode_conformance.py",
        "check",
        "if found.exhibited is False:",
        "if False:",
        FILTER_TESTS,
    ),
    _m(
        "mc.keep_unverified.off",
        "filters/mode_conformance.py",
        "check",
        "    if ctx.keep_unverified:\n",
        "    if False:\n",
        FILTER_TESTS,
    ),
    _m(
        "mc.keep_unverified.always",
        "filters/mode_conformance.py",
        "check",
        "    if ctx.keep_unverified:\n",
        "    if True:\n",
        FILTER_TESTS,
    ),
    _m(
        "mc.ignores_attempt_verdict",
        "filters/mode_conformance.py",
        "judged",
        "    if ctx.conformance is not None:\n        return ctx.conformance\n",
        "",
        FILTER_TESTS,
    ),
    # --- the filter runner -----------------------------------------------------------------------
    _m(
        "run_filters.ignores_names",
        "gold/_filtering.py",
        "run_filters",
        "default_filters() if names is None else names",
        "default_filters()",
        FILTER_TESTS,
    ),
    # --- decisiveness (filters/decisiveness.py, gold/_arms.py) -----------------------------------------------------
    _m(
        "dec.injected_arm_zero",
        "filters/decisiveness.py",
        "decisiveness (injected arm)",
        "injected_rate = sum(outcomes) / len(outcomes)",
        "injected_rate = 0.0",
        DECISIVENESS_TESTS,
        "integration",
    ),
    _m(
        "dec.original_arm_one",
        "gold/_arms.py",
        "OriginalArm.success_rate",
        "return self.successes / len(self.runs) if self.runs else 0.0",
        "return 1.0",
        DECISIVENESS_TESTS,
        "integration",
    ),
    _m(
        "dec.original_bound_ignored",
        "gold/_arms.py",
        "OriginalArm.passes",
        'return self.status == "measured" and self.success_rate >= cfg.original_min_success',
        'return self.status == "measured"',
        DECISIVENESS_TESTS,
        "integration",
    ),
    _m(
        "dec.injected_bound_ignored",
        "filters/decisiveness.py",
        "decisiveness (verdict)",
        "ok = arm.passes(cfg) and injected_rate <= cfg.injected_max_success",
        "ok = arm.passes(cfg)",
        DECISIVENESS_TESTS,
        "integration",
    ),
    _m(
        "dec.arm_per_attempt",
        "campaign/_run.py",
        "_settle_arms (one arm per point)",
        "key_of = {spec.attempt_id: arm_key(config_hash, seed_hash[seed.id], spec.step) for seed, spec in pending}",
        "key_of = {spec.attempt_id: arm_key(config_hash, seed_hash[seed.id] + spec.attempt_id, spec.step) for seed,"
        " spec in pending}",
        DECISIVENESS_TESTS,
        "integration",
    ),
    _m(
        "dec.default_off",
        "gold/_config.py",
        "DecisivenessConfig.enabled",
        "enabled: bool = Field(\n        default=True,",
        "enabled: bool = Field(\n        default=False,",
        DECISIVENESS_TESTS,
        "integration",
    ),
    # --- the model boundary ----------------------------------------------------------------------
    _m(
        "bd.request_hash.off",
        "llm/_boundary.py",
        "ModelBoundary._serve_recorded (request hash)",
        "        if want != got:\n",
        "        if False:\n",
        BOUNDARY_TESTS,
    ),
    _m(
        "bd.request_hash.never_strict",
        "llm/_boundary.py",
        "ModelBoundary._serve_recorded (strict)",
        "            if self.strict:\n                raise err",
        "            if False:\n                raise err",
        BOUNDARY_TESTS,
    ),
    _m(
        "bd.request_hash.always_strict",
        "llm/_boundary.py",
        "ModelBoundary._serve_recorded (strict)",
        "            if self.strict:\n                raise err",
        "            if True:\n                raise err",
        BOUNDARY_TESTS,
    ),
    _m(
        "bd.response_hash.off",
        "llm/_boundary.py",
        "ModelBoundary._serve_recorded (response hash)",
        "if recorded.response_hash is not None and served_hash != recorded.response_hash:",
        "if False:",
        BOUNDARY_TESTS,
    ),
    _m(
        "bd.agent.off",
        "llm/_boundary.py",
        "ModelBoundary._check_agent (agent)",
        "if identity.agent != expected.agent or identity.agent != recorded.stream:",
        "if False:",
        BOUNDARY_TESTS,
    ),
    _m(
        "bd.agent.stream_only",
        "llm/_boundary.py",
        "ModelBoundary._check_agent (agent)",
        "if identity.agent != expected.agent or identity.agent != recorded.stream:",
        "if identity.agent != recorded.stream:",
        BOUNDARY_TESTS,
    ),
    _m(
        "bd.agent.step_only",
        "llm/_boundary.py",
        "ModelBoundary._check_agent (agent)",
        "if identity.agent != expected.agent or identity.agent != recorded.stream:",
        "if identity.agent != expected.agent:",
        BOUNDARY_TESTS,
    ),
    _m(
        "bd.ordinal.off",
        "llm/_boundary.py",
        "ModelBoundary._check_agent (ordinal)",
        "if recorded.ordinal != ordinal:",
        "if False:",
        BOUNDARY_TESTS,
    ),
    _m(
        "bd.purpose.off",
        "llm/_boundary.py",
        "ModelBoundary._check_agent (purpose)",
        "if (recorded.purpose or None) != (identity.purpose or None):",
        "if False:",
        BOUNDARY_TESTS,
    ),
    _m(
        "bd.model_call_where_seed_has_none",
        "llm/_boundary.py",
        "ModelBoundary._check_agent (no recorded call)",
        "            if at_branch:\n                return None\n",
        "            return None\n",
        BOUNDARY_TESTS,
    ),
    _m(
        "bd.branch_point_agent.off",
        "llm/_boundary.py",
        "ModelBoundary.complete (agent at the branch point)",
        "            self._check_agent(index, identity, ordinal, at_branch=True)\n",
        "            pass\n",
        BOUNDARY_TESTS,
    ),
    _m(
        "bd.closed_roster.off",
        "llm/_boundary.py",
        "ModelBoundary._admit",
        "        if not self.log.open_roster:\n",
        "        if False:\n",
        BOUNDARY_TESTS,
    ),
    _m(
        "bd.secrets_kept_in_request",
        "llm/_boundary.py",
        "_without_secrets",
        'if k.lower() not in {"api_key", "authorization", "extra_headers"}',
        "if True",
        BOUNDARY_TESTS,
    ),
    # --- the run log -----------------------------------------------------------------------------
    _m(
        "rl.integrity.skipped",
        "runlog.py",
        "RunLog.append -> _check_integrity",
        "            if self.plan.replaying(step.index):\n                self._check_integrity(step)",
        "            if False:\n                self._check_integrity(step)",
        RUNLOG_TESTS,
    ),
    _m(
        "rl.integrity.last_replayed_unchecked",
        "runlog.py",
        "RunLog.append -> _check_integrity",
        "            if self.plan.replaying(step.index):\n                self._check_integrity(step)",
        "            if self.plan.replaying(step.index + 1):\n                self._check_integrity(step)",
        RUNLOG_TESTS,
    ),
    _m(
        "rl.integrity.always_equal",
        "runlog.py",
        "RunLog._check_integrity",
        "        if want == got:\n            return",
        "        if True:\n            return",
        RUNLOG_TESTS,
    ),
    _m(
        "rl.integrity.names_every_field",
        "runlog.py",
        "RunLog._check_integrity",
        "fields = sorted(k for k in want if want[k] != got.get(k))",
        "fields = sorted(want)",
        RUNLOG_TESTS,
    ),
    # --- the secrets redactor --------------------------------------------------------------------
    _m(
        "sec.known_values.off",
        "secrets.py",
        "Redactor.text",
        "            value = value.replace(secret, MASK)",
        "            pass",
        SECRETS_TESTS,
    ),
    _m(
        "sec.shapes_after_known.off",
        "secrets.py",
        "Redactor.text",
        "        return redact(value)\n",
        "        return value\n",
        SECRETS_TESTS,
    ),
    _m(
        "sec.env_value.off",
        "secrets.py",
        "Redactor.for_run",
        "            if value:\n                values.append(value)",
        "            if False:\n                values.append(value)",
        SECRETS_TESTS,
    ),
    _m(
        "sec.userinfo.off",
        "secrets.py",
        "Redactor.for_run",
        "            values.extend(userinfo_secrets(url))",
        "            pass",
        SECRETS_TESTS,
    ),
    _m(
        "sec.min_length.off",
        "secrets.py",
        "Redactor.for_run",
        "if len(v) >= MIN_SECRET_LENGTH}",
        "if v}",
        SECRETS_TESTS,
    ),
    _m("sec.shortest_first", "secrets.py", "Redactor.for_run", "key=len, reverse=True)", "key=len)", SECRETS_TESTS),
    _m(
        "sec.bearer_shape.off",
        "secrets.py",
        "redact (_PATTERNS)",
        '(re.compile(r"(?i)(bearer\\s+)',
        '(re.compile(r"(?i)(NEVERMATCHES\\s+)',
        SECRETS_TESTS,
    ),
    _m(
        "sec.sk_shape.off",
        "secrets.py",
        "redact (_PATTERNS)",
        r'(re.compile(r"\bsk-[A-Za-z0-9_\-]{12,}"), MASK)',
        r'(re.compile(r"\bNEVERMATCHES-[A-Za-z0-9_\-]{12,}"), MASK)',
        SECRETS_TESTS,
    ),
    _m(
        "sec.strip_userinfo.off",
        "secrets.py",
        "strip_userinfo",
        '    if "@" not in parts.netloc:\n        return url',
        "    return url",
        SECRETS_TESTS,
    ),
)

#: Plugins the unit tests do not use; loading them (langsmith's above all) costs more than the tests.
NO_PLUGINS = [
    arg
    for name in ("cacheprovider", "hypothesispytest", "benchmark", "anyio", "langsmith_plugin")
    for arg in ("-p", f"no:{name}")
]
_FAILED = re.compile(r"^(?:FAILED|ERROR) (.+?)(?: - .*)?$", re.M)


@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed, survived, not run, broken
    by: str
    seconds: float


def _existing(tests: tuple[str, ...]) -> list[str]:
    return [t for t in tests if (ROOT / t.split("::")[0]).exists()]


def _pytest(src: Path, tests: list[str], timeout: int) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0", "FAILFORGE_NO_REEXEC": "1"}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-rfE",
        "-o",
        "addopts=",
        f"--timeout={timeout}",
        *NO_PLUGINS,
        *tests,
    ]
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout * 4)
    except subprocess.TimeoutExpired:  # a hang outside any one test (collection, teardown): the tests noticed
        return -1, f"the test run hung for {timeout * 4} s"
    return proc.returncode, proc.stdout + proc.stderr


def _write(path: Path, text: str) -> None:
    """Write a module of the copy and drop its cached bytecode, which a same-size edit in the same
    second would not invalidate; the other modules keep theirs, so each run compiles one file."""
    path.write_text(text)
    for cached in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        cached.unlink()


def _mutate(copy: Path, mutant: Mutant) -> str:
    path = copy / mutant.file
    text = path.read_text()
    n = text.count(mutant.old)
    if n != 1:
        raise ValueError(f"{mutant.name}: its text occurs {n} times in {mutant.file}, not once")
    _write(path, text.replace(mutant.old, mutant.new))
    return text


def run(mutants: list[Mutant], *, timeout: int, integration: bool) -> list[Outcome]:
    outcomes: list[Outcome] = []
    with tempfile.TemporaryDirectory(prefix="failforge-mutants-") as tmp:
        src = Path(tmp) / "src"
        shutil.copytree(ROOT / "src", src, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        pkg = src / "failforge"
        probe = subprocess.run(
            [sys.executable, "-c", "import failforge; print(failforge.__file__)"],
            env={**os.environ, "PYTHONPATH": str(src)},
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        if not probe.stdout.strip().startswith(str(pkg)):
            sys.exit(f"the copy is not what gets imported: {probe.stdout.strip() or probe.stderr[-300:]}")
        baseline_sets = {tuple(_existing(m.tests)) for m in mutants if m.layer == "unit" or integration}
        for tests in sorted(baseline_sets):
            code, out = _pytest(src, list(tests), timeout)
            if code != 0:
                sys.exit(f"unmutated tests fail, nothing to measure against:\n{' '.join(tests)}\n{out[-2000:]}")
        for mutant in mutants:
            tests = _existing(mutant.tests)
            if mutant.layer != "unit" and not integration:
                outcomes.append(
                    Outcome(mutant, "not run", "integration only: " + ", ".join(t.split("::")[-1] for t in tests), 0.0)
                )
                continue
            started = time.monotonic()
            try:
                original = _mutate(pkg, mutant)
            except ValueError as exc:
                outcomes.append(Outcome(mutant, "broken", str(exc), 0.0))
                continue
            try:
                code, out = _pytest(src, tests, timeout)
            finally:
                _write(pkg / mutant.file, original)
            failed = _FAILED.findall(out)
            if code == 0:
                status, by = "survived", f"{len(tests)} test file(s) all passed"
            elif code == 1 and failed:
                status, by = "killed", failed[0]
            else:
                status, by = "killed", f"pytest exit {code}: " + (out.strip().splitlines() or ["?"])[-1][:120]
            outcomes.append(Outcome(mutant, status, by, time.monotonic() - started))
            print(f"{status:8} {mutant.name:42} {by}", file=sys.stderr, flush=True)
    return outcomes


def table(outcomes: list[Outcome]) -> str:
    rows = [("mutant", "target (file:function)", "result", "by")] + [
        (o.mutant.name, o.mutant.target, o.status, o.by) for o in outcomes
    ]
    lines = ["| " + " | ".join(r) + " |" for r in rows]
    lines.insert(1, "|---|---|---|---|")
    counts = {s: sum(o.status == s for o in outcomes) for s in ("killed", "survived", "not run", "broken")}
    lines.append("")
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items()) + f" of {len(outcomes)} mutants")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="list the mutants and the tests each one runs, run nothing")
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="run only this mutant (repeatable; a prefix such as 'leak.' selects a group)",
    )
    parser.add_argument(
        "--integration",
        action="store_true",
        help="also run mutants reached only through integration tests (needs AgentDojo)",
    )
    parser.add_argument(
        "--timeout",
        type=int,
        default=120,
        help="per-test timeout in seconds (a mutant that hangs a test is killed by it)",
    )
    args = parser.parse_args()
    chosen = [
        m
        for m in MUTANTS
        if not args.only or any(m.name == o or (o.endswith(".") and m.name.startswith(o)) for o in args.only)
    ]
    if not chosen:
        parser.error(f"no mutant named {args.only}; see --list")
    if args.list:
        for m in chosen:
            print(
                f"{m.name:42} {m.layer:11} {m.target}\n{'':42} tests:"
                f" {' '.join(_existing(m.tests)) or '(none present)'}"
            )
        return 0
    outcomes = run(chosen, timeout=args.timeout, integration=args.integration)
    print(table(outcomes))
    if any(o.status == "broken" for o in outcomes):
        return 2
    return 1 if any(o.status == "survived" for o in outcomes) else 0


if __name__ == "__main__":
    raise SystemExit(main())
