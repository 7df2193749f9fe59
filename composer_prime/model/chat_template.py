"""A conversation's tokens as the model's chat template writes them: the one way every process turns messages
into prompt ids, so the sampler, the trainer and the hint teacher see the same tokens."""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase


def template_ids(tokenizer: PreTrainedTokenizerBase, messages: list[dict], tools: list[dict] | None = None,
                 add_generation_prompt: bool = True, **template_kwargs) -> list[int]:
    """Token ids of the chat template's rendering, as a plain list. `return_dict=False` because transformers 5
    returns a BatchEncoding by default, whose `list(...)` is its key names, not the ids."""
    return list(tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=add_generation_prompt,
                                              tokenize=True, return_dict=False, **template_kwargs))
