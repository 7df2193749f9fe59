"""The teacher's context at an error site: the student's context with the hint inserted before the error turn.

Composer 2.5's hint distillation: the same model, shown a short hint just before the turn it
got wrong, is the teacher for that turn; the student is the model on the original context.
Both score the *same* tokens (the student's own turn), so the two distributions line up token
by token and the loss covers that turn only.
"""

from __future__ import annotations

from composer_prime.chat import ChatMessage
from composer_prime.traces import ErrorRecord

HINT_PREFIX = "Hint: "


def teacher_messages(messages: list[ChatMessage], error: ErrorRecord, hint: str) -> list[ChatMessage]:
    """`messages[:error.turn]` plus the hint as a user message: the context the teacher continues.

    A user turn, not a system prompt edit, so that any chat template renders it and the rest of
    the context stays byte-identical to the student's.
    """
    if not 0 <= error.turn < len(messages) or messages[error.turn].role != "assistant":
        raise ValueError(f"error turn {error.turn} is not an assistant message of this conversation")
    return [*messages[: error.turn], ChatMessage(role="user", content=HINT_PREFIX + hint)]
