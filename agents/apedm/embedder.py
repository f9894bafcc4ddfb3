"""Text to vector for the memory: the offline lexical embedding, or a /v1/embeddings model."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from chaosproxy.agents.embedding import DIM, LEXICAL, lexical_embedding
from chaosproxy.agents.llm import ModelClient, ModelEndpoint, ModelUsage
from numpy.typing import NDArray

REMOTE_PREFIX = "openai:"


@dataclass(frozen=True)
class Embedder:
    """`endpoint` None: the lexical embedding; otherwise that endpoint's model."""

    endpoint: ModelEndpoint | None = None

    @property
    def name(self) -> str:
        return LEXICAL if self.endpoint is None else REMOTE_PREFIX + self.endpoint.model

    async def embed(self, texts: list[str], usage: ModelUsage) -> NDArray[np.float32]:
        """One row per text; calls to a remote model count in `usage` like chat calls."""
        if self.endpoint is None:
            if not texts:
                return np.zeros((0, DIM), dtype=np.float32)
            return np.stack([lexical_embedding(text) for text in texts])
        client = ModelClient(self.endpoint, usage)
        try:
            rows = await client.embed(texts, self.endpoint.model)
        finally:
            await client.close()
        return np.asarray(rows, dtype=np.float32)
