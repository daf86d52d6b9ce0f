"""The realism probe: AUC arithmetic, the grouped cross-validation, and what it reports about itself."""

from __future__ import annotations

import random

import pytest

from failforge.judgement import (
    FEATURES,
    auc_score,
    fold_assignment,
    realism_examples,
    realism_of,
    realism_probe,
    step_features,
)
from failforge.trajectory import Step, ToolCall


def _agent(content: str | None, calls: list[tuple[str, str]] = (), index: int = 1) -> Step:
    return Step(
        index=index,
        kind="agent",
        agent="agent",
        role="assistant",
        content=content,
        tool_calls=[ToolCall(id=f"c{i}", name=n, arguments=a) for i, (n, a) in enumerate(calls)],
    )


def test_auc_by_rank_sum():
    assert auc_score([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9]) == 1.0
    assert auc_score([0, 0, 1, 1], [0.9, 0.8, 0.2, 0.1]) == 0.0
    assert auc_score([0, 1], [0.5, 0.5]) == 0.5
    assert auc_score([0, 0, 1, 1], [0.1, 0.6, 0.4, 0.9]) == 0.75
    with pytest.raises(ValueError):
        auc_score([1, 1], [0.1, 0.2])


def test_features_describe_the_step():
    call = _agent(None, [("send_money", '{"recipient": "X", "amount": 4.0}')])
    talk = _agent("I'm sorry, the agent cannot do that? You asked me.")
    f_call, f_talk = (
        dict(zip(FEATURES, step_features(call), strict=False)),
        dict(zip(FEATURES, step_features(talk), strict=False)),
    )
    assert len(step_features(call)) == len(FEATURES)
    assert f_call["n_tool_calls"] == 1 and f_call["n_arg_keys"] == 2 and f_call["has_text"] == 0
    assert (
        f_talk["apology_or_hedge"] > 0
        and f_talk["questions"] == 1
        and f_talk["third_person_agent"] == 1
        and f_talk["first_person"] > 0
    )


def _pairs(n_seeds: int, injected, natural):  # type: ignore[no-untyped-def]
    rng = random.Random(0)
    out = []
    for s in range(n_seeds):
        for t in (1, 3):
            out.append((f"seed{s}", t, natural(rng, t), injected(rng, t)))
    return out


def test_a_separable_injection_is_found():
    natural = lambda rng, t: _agent(None, [("get_balance", "{}")], t)  # noqa: E731
    injected = lambda rng, t: _agent("I'm sorry, " + "very " * rng.randint(3, 30) + "long apology.", [], t)  # noqa: E731
    result = realism_of(_pairs(8, injected, natural))
    assert result.auc is not None and result.auc > 0.95
    assert result.n_injected == 16 and result.n_natural == 16 and result.n_groups == 8 and result.folds == 5
    assert "32 steps (16 injected, 16 natural, 8 seeds)" in result.describe()


def test_indistinguishable_steps_score_near_chance():
    def same(rng, t):  # type: ignore[no-untyped-def]
        return _agent(
            " ".join(rng.choice(["pay", "the", "bill", "now", "done", "sent"]) for _ in range(rng.randint(2, 20))),
            [],
            t,
        )

    result = realism_of(_pairs(30, same, same))
    assert result.auc is not None and 0.3 < result.auc < 0.7


def test_natural_steps_are_counted_once_per_position():
    step = _agent("a")
    xs, ys, groups = realism_examples(
        [("s", 1, step, _agent("b")), ("s", 1, step, _agent("c")), ("s", 3, step, _agent("d"))]
    )
    assert ys.count(1) == 3 and ys.count(0) == 2 and set(groups) == {"s"}


def test_too_few_examples_are_reported_not_scored():
    result = realism_probe([[0.0]] * 6, [1, 0, 1, 0, 1, 0], ["a", "a", "b", "b", "c", "c"])
    assert result.auc is None and "fewer than 5" in result.note and result.n_examples == 6
    one_seed = realism_probe([[float(i)] for i in range(12)], [1, 0] * 6, ["a"] * 12)
    assert one_seed.auc is None and "one seed" in one_seed.note


def test_folds_never_split_a_seed():
    groups = [f"g{i % 7}" for i in range(40)]
    folds = fold_assignment(groups, 5)
    assert set(folds) == set(range(5))
    for g in set(groups):
        assert len({f for f, h in zip(folds, groups, strict=False) if h == g}) == 1, g
