"""The scripted analyst: a deterministic policy that plays the model for oracle seeds, in CodeAgent's format.

Mechanics, and said to be so: it loads the table, inspects it, writes the answers **from the label** into a
variable, and calls ``final_answer`` with them formatted from that variable. It computes nothing the question
asks; what it exercises is the interpreter (state carried across four code steps), the harness (smolagents'
own parser and ``final_answer``) and the evaluator. Because the answer flows through the namespace
(``answers`` at step 3, formatted at step 4), a change at step 3 (a rounded value, a renamed key) reaches
the final answer, which is what a code-mode injection needs to be decisive.
"""

from __future__ import annotations

from failforge.environments.dabench._data import Question

#: The last response repeats when the agent is called again (e.g. smolagents' closing summary call).
OPEN, CLOSE = "<code>", "</code>"


def _block(thought: str, code: str) -> str:
    return f"Thought: {thought}\n{OPEN}\n{code.strip()}\n{CLOSE}"


def analyst_responses(q: Question) -> list[str]:
    """The four model responses of the scripted analyst for question ``q``."""
    answers = "{" + ", ".join(f"{name!r}: {value!r}" for name, value in q.common_answers) + "}"
    return [
        _block(
            "I will load the table and look at its size and first rows.",
            f"import pandas as pd\ndf = pd.read_csv({'data/' + q.file_name!r})\nprint(df.shape)\nprint(df.head())",
        ),
        _block("Next I inspect the column types and missing values.", "print(df.dtypes)\nprint(df.isna().sum())"),
        _block("I collect the values the question asks for.", f"answers = {answers}\nprint(answers)"),
        _block(
            "I give the answers in the required format.",
            "final_answer(' '.join(f'@{name}[{value}]' for name, value in answers.items()))",
        ),
    ]


__all__ = ["analyst_responses"]
