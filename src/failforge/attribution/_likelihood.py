"""Likelihood baselines: which earlier step makes the failing output most likely?

After the trajectory attribution benchmark: a target ``y`` (here the record's last step, where the
failure shows) and candidate components ``c_1..c_{T-1}`` (every earlier non-system step) are scored
with a language model's token log-probabilities:

- incremental: ``s_i = log p(y | task, c_<=i) - log p(y | task, c_<=i-1)``, the gain in the target's
  log-likelihood when step i is added;
- leave-one-out: ``s_i = (1/|y|) [log p(y | task, c_all) - log p(y | task, c_all without c_i)]``, the
  mean per-token loss when step i is removed.

The prediction is the argmax (earliest on ties) and its author; no mode. A tool's output (a ``tool`` step,
Who&When's ``Computer_terminal``) is scored as context but never predicted: it is what the agents react to,
never the agent that erred (:func:`nameable`). The gold step cannot be predicted when it *is* the last step;
such records count as wrong for these methods.

Records with component gold (``record.components``: the trajectory-attribution release, failforge gold
with a target component) are scored over components instead: the target ``y`` is the target
component's text (the unsafe call, the refusal, the task-aligned action), the candidates are the
components strictly before it in position order (a system message included, as the release numbers
it), and nothing after the target is in any context. The prediction also carries ``ranking``, every
candidate component id by descending score (earliest first on ties), which ``failforge score`` reads
for top-k and MRR, and the two chains, derived from the same scores by :func:`derive_chains` (seed system
1: "threshold c_j, then split the ranked components by the position rules"):

- the predicted primary is the top of the ranking;
- a candidate is *kept* when ``c_j > 0`` and ``c_j >= tau * c_primary`` (``tau`` = :data:`CHAIN_TAU`,
  0.5, recorded on every such prediction as ``chain_threshold``); when ``c_primary <= 0`` nothing is kept;
- the kept candidates strictly before the primary, in position order, are the attack chain; those after
  it (all candidates lie before the target, so: strictly between the primary and the target) are the
  execution chain; neither holds the primary or the target. The result is checked with the importer's
  own :func:`~failforge.attribution._components.check_label`, so a predicted chain obeys the same rules as
  gold.

Why this rule: ``c_j`` are log-probability gains (incremental: nats of the whole target; leave-one-out:
nats per target token), so an absolute cut-off would mean something different for each method, target
length and model. A ratio to the primary's own gain is scale-free (the same chains under any positive
rescaling of the scores) and keeps its one meaningful origin: ``c_j <= 0`` means the component made the
target no more likely, which is no cause at all. ``tau = 0.5`` reads "at least half as influential as
the primary". It is a module constant because neither the method registry nor ``failforge attribute``
passes method options; a plugin may subclass a method and set ``chain_tau``.

Log-probabilities come from the embedded SmolLM2-135M GGUF run in-process by llama-cpp-python
(``Llama(model_path=local_model_path(), logits_all=True)``): ``eval`` keeps a KV cache, and rewinding
``n_tokens`` to a prefix length makes the next ``eval`` continue from that prefix, so the shared prefix
is evaluated once. That is cheaper than the server's ``/v1/completions`` with ``echo`` and ``logprobs``
(which re-sends and re-evaluates the whole prompt per call and returns top-k lists as JSON) and it is
exact: the scores are the model's full next-token distributions. Steps are cut to a token budget so
task + steps + target fit the context window; the cut is recorded on the prediction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from failforge.attribution._components import ChainError, ComponentLabel, check_label
from failforge.attribution._methods import MethodContext, Outcome, methods
from failforge.attribution._record import LabelledFailure
from failforge.llm import default_threads

#: tau of the chain rule (see the module docstring): a candidate joins a chain when its contribution is
#: positive and at least ``CHAIN_TAU`` times the primary's.
CHAIN_TAU = 0.5


class TokenScorer:
    """Target log-probabilities from llama.cpp, with prefix reuse. Not thread-safe: one per worker."""

    def __init__(
        self,
        *,
        model_path: str | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        max_step_tokens: int = 96,
        max_target_tokens: int = 48,
    ) -> None:
        from failforge.errors import ConfigError

        try:
            import llama_cpp
            import numpy as np
        except ImportError as exc:
            raise ConfigError(
                "the likelihood baselines need llama-cpp-python: run scripts/install.sh (pip install"
                " 'failforge[local]')"
            ) from exc
        from failforge.llm import local_model_path

        self._np = np
        self.model_path = str(model_path or local_model_path())
        self.n_ctx = n_ctx
        self.max_step_tokens = max_step_tokens
        self.max_target_tokens = max_target_tokens
        threads = n_threads or default_threads()  # half the cores: see failforge.llm._local.default_threads
        self.llm = llama_cpp.Llama(
            model_path=self.model_path,
            logits_all=True,
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            n_batch=512,
            verbose=False,
        )
        self.tokens_evaluated = 0

    def tokenize(self, text: str) -> list[int]:
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def _eval(self, keep: int, tokens: list[int]) -> None:
        self.llm.n_tokens = keep
        if tokens:
            self.llm.eval(tokens)
            self.tokens_evaluated += len(tokens)

    def target_logprob(self, keep: int, target: list[int]) -> float:
        """log p(target | the first ``keep`` evaluated tokens); leaves the cache at ``keep`` tokens."""
        np = self._np
        self._eval(keep, target)
        rows = self.llm.scores[keep - 1 : keep - 1 + len(target), :].astype(np.float64)
        peak = rows.max(axis=1, keepdims=True)
        log_norm = peak[:, 0] + np.log(np.exp(rows - peak).sum(axis=1))
        picked = rows[np.arange(len(target)), target]
        self.llm.n_tokens = keep
        return float((picked - log_norm).sum())

    def layout(self, record: LabelledFailure) -> tuple[list[int], list[list[int]], list[int], list[int]]:
        """(header tokens, per-candidate step tokens, candidate indices, target tokens), cut to fit n_ctx."""
        candidates, target_at = target_and_candidates(record)
        header = [self.llm.token_bos()] + self.tokenize(f"Task: {record.task.question[:1500]}\n")
        last = record.steps[target_at]
        target = self.tokenize(f"{last.agent}: {' '.join(last.content.split())}\n")[: self.max_target_tokens]
        room = self.n_ctx - len(header) - len(target) - 8
        cap = max(8, min(self.max_step_tokens, room // max(1, len(candidates))))
        bodies = []
        for i in candidates:
            step = record.steps[i]
            calls = " ".join(f"{c.name}({c.arguments})" for c in step.tool_calls)
            bodies.append(self.tokenize(f"{step.agent}: {' '.join((step.content + ' ' + calls).split())}\n")[:cap])
        while len(header) + sum(len(b) for b in bodies) + len(target) > self.n_ctx - 8 and cap > 8:
            cap //= 2
            bodies = [b[:cap] for b in bodies]
        return header, bodies, candidates, target

    def incremental(self, record: LabelledFailure) -> tuple[list[int], list[float]]:
        header, bodies, candidates, target = self.layout(record)
        self._eval(0, header)
        keep = len(header)
        previous = self.target_logprob(keep, target)
        scores = []
        for body in bodies:
            self._eval(keep, body)
            keep += len(body)
            current = self.target_logprob(keep, target)
            scores.append(current - previous)
            previous = current
        return candidates, scores

    def leave_one_out(self, record: LabelledFailure) -> tuple[list[int], list[float]]:
        header, bodies, candidates, target = self.layout(record)
        offsets = [len(header)]
        for body in bodies:
            offsets.append(offsets[-1] + len(body))
        self._eval(0, header + [t for b in bodies for t in b])
        full = self.target_logprob(offsets[-1], target)
        scores = []
        for i in range(len(bodies)):
            if i > 0:
                # The previous round overwrote the cache from offsets[i-1] on with the trajectory
                # without step i-1: put step i-1 back so the prefix is header + steps < i again.
                self._eval(offsets[i - 1], bodies[i - 1])
            tail = [t for b in bodies[i + 1 :] for t in b]
            self._eval(offsets[i], tail)
            without = self.target_logprob(offsets[i] + len(tail), target)
            scores.append((full - without) / max(1, len(target)))
        self._eval(0, [])
        return candidates, scores

    def close(self) -> None:
        close = getattr(self.llm, "close", None)
        if callable(close):
            close()


def target_and_candidates(record: LabelledFailure) -> tuple[list[int], int]:
    """(candidate step indices, target step index): the components strictly before the target component
    for a record with component gold; otherwise every non-system step before the last, and the last."""
    if record.components is not None:
        at = next(s.index for s in record.steps if s.component == record.components.target)
        return [s.index for s in record.steps[:at] if s.component is not None], at
    return [i for i in record.candidate_steps() if i != len(record.steps) - 1], len(record.steps) - 1


def derive_chains(
    ids: Sequence[str], scores: Sequence[float], tau: float = CHAIN_TAU
) -> tuple[list[str], list[str], list[str]]:
    """(ranking, attack chain, execution chain) from the candidates ``ids`` in position order and their
    contributions ``scores``. The ranking is by descending score, earliest first on ties; its head is the
    primary. Kept: ``c_j > 0 and c_j >= tau * c_primary`` (nothing when ``c_primary <= 0``); kept ids before
    the primary form the attack chain, after it the execution chain, each in position order."""
    if len(ids) != len(scores):
        raise ValueError(f"{len(ids)} candidates but {len(scores)} scores")
    if not 0 <= tau <= 1:
        raise ValueError(f"chain threshold tau must be in [0, 1], got {tau}")
    order = sorted(range(len(ids)), key=lambda k: (-scores[k], k))
    ranking = [ids[k] for k in order]
    if not order:
        return ranking, [], []
    top = order[0]
    best = scores[top]
    kept = [k for k in range(len(ids)) if k != top and best > 0 and scores[k] > 0 and scores[k] >= tau * best]
    return ranking, [ids[k] for k in kept if k < top], [ids[k] for k in kept if k > top]


def nameable(record: LabelledFailure, index: int) -> bool:
    """Whether step ``index`` may be the prediction: a component of a component-gold record, else any step but a
    tool's output (Who&When's ``Computer_terminal``), which is context the agents react to, never the agent
    that erred. Tool outputs stay in the scored context; they only cannot be named."""
    return record.components is not None or record.steps[index].kind != "tool"


def _outcome(record: LabelledFailure, candidates: list[int], scores: list[float], tau: float = CHAIN_TAU) -> Outcome:
    per_step: list[float | None] = [None] * len(record.steps)
    for i, s in zip(candidates, scores, strict=False):
        per_step[i] = s
    eligible = [k for k, i in enumerate(candidates) if nameable(record, i)]
    if not eligible:
        return Outcome(problems=["no candidate step before the target"], step_scores=per_step)
    best = max(eligible, key=lambda k: (scores[k], -k))
    step = candidates[best]
    out = Outcome(agent=record.author(step), step=step, step_text=str(step), step_scores=per_step)
    if record.components is not None:
        ids = [str(record.steps[i].component) for i in candidates]
        out.ranking, attack, execution = derive_chains(ids, scores, tau)
        label = ComponentLabel(
            target_type=record.components.target_type,
            target=record.components.target,
            primary=out.ranking[0],
            attack_chain=attack,
            execution_chain=execution,
        )
        try:
            check_label(record.component_order(), label)
        except (
            ChainError
        ) as exc:  # cannot happen for candidates before the target; never write a chain that breaks a rule
            out.problems.append(f"derived chains dropped, they break a chain rule: {exc}")
        else:
            out.attack_chain, out.execution_chain = attack, execution
        out.chain_threshold = tau
        return out
    if record.gold.step == len(record.steps) - 1:
        out.problems.append("the gold step is the target step itself, which these methods cannot name")
    return out


class _Likelihood:
    kind = "likelihood"
    which = ""
    chain_tau = CHAIN_TAU

    def predict(self, ctx: MethodContext) -> Outcome:
        scorer: Any = ctx.scorer
        if scorer is None:
            raise RuntimeError("likelihood methods need a TokenScorer in the context")
        candidates, scores = getattr(scorer, self.which)(ctx.record)
        return _outcome(ctx.record, candidates, scores, self.chain_tau)


@methods.register(
    "incremental", description="gain in log p(last step) as each earlier step is added (llama.cpp log-probs)"
)
class Incremental(_Likelihood):
    which = "incremental"


@methods.register(
    "leave-one-out", description="loss in mean log p(last step) when each earlier step is removed (llama.cpp log-probs)"
)
class LeaveOneOut(_Likelihood):
    which = "leave_one_out"
