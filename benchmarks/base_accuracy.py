"""How often a model answers an environment's held-out prompts right before any training, greedy and sampled.

Loads the environment as `rl` does (`--env` id, `--args` JSON for its taskset), takes the first N prompts of
its eval split and scores every reply with the environment's own verdict (`Environment.score`, the reward RL
trains on). Renders the prompts with the model's chat template and samples with transformers' `generate` in
float32, one batch per temperature (T = 0: greedy; seed 0 before each). Prints accuracy per temperature and
the first replies to read. Issue 31's band for a learnable start is 5-40 %.

Usage: uv run python benchmarks/base_accuracy.py --model models/smollm2-135m-instruct --env add-numbers
       [--args '{}'] [--prompts 64] [--temperatures 0,0.7,1.0] [--max-new-tokens 12] [--threads 2] [--show 8]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from composer_prime.configs.rollout import EnvConfig
from composer_prime.rollout.envs import load_environment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--env", default="add-numbers")
    parser.add_argument("--args", default="{}", help="the taskset's arguments, JSON ([orchestrator.env.args])")
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--temperatures", default="0,0.7,1.0")
    parser.add_argument("--max-new-tokens", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--show", type=int, default=8, help="replies printed per temperature")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.model, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    env = load_environment(EnvConfig(id=args.env, args=json.loads(args.args)))
    examples = env.examples("eval")[: args.prompts]
    prompts = [tokenizer.apply_chat_template(e.prompt, tokenize=False, add_generation_prompt=True) for e in examples]
    encoded = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    print(f"{args.env} {args.args}: {len(examples)} held-out prompts, {args.max_new_tokens} new tokens", flush=True)
    for temperature in map(float, args.temperatures.split(",")):
        torch.manual_seed(0)
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(**encoded, max_new_tokens=args.max_new_tokens, do_sample=temperature > 0,
                                 temperature=temperature or None, top_p=None, top_k=None,
                                 pad_token_id=tokenizer.eos_token_id)
        replies = tokenizer.batch_decode(out[:, encoded["input_ids"].shape[1]:], skip_special_tokens=True)
        rewards = [asyncio.run(env.score(e, r)).reward for e, r in zip(examples, replies)]
        right = sum(rewards)
        print(f"T={temperature}: right {right:.0f}/{len(examples)} = {right / len(examples):.3f}, "
              f"{time.perf_counter() - start:.0f} s", flush=True)
        for example, reply, reward in list(zip(examples, replies, rewards))[: args.show]:
            print(f"    {example.prompt[-1]['content']!r} -> {reply!r} {reward:.0f}", flush=True)


if __name__ == "__main__":
    main()
