"""Which add-numbers hint makes SmolLM2 a better teacher of its own errors (channel 2 of configs/smollm2/composed.toml).

Channel 2's teacher is the policy itself shown a hint before the turn it got wrong. A hint helps only if the
model, reading it, answers better than without it. This takes train-split problems, lets the model answer
them greedily (its real errors), finds each wrong reply's error site as the orchestrator does (`detect_errors`,
first error: a reply cut at the token limit is a `format_violation`, a complete wrong one a `wrong_answer`),
and builds the teacher's context as the orchestrator does (`teacher_messages` with the config's templates).
For `wrong_answer` sites it swaps the environment's feedback for each of these messages:

- direction: "55 is not 57 + 8: it is too small" (add-numbers' feedback without its carry step);
- carry: the environment's feedback, which also works the carrying column where the units carry;
- sum: "the sum is 65": the answer itself, the trivial teacher, for scale.

and prints how often the hinted model's greedy reply is right (the task's verdict), per site kind and, for
complete wrong replies, with and without a carry. Cut replies get the same format hint under every message.

Usage: uv run python benchmarks/smollm2_hints.py --model models/smollm2-135m-instruct [--problems 64] [--threads 1]
"""

from __future__ import annotations

import argparse
import asyncio
import tomllib
from pathlib import Path

import torch
from add_numbers.taskset import answer_of, describe_error
from transformers import AutoModelForCausalLM, AutoTokenizer

from composer_prime.chat import ChatMessage
from composer_prime.configs.hints import TemplateWriterConfig
from composer_prime.configs.rollout import EnvConfig
from composer_prime.hints.context import teacher_messages
from composer_prime.hints.detect import detect_errors
from composer_prime.hints.writer import TemplateHintWriter
from composer_prime.rollout.envs import load_environment

CONFIG = Path(__file__).resolve().parents[1] / "configs/smollm2/composed.toml"
MAX_NEW_TOKENS = 16  # as rl.toml samples


def greedy(model, tokenizer, conversations: list[list[ChatMessage]]) -> list[tuple[str, bool]]:
    """Each conversation's greedy reply and whether it was cut at MAX_NEW_TOKENS (no end of turn)."""
    texts = [tokenizer.apply_chat_template([{"role": m.role, "content": m.content} for m in c], tokenize=False,
                                           add_generation_prompt=True) for c in conversations]
    encoded = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**encoded, max_new_tokens=MAX_NEW_TOKENS, do_sample=False, temperature=None, top_p=None,
                             top_k=None, pad_token_id=tokenizer.eos_token_id)
    new = out[:, encoded["input_ids"].shape[1]:]
    cut = [tokenizer.eos_token_id not in row.tolist() for row in new]
    return list(zip(tokenizer.batch_decode(new, skip_special_tokens=True), cut))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--problems", type=int, default=64, help="train-split problems the model answers first")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--show", type=int, default=4, help="hinted replies printed per message")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    writer_config = tomllib.loads(CONFIG.read_text())["orchestrator"]["hints"].get("writer", {})
    writer = TemplateHintWriter(TemplateWriterConfig.model_validate(writer_config))
    tokenizer = AutoTokenizer.from_pretrained(args.model, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32).eval()
    env = load_environment(EnvConfig(id="add-numbers"))
    examples = env.examples("train")[: args.problems]
    questions = [[ChatMessage(role=m["role"], content=m["content"]) for m in e.prompt] for e in examples]
    sites = []  # (example, conversation with the wrong reply, its first error)
    for example, question, (reply, cut) in zip(examples, questions, greedy(model, tokenizer, questions)):
        score = asyncio.run(env.score(example, reply))
        messages = [*question, ChatMessage(role="assistant", content=reply)]
        errors = detect_errors(messages, truncated=cut, reward=score.reward, wrong_answer_below=1.0,
                               feedback=score.feedback)
        if errors:
            sites.append((example, messages, errors[0]))
    kinds = [error.kind for _, _, error in sites]
    print(f"{args.model}: {len(examples) - len(sites)}/{len(examples)} train problems right greedily; error sites: "
          f"{kinds.count('format_violation')} cut at {MAX_NEW_TOKENS} tokens, {kinds.count('wrong_answer')} wrong",
          flush=True)
    messages_of = {
        "direction": lambda e, m: describe_error(answer_of(m[-1].content), e.task.data.a, e.task.data.b,
                                                 carry_step=False),
        "carry": lambda e, m: describe_error(answer_of(m[-1].content), e.task.data.a, e.task.data.b),
        "sum": lambda e, m: f"the sum is {e.task.data.a + e.task.data.b}",
    }
    print(f"{'message':10s} {'teacher right':>14s} {'cut sites':>10s} {'wrong, carry':>13s} {'wrong, no carry':>16s}")
    for name, message in messages_of.items():
        contexts = []
        for example, messages, error in sites:
            if error.kind == "wrong_answer":
                error = error.model_copy(update={"message": message(example, messages)})
            contexts.append(teacher_messages(messages, error, writer.template(error)))
        replies = [reply for reply, _ in greedy(model, tokenizer, contexts)]
        right = [asyncio.run(env.score(e, reply)).reward == 1 for (e, _, _), reply in zip(sites, replies)]
        cells = []
        for kind, carry in (("format_violation", None), ("wrong_answer", True), ("wrong_answer", False)):
            chosen = [ok for ok, (e, _, error) in zip(right, sites) if error.kind == kind
                      and carry in (None, e.task.data.a % 10 + e.task.data.b >= 10)]
            cells.append(f"{sum(chosen)}/{len(chosen)}")
        print(f"{name:10s} {sum(right):>8d}/{len(right):<5d} {cells[0]:>10s} {cells[1]:>13s} {cells[2]:>16s}",
              flush=True)
        shown = [(c, r) for c, r, (_, _, e) in zip(contexts, replies, sites) if e.kind == "wrong_answer"]
        for context, reply in shown[: args.show]:
            print(f"    {context[-1].content!r} -> {reply!r}", flush=True)


if __name__ == "__main__":
    main()
