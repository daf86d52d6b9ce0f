"""Where attempts run and how many at once (the executor, a Ray address, the concurrency) decide no
record, so they are not part of the campaign's identity: a campaign resumed with another --executor is
the same campaign."""

from __future__ import annotations

from pathlib import Path

import pytest

from failforge.campaign import CampaignConfig
from failforge.jobs import Ledger

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "failforge" / "data" / "seeds" / "agentdojo_demo.jsonl"


def _config(**extra: object) -> CampaignConfig:
    return CampaignConfig.model_validate({"seeds": [str(BUNDLED)], "output": "out", **extra})


def test_the_executor_and_ray_address_do_not_change_the_hash_what_decides_records_does(tmp_path: Path) -> None:
    local = _config()
    for other in (
        _config(executor="process"),
        _config(executor="ray", ray_address="ray://head:10001"),
        _config(executor="process", concurrency=4),
    ):
        assert other.config_hash() == local.config_hash()
    assert _config(plan={"steps_per_seed": 3}).config_hash() != local.config_hash()
    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.bind(local.config_hash())
    ledger.bind(_config(executor="process").config_hash())  # resumed with another executor: not refused
    with pytest.raises(Exception, match="different campaign"):
        ledger.bind(_config(plan={"steps_per_seed": 3}).config_hash())


@pytest.mark.parametrize(
    ("extra", "field", "found"),
    [
        ({"executor": "cluster"}, "executor", "unknown executor 'cluster'"),
        ({"filters": {"enabled": ["no_such_filter"]}}, "filters.enabled", "unknown filter 'no_such_filter'"),
    ],
)
def test_an_unknown_executor_or_filter_names_the_field_and_the_known_ones(
    extra: dict[str, object], field: str, found: str
) -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as raised:
        _config(**extra)
    text = str(raised.value)
    assert field in text and found in text and "known: " in text
