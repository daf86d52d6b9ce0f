from pathlib import Path

from failforge.campaign import load_campaign

ROOT = Path(__file__).resolve().parents[2]


def test_example_campaign_file_is_valid_and_points_at_the_bundled_seeds():
    config = load_campaign(ROOT / "examples" / "campaign.toml")
    assert Path(config.seeds[0]).exists()
    assert config.concurrency == 4 and config.filters.decisiveness.enabled is False and config.agent is None
