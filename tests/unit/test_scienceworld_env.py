"""ScienceWorld plugin parts that need no JVM: task ids, specs, options, the two-run comparison, the tool's
argument check."""

from __future__ import annotations

import pytest

pytest.importorskip("scienceworld")

from failforge.environments import environment  # noqa: E402
from failforge.environments.scienceworld_env import (
    JVM_OPTIONS,
    ScienceWorldOptions,
    first_difference,
    task_names,
)  # noqa: E402
from failforge.errors import ConfigError  # noqa: E402
from failforge.seeds import environment_options  # noqa: E402


def test_thirty_tasks_times_variations_in_a_stable_order():
    plugin = environment("scienceworld")
    ids = plugin.tasks(ScienceWorldOptions())
    assert len(task_names()) == 30 and len(ids) == 90
    assert ids[:3] == ["boil/0", "boil/1", "boil/2"]
    assert plugin.tasks(ScienceWorldOptions(task_names=["melt"], variations=[4])) == ["melt/4"]


def test_spec_records_task_variation_simplifications_and_jvm_options():
    plugin = environment("scienceworld")
    spec = plugin.spec("boil/2", ScienceWorldOptions(simplifications="openDoors"))
    assert spec.config == {
        "task": "boil",
        "variation": 2,
        "simplifications": "openDoors",
        "jvm_options": list(JVM_OPTIONS),
    }
    assert plugin.seed_name(spec) == "scienceworld-boil-2-openDoors-oracle"


@pytest.mark.parametrize("bad", ["boil", "boil/x", "no-such-task/0"])
def test_bad_task_ids_are_config_errors(bad):
    with pytest.raises(ConfigError, match="ScienceWorld"):
        environment("scienceworld").spec(bad, ScienceWorldOptions())


def test_unknown_task_name_option_and_unknown_option_are_config_errors():
    with pytest.raises(ConfigError, match="unknown ScienceWorld task 'nope'"):
        environment("scienceworld").tasks(ScienceWorldOptions(task_names=["nope"]))
    with pytest.raises(ConfigError, match="scienceworld option 'suite'"):
        environment_options("scienceworld", {"suite": ["x"]})


def test_a_spec_from_other_jvm_options_is_refused():
    plugin = environment("scienceworld")
    spec = plugin.spec("boil/0", ScienceWorldOptions())
    other = spec.model_copy(update={"config": {**spec.config, "jvm_options": []}})
    with pytest.raises(ConfigError, match="JVM options"):
        plugin.world_task(other)


def _run(actions, looks):
    return actions, [
        (f"obs{i}", {"look": look, "inventory": "", "score": 0, "completed": False, "moves": i})
        for i, look in enumerate(looks)
    ]


def test_first_difference_names_the_step_and_the_part():
    a = _run(["open door", "go hallway"], ["room", "room", "hall"])
    assert first_difference(a, _run(["open door", "go hallway"], ["room", "room", "hall"])) is None
    assert (
        first_difference(a, _run(["open door", "go hallway"], ["room", "room", "hall2"]))
        == "state part(s) look differ after gold action 2 ('go hallway')"
    )
    assert "gold action sequence differs" in (
        first_difference(a, _run(["open door", "go kitchen"], ["room", "room", "hall"])) or ""
    )
    b = (a[0], [a[1][0], ("other", a[1][1][1]), a[1][2]])
    assert first_difference(a, b) == "the observation after gold action 1 ('open door') differs"
