"""Which session and which user a trace belongs to, from its spans' attributes and its
resource: `session.id` (else `gen_ai.conversation.id`) and `user.id` (else `enduser.id`),
the first value found in span order, then the resource's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tracejudge import semconv

__all__ = ["SessionKeys", "session_keys"]

_SESSION = (semconv.SESSION_ID, semconv.GEN_AI_CONVERSATION_ID)
_USER = (semconv.USER_ID, semconv.ENDUSER_ID)
#: Ids are cut to this many characters (an id is not a document).
_MOST = 256


@dataclass(frozen=True)
class SessionKeys:
    session_id: str | None = None
    user_id: str | None = None

    def __bool__(self) -> bool:
        return self.session_id is not None or self.user_id is not None


def _first(attributes: Mapping[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = attributes.get(name)
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, (str, int)):
            text = str(value).strip()[:_MOST]
            if text:
                return text
    return None


def session_keys(
    span_attributes: Iterable[Mapping[str, Any]], resource: Mapping[str, Any] = {}
) -> SessionKeys:
    """The session and user ids of a trace (None where none is recorded)."""
    session = user = None
    for attributes in (*span_attributes, resource):
        session = session or _first(attributes, _SESSION)
        user = user or _first(attributes, _USER)
        if session and user:
            break
    return SessionKeys(session, user)
