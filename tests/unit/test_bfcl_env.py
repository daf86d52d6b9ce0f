"""The bfcl environment's own parts against the real bfcl-eval package: simulators built by failforge,
call strings safe for BFCL's checker, the checker's module globals cleaned, held-out functions, bad ids."""

from __future__ import annotations

import pytest
from tests._required import require

require("bfcl")

from failforge.environments.bfcl import (  # noqa: E402
    UNKNOWN_FUNCTION,
    BfclEnvironment,
    BfclEpisode,
    BfclOptions,
    Simulators,
    _openai_schema,
    _plain,
    call_string,
    entry_of,
    parse_call,
    run_checker,
)
from failforge.errors import ConfigError  # noqa: E402


def test_tasks_are_the_four_categories_of_200_and_none_is_excluded():
    env = BfclEnvironment()
    assert len(env.tasks(BfclOptions())) == 800
    assert len(env.tasks(BfclOptions(category="miss_param"))) == 200
    assert env.excluded(BfclOptions()) == {}  # no multi-turn task of 2026.3.23 uses WebSearchAPI


def test_unknown_task_ids_are_config_errors_naming_the_id():
    with pytest.raises(ConfigError, match="multi_turn_base_9999"):
        entry_of("multi_turn_base_9999")
    with pytest.raises(ConfigError, match="look like multi_turn_base_0"):
        entry_of("banking/user_task_3")


def test_positional_ground_truth_arguments_are_named_from_the_signature():
    entry, _ = entry_of("multi_turn_base_0")
    sims = Simulators(entry)
    assert parse_call("sort('final_report.pdf')", sims) == ("sort", {"file_name": "final_report.pdf"})
    assert parse_call("mv(source='a', destination='b')", sims) == ("mv", {"source": "a", "destination": "b"})


def test_call_strings_reach_the_checker_only_for_known_methods_and_literal_arguments():
    known = {"cd", "mv"}
    assert call_string("cd", {"folder": "a'b"}, known) == 'cd(folder="a\'b")'
    assert call_string("open", {"file": "/etc/passwd"}, known) == f"{UNKNOWN_FUNCTION}()"  # a builtin is never eval'd
    assert call_string("cd", {"class": 1}, known) == f"{UNKNOWN_FUNCTION}()"  # a keyword is not an argument name
    assert call_string("cd", None, known) == f"{UNKNOWN_FUNCTION}()"


def test_schemas_use_json_schema_types():
    assert _openai_schema({"type": "dict", "properties": {"x": {"type": "float"}, "t": {"type": "tuple"}}}) == {
        "type": "object",
        "properties": {"x": {"type": "number"}, "t": {"type": "array"}},
    }


def test_state_is_public_attributes_per_class_with_back_references_cut():
    entry, _ = entry_of("multi_turn_base_0")
    sims = Simulators(entry)
    state = sims.state()
    assert set(state) == {"TwitterAPI", "GorillaFileSystem"}
    assert "root" in state["GorillaFileSystem"] and "_current_dir" not in state["GorillaFileSystem"]
    before = sims.fingerprint()
    assert sims.call("mkdir", {"dir_name": "new_dir"}).error is None
    after = sims.fingerprint()
    assert (
        before.parts["TwitterAPI"] == after.parts["TwitterAPI"]
        and before.parts["GorillaFileSystem"] != after.parts["GorillaFileSystem"]
    )

    class Node:
        def __init__(self) -> None:
            self.name, self.children, self.parent = "n", [], None

    root, child = Node(), Node()
    child.parent, root.children = root, [child]
    assert _plain(root)["children"][0]["parent"] == {"__ref__": "Node", "name": "n"}


def test_a_method_that_raises_or_an_unknown_name_is_an_observation():
    entry, _ = entry_of("multi_turn_base_0")
    sims = Simulators(entry)
    assert sims.call("cd", {"nope": 1}).content.startswith("Error during execution:")
    assert sims.call("no_such_tool", {}).error == "no function 'no_such_tool' in this task"


def test_the_checker_accepts_the_ground_truth_twice_and_leaves_no_globals():
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    entry, truth = entry_of("multi_turn_base_1")
    before = set(vars(multi_turn_utils))
    turns = [[list(turn)] if turn else [] for turn in truth]
    assert run_checker(entry, truth, turns)["valid"] is True
    assert run_checker(entry, truth, turns)["valid"] is True  # a second check starts from the pristine state
    assert set(vars(multi_turn_utils)) == before
    dropped = [list(t) for t in truth]
    dropped[0] = dropped[0][:-1]
    assert run_checker(entry, truth, [[t] if t else [] for t in dropped])["valid"] is False


def test_miss_func_offers_the_held_out_function_only_from_its_turn():
    episode = BfclEpisode("multi_turn_miss_func_0")
    assert "sort" not in {d["name"] for d in episode.offered_docs()}
    episode.turn = 3
    assert "sort" in {d["name"] for d in episode.offered_docs()}
    assert episode.task_record().metadata["turns"][3].startswith("I have updated some more functions")


def test_arguments_are_copied_so_the_recorded_call_never_changes_later():
    entry, _ = entry_of("multi_turn_base_147")
    sims = Simulators(entry)
    sims.call("authenticate_twitter", {"username": "analyst_pro", "password": "Kj8#mP9$vL2"})
    args = {"content": "hi", "tags": [], "mentions": ["@a"]}
    sims.call("post_tweet", args)
    tweet_id = max(sims.instances["TwitterAPI"].tweets)
    sims.call("mention", {"tweet_id": tweet_id, "mentioned_usernames": ["@b"]})
    assert sims.instances["TwitterAPI"].tweets[tweet_id]["mentions"] == [
        "@a",
        "@b",
    ]  # the simulator did mutate its own list
    assert args["mentions"] == ["@a"]
