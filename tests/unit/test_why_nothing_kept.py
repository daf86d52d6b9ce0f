"""A campaign that keeps nothing says where its attempts went (the demo's and generate's last line)."""

from __future__ import annotations

from collections import Counter

from failforge.campaign._run import CampaignSummary
from failforge.cli._generate import why_nothing_kept


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
