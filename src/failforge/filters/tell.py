"""Reject a candidate whose injected step gives itself away in its own annotations: the tell.

A comment "sum" above a line that takes the mean, or a printed label "sample std" beside a population statistic,
is not how an analyst's slip looks: the agent wrote what it meant and then did something else, a seam a judge
localises at a glance (Who&When Pro's reproduction: 85.7% against 46.7% on the paper's own traces). So are words
that name the change (``# deliberately rounded``, ``print("wrong column")``). This filter reads the annotations of
the injected step ã_t (its code's comments and printed string literals; for a tool call, the comments in its
string arguments, e.g. a file of code it writes) and rejects the candidate naming the offending line. A
CodeAgent's ``Thought:`` is read the same way against the
whole code block it introduces.

An annotation contradicts the line it annotates (an inline comment or a print: its own line; a comment on a line
of its own: the next line of code) when it names one statistic and the line computes another (sum, mean,
median, standard deviation, variance, minimum, maximum, count), names a sample statistic where the line sets
``ddof=0`` or a population one where it sets ``ddof=1``, gives a number of decimals the line's ``round`` does not
keep (or its numbers do not have), or quotes a column the line does not read while it reads another. It
names the change when it says
deliberately, on purpose, intentionally, injected, wrong, incorrect, a mistake, a bug or "instead of".
Runs in every environment; a step with no annotation passes.
"""

from __future__ import annotations

import ast
import re

from failforge.gold import FilterContext, verdict
from failforge.judgement import code_of
from failforge.plugins import filters
from failforge.trajectory import FilterVerdict, Step

NAME = "tell"

#: statistic -> (words an annotation uses for it, the calls that compute it)
STATISTICS: dict[str, tuple[re.Pattern[str], re.Pattern[str]]] = {
    "sum": (re.compile(r"\b(sum|total)\b", re.I), re.compile(r"\.sum\(|\bsum\(")),
    "mean": (re.compile(r"\b(mean|average|avg)\b", re.I), re.compile(r"\.mean\(|\bmean\(|\baverage\(")),
    "median": (re.compile(r"\bmedian\b", re.I), re.compile(r"\.median\(|\bmedian\(")),
    "standard deviation": (
        re.compile(r"\b(std|stdev|standard deviation)\b", re.I),
        re.compile(r"\.std\(|\bp?stdev\(|\bstd\("),
    ),
    "variance": (re.compile(r"\bvariance\b|\bvar\b", re.I), re.compile(r"\.var\(|\bp?variance\(|\bvar\(")),
    "minimum": (re.compile(r"\b(min|minimum|smallest|lowest)\b", re.I), re.compile(r"\.min\(|\bmin\(|idxmin\(")),
    "maximum": (re.compile(r"\b(max|maximum|largest|highest)\b", re.I), re.compile(r"\.max\(|\bmax\(|idxmax\(")),
    "count": (re.compile(r"\b(count|number of)\b", re.I), re.compile(r"\.count\(|\blen\(|\.size\b|value_counts\(")),
}
NAMES_CHANGE = re.compile(
    r"\b(deliberately|on purpose|intentional(?:ly)?|injected|wrong|incorrect(?:ly)?|mistaken(?:ly)?|mistake|bug|"
    r"instead of)\b",
    re.I,
)
DECIMALS = re.compile(r"\b(\w+|\d+)\s+decimal", re.I)
WORD_NUMBERS = {"zero": 0, "no": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
QUOTED_COLUMN = re.compile(r"['\"]([^'\"]+)['\"]")
COLUMN_READ = re.compile(r"\[\s*['\"]([^'\"\]]+)['\"]\s*\]")


def annotations_of(code: str) -> list[tuple[int, str, str]]:
    """(line number, annotation text, the code line it annotates) for every comment and printed string of ``code``."""
    lines = code.splitlines()
    found: list[tuple[int, str, str]] = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith("#"):
            following = next((x for x in lines[number:] if x.strip() and not x.strip().startswith("#")), "")
            found.append((number, stripped.lstrip("# "), following.strip()))
        elif "#" in line:
            code_part, _, comment = line.partition("#")
            if code_part.count("'") % 2 == 0 and code_part.count('"') % 2 == 0:  # not a '#' inside a string
                found.append((number, comment.strip(), code_part.strip()))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return found
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            text = " ".join(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
            text += " ".join(
                v.value
                for a in node.args
                if isinstance(a, ast.JoinedStr)
                for v in a.values
                if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )
            if text.strip():
                found.append(
                    (node.lineno, text.strip(), ast.get_source_segment(code, node) or lines[node.lineno - 1].strip())
                )
    return sorted(found)


def contradiction(note: str, line: str) -> str | None:
    """Why annotation ``note`` contradicts code ``line``, or None."""
    said = [name for name, (words, _) in STATISTICS.items() if words.search(note)]
    done = [name for name, (_, calls) in STATISTICS.items() if calls.search(line)]
    if said and done and not set(said) & set(done):
        return f"it says {said[0]}, the code computes the {done[0]}"
    ddof = re.search(r"ddof\s*=\s*(\d)", line)
    if ddof and re.search(r"\bsample\b", note, re.I) and ddof.group(1) == "0":
        return "it says sample, the code sets ddof=0 (a population statistic)"
    if ddof and re.search(r"\bpopulation\b", note, re.I) and ddof.group(1) == "1":
        return "it says population, the code sets ddof=1 (a sample statistic)"
    kept = re.search(r"round\([^()]*,\s*(\d+)\s*\)", line)
    places = DECIMALS.search(note)
    if kept and places:
        word = places.group(1).lower()
        claimed = WORD_NUMBERS.get(word, int(word) if word.isdigit() else None)
        if claimed is not None and claimed != int(kept.group(1)):
            return f"it says {claimed} decimal place(s), the code keeps {kept.group(1)}"
    if places and not kept:
        word = places.group(1).lower()
        claimed = WORD_NUMBERS.get(word, int(word) if word.isdigit() else None)
        written = [n for n in re.findall(r"(?<![\w.])\d+\.(\d+)(?![\w.])", line) if len(n) != claimed]
        if claimed is not None and written:
            return f"it says {claimed} decimal place(s), the code writes a number with {len(written[0])}"
    read = COLUMN_READ.findall(line)
    named = [c for c in QUOTED_COLUMN.findall(note) if c not in read]
    if read and named and not set(QUOTED_COLUMN.findall(note)) & set(read):
        return f"it names column {named[0]!r}, the code reads {read[0]!r}"
    return None


def _texts(step: Step) -> list[str]:
    """The code an injected step carries: its code block, and the multi-line string arguments of its tool calls."""
    code = code_of(step)
    texts = [code] if code else []
    for call in step.tool_calls:
        args = call.parsed_arguments() or {}
        texts += [v for v in args.values() if isinstance(v, str) and "\n" in v]
    return texts


THOUGHT = re.compile(r"Thought:\s*(.*?)(?:<code>|```|$)", re.S)
NAMED_COLUMN = re.compile(r"\b(?:the\s+)?['\"]?([A-Za-z_][\w.]*)['\"]?\s+column\b")


def thought_contradiction(thought: str, code: str) -> str | None:
    """Why a CodeAgent's ``Thought:`` contradicts the code block it introduces (all of it), or None."""
    said = [name for name, (words, _) in STATISTICS.items() if words.search(thought)]
    done = [name for name, (_, calls) in STATISTICS.items() if calls.search(code)]
    if said and done and not set(said) & set(done):
        return f"it says {said[0]}, the code computes the {done[0]}"
    read = COLUMN_READ.findall(code)
    named = [c for c in NAMED_COLUMN.findall(thought) if c.lower() not in ("a", "each", "this", "that", "new")]
    if read and named and not set(named) & set(read):
        return f"it names the {named[0]!r} column, the code reads {read[0]!r}"
    kept = re.findall(r"round\((?:[^()]|\([^()]*\))*?,\s*(\d+)\s*\)", code)
    places = DECIMALS.search(thought)
    if kept and places:
        word = places.group(1).lower()
        claimed = WORD_NUMBERS.get(word, int(word) if word.isdigit() else None)
        if claimed is not None and all(int(k) != claimed for k in kept):
            return f"it says {claimed} decimal place(s), the code's round keeps {kept[0]}"
    return None


def find_tell(step: Step) -> str | None:
    code = code_of(step)
    thought = THOUGHT.search(step.content or "")
    if code and thought and thought.group(1).strip():
        said = thought.group(1).strip()
        named = NAMES_CHANGE.search(said)
        if named:
            return f"the thought {said!r} names the change ({named.group(0)!r})"
        why = thought_contradiction(said, code)
        if why:
            return f"the thought {said!r} introduces code that does otherwise: {why}"
    for text in _texts(step):
        for number, note, line in annotations_of(text):
            named = NAMES_CHANGE.search(note)
            if named:
                return f"line {number}: {note!r} names the change ({named.group(0)!r})"
            why = contradiction(note, line)
            if why:
                return f"line {number}: {note!r} annotates {line!r}: {why}"
    return None


@filters.register(
    NAME,
    order=45,
    default=True,
    description="the changed step's own comments or prints neither contradict its code nor name the change",
)
def check(ctx: FilterContext) -> FilterVerdict:
    """The injected step's comments, printed labels and thought neither contradict its code nor name the change."""
    found = find_tell(ctx.injected)
    if found is not None:
        return verdict(NAME, False, f"step {ctx.step} gives the change away: {found}")
    return verdict(
        NAME, True, "no comment or printed text of the injected step contradicts its code or names the change"
    )


__all__ = ["NAME", "annotations_of", "contradiction", "find_tell"]
