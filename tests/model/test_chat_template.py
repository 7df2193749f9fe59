"""composer_prime/model/chat_template.py: prompt ids are the template's text, tokenised, as a list of ints."""

from transformers import AutoTokenizer

from composer_prime.model.chat_template import template_ids
from composer_prime.tool_calls import native_tool_support, with_tools

WARMSTART = "configs/quickstart/warmstart"
MESSAGES = [{"role": "system", "content": "Reverse the letters."}, {"role": "user", "content": "c a t"}]
TOOLS = [{"type": "function", "function": {"name": "read_file", "description": "Read a file.",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


def test_ids_are_a_list_of_ints_that_decode_to_the_rendered_text():
    tokenizer = AutoTokenizer.from_pretrained(WARMSTART)
    for add_generation_prompt in (True, False):
        ids = template_ids(tokenizer, MESSAGES, add_generation_prompt=add_generation_prompt)
        text = tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=add_generation_prompt, tokenize=False)
        assert type(ids) is list and all(type(i) is int for i in ids)
        assert ids == tokenizer.encode(text, add_special_tokens=False)
        assert tokenizer.decode(ids) == text


def test_tools_reach_the_template():
    tokenizer = AutoTokenizer.from_pretrained(WARMSTART)
    messages, tools = with_tools(MESSAGES, TOOLS, native_tool_support(tokenizer))
    ids = template_ids(tokenizer, messages, tools)
    assert '"read_file"' in tokenizer.decode(ids)
    assert ids != template_ids(tokenizer, MESSAGES)
