"""A conversation message as the search service hands it to the store that records it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationMessage:
    role: str
    content: str
    user_id: str | None = None
    document_ids: Sequence[str] = ()


class ConversationStore(Protocol):
    async def add_message(self, conversation_id: str, message: ConversationMessage) -> str:
        """Store a message (PART_OF, CREATED, MENTIONS, REFERENCES); returns its id."""
