"""The chat-completions prompt a model sees, and the text it answered.

Layout: a system message naming the valid inputs (after the user's own system
prompt, if any); one user message with the turn, the budget left, optional
supervisor guidance, the recent trajectory (text only), the current
observation and a request for exactly one input. With vision on and images in
the observation, the user content becomes a text part plus one image part per
image (``data:`` URLs).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from playproof.core.agent import DecisionContext, HistoryEntry
from playproof.core.observation import Observation
from playproof.errors import DriverError

__all__ = ["DEFAULT_SYSTEM_PROMPT", "build_messages", "reply_text"]

DEFAULT_SYSTEM_PROMPT = (
    "You are playing a game, one input per turn. Read the observation and choose the input "
    "most likely to make progress."
)


def _system_message(system_prompt: str | None, vocabulary: Sequence[str]) -> str:
    intro = DEFAULT_SYSTEM_PROMPT if system_prompt is None else system_prompt
    words = ", ".join(vocabulary)
    rule = (
        f"Valid inputs: {words}. Answer with exactly one valid input as the first word of "
        "your reply; anything else counts as doing nothing this turn."
    )
    return f"{intro}\n\n{rule}" if intro else rule


def _user_text(
    observation: Observation,
    history: Sequence[HistoryEntry],
    context: DecisionContext,
) -> str:
    lines = [f"Turn {context.turn} of {context.max_turns}."]
    if context.remaining_usd is None:
        lines.append(f"Spent so far: ${context.spent_usd:.6f} (no budget limit).")
    else:
        lines.append(
            f"Spent so far: ${context.spent_usd:.6f}; budget left: ${context.remaining_usd:.6f}."
        )
    if context.guidance:
        lines += ["", "Guidance from your supervisor:", context.guidance]
    if history:
        lines += ["", "Recent turns (oldest first):"]
        for entry in history:
            lines += [f"[turn {entry.turn}]", entry.observation, f"-> you chose: {entry.input}"]
    lines += ["", "Current observation:", observation.text, ""]
    lines.append(f"Reply with exactly one of: {', '.join(context.vocabulary)}.")
    return "\n".join(lines)


def build_messages(
    observation: Observation,
    history: Sequence[HistoryEntry],
    context: DecisionContext,
    *,
    system_prompt: str | None,
    history_limit: int,
    vision: bool,
) -> list[dict[str, Any]]:
    """The ``messages`` array for one decision."""
    recent = history[-history_limit:] if history_limit > 0 else ()
    text = _user_text(observation, recent, context)
    content: str | list[dict[str, Any]] = text
    if vision and observation.images:
        content = [{"type": "text", "text": text}]
        content += [
            {
                "type": "image_url",
                "image_url": {"url": f"data:{image.media_type};base64,{image.data}"},
            }
            for image in observation.images
        ]
    return [
        {"role": "system", "content": _system_message(system_prompt, context.vocabulary)},
        {"role": "user", "content": content},
    ]


def reply_text(body: Mapping[str, Any]) -> str:
    """The assistant's answer: string content, or the text parts of a content list, joined."""
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
        raise DriverError("the reply has no choices[0]")
    message = choices[0].get("message")
    if not isinstance(message, Mapping):
        raise DriverError("the reply has no choices[0].message")
    content = message.get("content")
    if content is None:
        return ""  # e.g. a refusal or a tool call: no input this turn
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, Mapping)
            and part.get("type") in ("text", "output_text")
            and isinstance(part.get("text"), str)
        )
    raise DriverError(f"choices[0].message.content is a {type(content).__name__}")
