import asyncio
import itertools
import random

import pytest
from sort_numbers import SortNumbersTaskset
from sort_numbers.taskset import SortNumbersConfig, answer_of, describe_error

from composer_prime.configs.rollout import EnvConfig
from composer_prime.errors import UserError
from composer_prime.rollout.envs import load_environment


@pytest.fixture(scope="module")
def env():
    return load_environment(EnvConfig(id="sort-numbers"))


def _tasks(**fields):
    return list(SortNumbersTaskset(SortNumbersConfig(id="sort-numbers", **fields)))


@pytest.mark.parametrize("lengths", [(3, 3), (2, 3)])
def test_no_held_out_answer_is_a_training_answer_whatever_the_seeds(lengths):
    lo, hi = lengths
    train = {t.data.answer for t in _tasks(split="train", seed=0, min_length=lo, max_length=hi)}
    for seed in (0, 1):
        held_out = _tasks(split="eval", seed=seed, min_length=lo, max_length=hi)
        assert held_out and not train & {t.data.answer for t in held_out}
    # together the splits are every unsorted list of those lengths, once each
    every = [d for n in range(lo, hi + 1) for d in itertools.product(range(10), repeat=n) if list(d) != sorted(d)]
    both = [tuple(t.data.digits) for split in ("train", "eval") for t in _tasks(split=split, min_length=lo, max_length=hi)]
    assert sorted(both) == sorted(every)


def test_tasks_are_deterministic_never_sorted_and_answered_by_their_reference():
    first = _tasks(split="eval", seed=3, num_examples=50)
    assert [t.data for t in first] == [t.data for t in _tasks(split="eval", seed=3, num_examples=50)]
    assert [t.data.digits for t in first] != [t.data.digits for t in _tasks(split="eval", seed=4, num_examples=50)]
    for task in first:
        assert task.data.digits != sorted(task.data.digits)
        assert answer_of(task.data.prompt, 3) == task.data.digits
        assert answer_of(task.data.answer, 3) == sorted(task.data.digits)


def test_impossible_requests_fail_in_one_line():
    with pytest.raises(ValueError, match="min_length"):
        SortNumbersConfig(min_length=4, max_length=3)
    with pytest.raises(UserError, match="holds 104 lists, 105 asked"):
        load_environment(EnvConfig(id="sort-numbers", args={"num_examples": 105}))


async def _score_all(env, examples, reply):
    return [await env.score(e, reply) for e in examples]


def _score(env, digits, reply):
    example = next(e for e in env.examples("eval") if e.task.data.digits == digits)
    return asyncio.run(env.score(example, reply))


@pytest.mark.parametrize(("reply", "reward"), [
    ("1, 3, 7", 1.0),
    ("Sorted from smallest to largest: 1, 3, 7.", 1.0),   # prose around the numbers neither costs nor earns
    ("The list 7, 1, 3 sorted is 1 3 7", 1.0),           # the verdict reads the last three numbers
    ("7, 1, 3", 0.0),                                    # the question repeated
    ("1, 3, 7, 9", 0.0),                                 # an extra number at the end
    ("1, 7, 3", 0.0),
    ("137", 0.0),                                        # digits run together are one number
    ("-1, 3, 7", 0.0),                                   # a sign changes the number
    ("\u0661, 3, 7", 0.0),                               # another script's digit is not read as 1
    ("0 1 2 3 4 5 6 7 8 9", 0.0),                        # every digit, hoping the tail fits: it does not here
    ("", 0.0),
])
def test_the_reward_is_the_verdict_through_the_real_scorer(env, reply, reward):
    digits = next(e.task.data.digits for e in env.examples("eval") if sorted(e.task.data.digits) == [1, 3, 7])
    score = _score(env, digits, reply)
    assert score.reward == reward and score.metrics == {"exact_match": reward}
    assert (score.feedback is None) == (reward == 1.0)


def test_no_fixed_reply_farms_the_reward(env):
    # The best constant reply (the most common sorted answer) against the held-out split: no better than one
    # multiset of digits in the split, whatever it is.
    answers = [sorted(e.task.data.digits) for e in env.examples("eval")]
    best = max(answers.count(a) for a in answers) / len(answers)
    assert best <= 0.06
    for reply in ("0, 1, 2", "7, 8, 9", "1, 2, 3", "0 1 2 3 4 5 6 7 8 9"):
        scores = asyncio.run(_score_all(env, env.examples("eval"), reply))
        rewards = [s.reward for s in scores]
        assert sum(rewards) / len(rewards) <= best


def _reference_error(got, expected):
    """An independent statement of the first mistake: compare as multisets, then find the first descent."""
    from collections import Counter

    if got == expected:
        return None
    if not got:
        return "empty"
    missing, extra = Counter(expected) - Counter(got), Counter(got) - Counter(expected)
    if missing or extra:
        first = min(set(missing) | set(extra))
        return ("missing", first) if first in missing else ("extra", first)
    return ("order",) + next((a, b) for a, b in zip(got, got[1:]) if a > b)


def test_feedback_names_the_first_mistake_and_never_the_answer():
    rng = random.Random(0)
    for _ in range(2000):
        expected = sorted(rng.choices(range(10), k=rng.randint(2, 5)))
        got = rng.choice([rng.sample(expected, len(expected)), rng.choices(range(10), k=rng.randint(0, 6))])
        message, reference = describe_error(got, expected), _reference_error(got, expected)
        if reference is None:
            assert message is None
            continue
        if reference == "empty":
            assert message == f"the reply has no list of {len(expected)} numbers"
        elif reference[0] == "missing":
            assert message.endswith(f"is missing a {reference[1]}")
        elif reference[0] == "extra":
            assert message.endswith(("which is not in the list", f"has more {reference[1]}s than the list"))
            assert f"has a {reference[1]}," in message or f"has more {reference[1]}s" in message
        else:
            assert message.endswith(f"{reference[1]} comes before {reference[2]}, but {reference[2]} is smaller")
        # the hint quotes the reply, never the sorted list (unless the reply itself wrote it)
        if len(expected) > 2 and got != expected:
            assert ", ".join(map(str, expected)) not in message.replace(", ".join(map(str, got)), "")
