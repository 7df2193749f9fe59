"""How often a model sorts sort-numbers' held-out lists before any training, greedy and sampled.

Reads the taskset's own prompts (eval split, seed 0, the first N lists) and its own verdict (`answer_of`),
renders them with the model's chat template and samples with transformers' `generate` in float32, one
batch per temperature (T = 0: greedy). Prints accuracy and how many replies repeat the list as asked,
with the first replies to read. The issue-31 band for a learnable start is 5-40 %.

Usage: uv run python benchmarks/sort_numbers_base.py --model models/smollm2-135m-instruct
       [--length 3] [--lists 32] [--temperatures 0,0.7,1.0] [--max-new-tokens 12]
"""

from __future__ import annotations

import argparse
import time

import torch
from sort_numbers.taskset import SortNumbersConfig, SortNumbersTaskset, answer_of
from transformers import AutoModelForCausalLM, AutoTokenizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--length", type=int, default=3)
    parser.add_argument("--lists", type=int, default=32)
    parser.add_argument("--temperatures", default="0,0.7,1.0")
    parser.add_argument("--max-new-tokens", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.model, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    tasks = list(SortNumbersTaskset(SortNumbersConfig(split="eval", min_length=args.length, max_length=args.length,
                                                      num_examples=args.lists)))
    prompts = [tokenizer.apply_chat_template([{"role": "user", "content": t.data.prompt}], tokenize=False,
                                             add_generation_prompt=True) for t in tasks]
    encoded = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    for temperature in map(float, args.temperatures.split(",")):
        torch.manual_seed(0)
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(**encoded, max_new_tokens=args.max_new_tokens, do_sample=temperature > 0,
                                 temperature=temperature or None, top_p=None, top_k=None,
                                 pad_token_id=tokenizer.eos_token_id)
        replies = tokenizer.batch_decode(out[:, encoded["input_ids"].shape[1]:], skip_special_tokens=True)
        right = sum(answer_of(r, args.length) == sorted(t.data.digits) for r, t in zip(replies, tasks))
        echoed = sum(answer_of(r, args.length) == t.data.digits for r, t in zip(replies, tasks))
        print(f"T={temperature}: right {right}/{len(tasks)} = {right / len(tasks):.3f}, "
              f"repeated the list {echoed}/{len(tasks)}, {time.perf_counter() - start:.0f} s", flush=True)
        for reply, task in list(zip(replies, tasks))[:4]:
            print(f"    {task.data.digits} -> {reply!r}", flush=True)


if __name__ == "__main__":
    main()
