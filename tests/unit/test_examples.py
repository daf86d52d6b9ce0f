"""The example campaign does what its comments say: it loads, its seeds are branchable, its plan plans,
its filters exist, and the alternatives it documents in comments are valid when uncommented."""

import re
from pathlib import Path

from failforge.campaign import CampaignConfig, load_campaign
from failforge.campaign._run import CampaignSummary, select_seeds
from failforge.gold import default_filters
from failforge.injection import plan_attempts
from failforge.plugins import filters

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "campaign.toml"
CANARY = "sk-canary-3b9f2e7d1c0a4f58"


def test_the_example_campaign_selects_its_seeds_and_plans_attempts_on_each(tmp_path):
    config = load_campaign(EXAMPLE)
    summary = CampaignSummary(output=tmp_path)
    seeds = select_seeds(config, summary)
    assert seeds and not summary.bad_seeds, summary.bad_seeds
    for seed in seeds:
        p = config.plan
        specs = plan_attempts(
            seed,
            modes=p.modes,
            steps_per_seed=p.steps_per_seed,
            modes_per_step=p.modes_per_step,
            samples=p.samples,
            rng_seed=p.rng_seed,
        )
        assert specs, seed.id
        assert len({s.step for s in specs}) <= p.steps_per_seed


def test_the_example_names_only_registered_filters_and_all_the_default_ones():
    config = load_campaign(EXAMPLE)
    assert set(config.filters.enabled) <= set(filters.names())
    assert set(default_filters()) <= set(config.filters.enabled)


def test_the_documented_alternatives_are_valid_when_uncommented(tmp_path):
    text = EXAMPLE.read_text()
    uncommented = re.sub(r"^# (\[agent\]|\[guide\]|base_url|model|api_key_env|modes)", r"\1", text, flags=re.M)
    assert uncommented != text
    (tmp_path / "campaign.toml").write_text(uncommented.replace("../src/", str(ROOT / "src") + "/"))
    config = load_campaign(tmp_path / "campaign.toml")
    assert config.agent is not None and config.agent.api_key_env == "OPENAI_API_KEY"
    assert config.guide is not None and config.plan.modes


def test_the_example_leaves_the_key_to_the_environment():
    """The example names the variable that holds the key; a key written into the file instead is not
    kept in the configuration (which campaigns record in their provenance)."""
    assert not re.search(r"^\s*#?\s*api_key\s*=", EXAMPLE.read_text(), re.M)
    config = CampaignConfig.model_validate(
        {"seeds": ["x.jsonl"], "output": "o", "agent": {"base_url": "http://h/v1", "model": "m", "api_key": CANARY}}
    )
    assert CANARY not in config.model_dump_json()
