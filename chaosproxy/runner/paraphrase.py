"""LLM paraphrase of task text (ReliabilityBench Table 2), used only when a model is configured.

A paraphrase must keep the task's meaning, since the verifier does not change. A model can
drop a date or change an id, so every paraphrase is checked: each number, date, id and
quoted string of the original must still be there, or the paraphrase is rejected and the
text keeps its rule-based perturbations only. Requests ask for temperature 0 and a fixed
seed, and each (task, ε) is paraphrased once per run, so all trials read the same text.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from openai import AsyncOpenAI, OpenAIError

INSTRUCTIONS = (
    "Rewrite the user's request in different words, as another person would ask for the "
    "same thing. Keep every name, number, date, time, amount, id and constraint exactly as "
    "written. Do not add or remove requirements. Reply with the rewritten request only."
)

# Tokens whose loss would change what the task asks for.
_KEEP = re.compile(r"\d{4}-\d{2}-\d{2}|\d+(?:[.:]\d+)*|[A-Z]{1,6}-\d+[A-Z0-9-]*|'[^']+'|\"[^\"]+\"")


@dataclass(frozen=True)
class ParaphraseResult:
    text: str
    accepted: bool
    reason: str = ""


def missing_facts(original: str, paraphrase: str) -> list[str]:
    """The numbers, dates, ids and quoted strings of `original` absent from `paraphrase`."""
    return [token for token in dict.fromkeys(_KEEP.findall(original)) if token not in paraphrase]


class Paraphraser:
    """Paraphrases through any OpenAI-compatible chat-completions endpoint."""

    def __init__(self, model: str, base_url: str | None = None, api_key: str | None = None) -> None:
        self.model = model
        key = api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self._client = AsyncOpenAI(base_url=base_url, api_key=key)

    async def paraphrase(self, text: str, seed: int) -> ParaphraseResult:
        try:
            completion = await self._client.chat.completions.create(
                model=self.model,
                messages=[
                    {"role": "system", "content": INSTRUCTIONS},
                    {"role": "user", "content": text},
                ],
                temperature=0,
                seed=seed,
            )
        except OpenAIError as failure:
            return ParaphraseResult(text, False, f"paraphrase request failed: {failure}")
        content = (
            (completion.choices[0].message.content or "").strip() if completion.choices else ""
        )
        if not content:
            return ParaphraseResult(text, False, "the model returned no text")
        lost = missing_facts(text, content)
        if lost:
            return ParaphraseResult(text, False, f"the paraphrase dropped {', '.join(lost[:5])}")
        return ParaphraseResult(content, True)

    async def close(self) -> None:
        await self._client.close()
