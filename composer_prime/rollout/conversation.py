"""A multi-turn conversation held as the exact token sequence the policy saw and sampled.

The trainer must score the very tokens the sampler produced, so the conversation is never
re-tokenised: sampled turns are appended as their token ids, and the messages in between (tool
results, user turns) as the tokens of the text the chat template adds for them. That text is the
difference between the template's rendering of the longer conversation and the text the
sequence already holds (the previous prompt's rendering plus the turn exactly as sampled, its
stop token included), so the glue the template writes after an end-of-turn token (ChatML's
newline) lands in the context, not in the sampled turn.

An assistant turn is rendered back into the template as the text it decoded to, so a template
that prints assistant content verbatim reproduces the sampled text and the sequence extends
exactly. A template that re-renders earlier turns differently (one that drops `<think>` blocks
from past turns, say) breaks that: `TemplateMismatch` is raised and the rollout ends there, keeping
what was sampled (documented in multi_turn.py). Re-tokenising the whole conversation instead would
train on tokens the sampler never saw.

Tools: a template that renders a `tools` list itself (it mentions `tools`) gets the schemas that
way; for any other template they are described in the system prompt (tool_calls.TOOLS_PROMPT).
Either way calls come back as Hermes `<tool_call>` text (tool_calls.py).
"""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

from composer_prime.tool_calls import native_tool_support, with_tools


class TemplateMismatch(Exception):
    """The chat template's rendering of the longer conversation does not extend the sequence so far."""


def render(tokenizer: PreTrainedTokenizerBase, messages: list[dict], tools: list[dict] | None,
           add_generation_prompt: bool = True) -> str:
    return tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=add_generation_prompt,
                                         tokenize=False)


def encode(tokenizer: PreTrainedTokenizerBase, text: str) -> list[int]:
    """Tokens of template text: its special-token markers become their ids, nothing is added around it."""
    return list(tokenizer.encode(text, add_special_tokens=False))


def decode(tokenizer: PreTrainedTokenizerBase, ids: list[int]) -> str:
    return tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)


class TokenConversation:
    """The token sequence of one rollout: prompt, then sampled turns and the context between them.

    `ids[:prompt_len]` is the prompt; after it, `sampled[t]` tells whether token `prompt_len + t`
    was sampled by the policy (trained) or added as context, and `logprobs[t]` is its sampler
    log-prob (0 for context). `spans[i]` is the [start, end) range in `ids` of the turn that is
    message i of the caller's conversation, `messages[i + offset]` here.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, prompt: list[dict], tools: list[dict] | None = None):
        self.tokenizer = tokenizer
        self.messages, self.tools = with_tools(prompt, tools, native_tool_support(tokenizer))
        self.offset = len(self.messages) - len(prompt)
        """Template messages before the caller's first message (1 when a system prompt was added for the tools)."""
        self._text = render(tokenizer, self.messages, self.tools)
        self.ids = encode(tokenizer, self._text)
        self.prompt_len = len(self.ids)
        self.sampled: list[bool] = []
        self.logprobs: list[float] = []
        self.spans: dict[int, tuple[int, int]] = {}
        self._pending: str | None = None  # the last turn as sampled, until context follows it

    def add_turn(self, token_ids: list[int], logprobs: list[float], index: int, stop_ids: set[int]) -> str:
        """Append a sampled assistant turn (message `index`); returns its text without the stop token."""
        if self._pending is not None:
            raise ValueError("two assistant turns in a row: add the context between them first")
        start = len(self.ids)
        self.ids += token_ids
        self.sampled += [True] * len(token_ids)
        self.logprobs += logprobs
        self.spans[index] = (start, len(self.ids))
        self._pending = decode(self.tokenizer, token_ids)
        body = token_ids[:-1] if token_ids and token_ids[-1] in stop_ids else token_ids
        content = decode(self.tokenizer, body)
        self.messages.append({"role": "assistant", "content": content})
        return content

    def add_context(self, messages: list[dict]) -> int:
        """Append non-sampled messages (tool results, a user turn) and the next generation prompt; returns
        how many tokens were added. Raises TemplateMismatch when the template does not extend the sequence."""
        longer = render(self.tokenizer, self.messages + messages, self.tools)
        held = self._text + (self._pending or "")
        if not longer.startswith(held):
            raise TemplateMismatch(_first_difference(held, longer))
        new = encode(self.tokenizer, longer[len(held):])
        self.ids += new
        self.sampled += [False] * len(new)
        self.logprobs += [0.0] * len(new)
        self.messages += messages
        self._text, self._pending = longer, None
        return len(new)

    @property
    def completion_ids(self) -> list[int]:
        return self.ids[self.prompt_len :]


def _first_difference(held: str, longer: str) -> str:
    at = next((i for i, (a, b) in enumerate(zip(held, longer)) if a != b), min(len(held), len(longer)))
    return (f"the template renders the conversation differently at character {at}: "
            f"{held[max(0, at - 40) : at + 40]!r} became {longer[max(0, at - 40) : at + 40]!r}")
