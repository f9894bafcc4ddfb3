"""ε: seeded Action Metamorphic Relations on task text (ReliabilityBench §3.2.2, Table 2).

Each relation rewrites the wording and keeps the meaning, so the task's verifier is
unchanged (end-state equivalence). Levels follow the paper: ε=0.1 light (synonyms, date
formats, constraint reordering), ε=0.2 medium (+ distractors, mid-task corrections),
ε=0.3 heavy (+ relative dates; LLM paraphrase is not applied offline). Every draw is a
hash of (seed, task id, ε, relation), so the same task at the same ε reads the same in
every trial and every run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

SYNONYMS: dict[str, tuple[str, ...]] = {
    "book": ("reserve", "arrange"),
    "cheapest": ("lowest-priced", "least expensive"),
    "find": ("look up", "locate"),
    "cancel": ("call off", "drop"),
    "create": ("open", "set up"),
    "check": ("verify", "look at"),
    "order": ("purchase",),
    "meeting": ("appointment",),
    "customer": ("client",),
    "quickly": ("promptly",),
    "before": ("no later than",),
    "after": ("later than",),
    "need": ("require",),
    "want": ("would like",),
    "please": ("kindly",),
}

DISTRACTORS: tuple[str, ...] = (
    "By the way, the office coffee machine is broken again.",
    "My colleague mentioned the weather has been unusually mild this week.",
    "I am writing this from the train, so forgive the brevity.",
    "Unrelated, but remind me later to renew my library card.",
    "The quarterly newsletter went out yesterday, in case you missed it.",
)

ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class Perturbed:
    """A task text after perturbation, with the relations that were applied, in order."""

    text: str
    relations: tuple[str, ...]


def level_relations(epsilon: float) -> tuple[str, ...]:
    """The relations applied at a perturbation level, cumulative as in the paper."""
    if epsilon < 0 or epsilon > 1:
        raise ValueError(f"epsilon must be within [0, 1], got {epsilon}")
    relations: list[str] = []
    if epsilon >= 0.1 - 1e-9:
        relations += ["synonym", "date_format", "reorder"]
    if epsilon >= 0.2 - 1e-9:
        relations += ["distractor", "correction"]
    if epsilon >= 0.3 - 1e-9:
        relations += ["relative_date"]
    return tuple(relations)


def perturb(
    text: str, *, epsilon: float, seed: int, task_id: str, reference_date: dt.date | None = None
) -> Perturbed:
    """Apply the relations of level ε; a relation that finds nothing to change is skipped."""
    applied: list[str] = []
    chosen = set(level_relations(epsilon))
    for relation in (r for r in APPLICATION_ORDER if r in chosen):
        draw = _Draw(seed, task_id, epsilon, relation)
        rewritten = RELATIONS[relation](text, draw, reference_date)
        if rewritten != text:
            text = rewritten
            applied.append(relation)
    return Perturbed(text=text, relations=tuple(applied))


class _Draw:
    """Deterministic choices for one relation: hash-based, no shared random stream."""

    def __init__(self, seed: int, task_id: str, epsilon: float, relation: str) -> None:
        self._prefix = f"{seed}|{task_id}|{epsilon:.3f}|{relation}"
        self._count = 0

    def unit(self) -> float:
        self._count += 1
        digest = hashlib.blake2b(f"{self._prefix}|{self._count}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") / 2**64

    def pick(self, options: tuple[T, ...] | list[T]) -> T:
        return options[int(self.unit() * len(options))]


def _synonyms(text: str, draw: _Draw, _: dt.date | None) -> str:
    def replace(match: re.Match[str]) -> str:
        word = match.group(0)
        options = SYNONYMS.get(word.lower())
        if options is None or draw.unit() < 0.4:
            return word
        choice = draw.pick(options)
        return choice.capitalize() if word[0].isupper() else choice

    return re.sub(r"[A-Za-z]+", replace, text)


def _date_format(text: str, draw: _Draw, _: dt.date | None) -> str:
    style = draw.pick(("%B %-d, %Y", "%-d %B %Y", "%a %d %b %Y"))

    def replace(match: re.Match[str]) -> str:
        date = _parse_iso(match)
        return match.group(0) if date is None else date.strftime(style)

    return ISO_DATE.sub(replace, text)


def _reorder(text: str, draw: _Draw, _: dt.date | None) -> str:
    sentences = [s for s in SENTENCE_END.split(text.strip()) if s]
    if len(sentences) < 3:
        return text
    head, constraints = sentences[0], sentences[1:]
    order = sorted(range(len(constraints)), key=lambda _: draw.unit())
    if order == sorted(order):
        order = order[1:] + order[:1]
    return " ".join([head, *(constraints[i] for i in order)])


def _distractor(text: str, draw: _Draw, _: dt.date | None) -> str:
    sentences = [s for s in SENTENCE_END.split(text.strip()) if s]
    position = 1 + int(draw.unit() * len(sentences))
    sentences.insert(min(position, len(sentences)), draw.pick(DISTRACTORS))
    return " ".join(sentences)


def _correction(text: str, draw: _Draw, _: dt.date | None) -> str:
    match = ISO_DATE.search(text)
    if match is not None and (date := _parse_iso(match)) is not None:
        wrong = (date - dt.timedelta(days=1)).isoformat()
        fixed = f"{wrong} (sorry, I mean {match.group(0)})"
        return text[: match.start()] + fixed + text[match.end() :]
    number = re.search(r"\b(\d+)\b", text)
    if number is None:
        return text
    wrong_number = str(int(number.group(1)) + 1 + int(draw.unit() * 3))
    fixed = f"{wrong_number}, no wait, {number.group(1)}"
    return text[: number.start()] + fixed + text[number.end() :]


def _relative_date(text: str, draw: _Draw, reference: dt.date | None) -> str:
    if reference is None:
        return text

    def replace(match: re.Match[str]) -> str:
        date = _parse_iso(match)
        if date is None:
            return match.group(0)
        days = (date - reference).days
        if days == 0:
            return f"today ({reference:%-d %B %Y})"
        if days == 1:
            return f"tomorrow (today being {reference:%-d %B %Y})"
        sign = "plus" if days > 0 else "minus"
        return f"{reference:%-d %B %Y} {sign} {abs(days)} days"

    return ISO_DATE.sub(replace, text)


def _parse_iso(match: re.Match[str]) -> dt.date | None:
    try:
        return dt.date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
    except ValueError:
        return None


# Date-based relations read ISO dates, so the one that re-formats dates goes last.
APPLICATION_ORDER = (
    "synonym",
    "reorder",
    "distractor",
    "correction",
    "relative_date",
    "date_format",
)

RELATIONS: dict[str, Callable[[str, _Draw, dt.date | None], str]] = {
    "synonym": _synonyms,
    "date_format": _date_format,
    "reorder": _reorder,
    "distractor": _distractor,
    "correction": _correction,
    "relative_date": _relative_date,
}
