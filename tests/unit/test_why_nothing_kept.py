"""A campaign that keeps nothing says where its attempts went (the demo's and generate's last line)."""

from __future__ import annotations

from collections import Counter

from failforge.campaign._run import CampaignSummary
from failforge.cli._generate import nothing_kept_cause, why_nothing_kept


def test_the_summary_names_the_filters_and_errors_most_frequent_first() -> None:
    summary = CampaignSummary(
        output="out",
        planned=5,
        rejected=3,
        failed=2,
        rejected_by=Counter({"decisiveness": 2, "guide": 1}),
        failed_by=Counter({"AttemptDeadlineExceeded": 2}),
    )
    assert why_nothing_kept(summary) == "3 rejected (decisiveness 2, guide 1); 2 failed (AttemptDeadlineExceeded 2)"
    assert (
        why_nothing_kept(CampaignSummary(output="out", planned=4, failed=1, failed_by=Counter({"ModelUnavailable": 1})))
        == "1 failed (ModelUnavailable 1); 3 not run"
    )
    assert "no attempt was planned" in why_nothing_kept(CampaignSummary(output="out"))


def test_the_demo_says_the_seed_step_failed_too_when_only_decisiveness_rejected() -> None:
    only_arms = CampaignSummary(output="out", planned=2, rejected=2, rejected_by=Counter({"decisiveness": 2}))
    assert "continuing the seed's own step, failed the task too" in nothing_kept_cause(only_arms)
    mixed = CampaignSummary(
        output="out", planned=2, rejected=2, rejected_by=Counter({"decisiveness": 1, "mode_conformance": 1})
    )
    assert "fails to follow notes" in nothing_kept_cause(mixed)
