import asyncio
import collections

import pytest
from add_numbers import AddNumbersTaskset
from add_numbers.taskset import AddNumbersConfig, answer_of, describe_error

from composer_prime.configs.rollout import EnvConfig
from composer_prime.errors import UserError
from composer_prime.rollout.envs import load_environment


@pytest.fixture(scope="module")
def env():
    return load_environment(EnvConfig(id="add-numbers"))


def _problems(**fields):
    return [(t.data.a, t.data.b) for t in AddNumbersTaskset(AddNumbersConfig(id="add-numbers", **fields))]


def test_no_held_out_problem_is_a_training_problem_whatever_the_seeds():
    train = set(_problems(split="train", seed=0))
    for seed in (0, 1):
        held_out = _problems(split="eval", seed=seed)
        assert len(held_out) >= 64 and not train & set(held_out)
    # together the splits are every problem once: a two-digit number plus a one-digit one
    assert sorted(train | set(_problems(split="eval"))) == [(a, b) for a in range(10, 100) for b in range(1, 10)]


def test_problems_are_deterministic_and_answered_by_their_reference():
    first = list(AddNumbersTaskset(AddNumbersConfig(split="eval", seed=3, num_examples=50)))
    assert [t.data for t in first] == [t.data for t in AddNumbersTaskset(AddNumbersConfig(split="eval", seed=3,
                                                                                          num_examples=50))]
    assert _problems(split="eval", seed=3, num_examples=50) != _problems(split="eval", seed=4, num_examples=50)
    for task in first:
        assert task.data.prompt == f"What is {task.data.a} + {task.data.b}? Answer with the number only."
        assert answer_of(task.data.answer) == task.data.a + task.data.b


def test_impossible_requests_fail_in_one_line():
    with pytest.raises(UserError, match="holds 111 problems, 112 asked"):
        load_environment(EnvConfig(id="add-numbers", args={"num_examples": 112}))
    with pytest.raises(UserError, match="num_examples"):
        load_environment(EnvConfig(id="add-numbers", args={"num_examples": 0}))


def _score(env, a, b, reply):
    example = next(e for e in env.examples("eval") if (e.task.data.a, e.task.data.b) == (a, b))
    return asyncio.run(env.score(example, reply))


@pytest.mark.parametrize(("reply", "reward"), [
    ("44", 1.0),
    ("37 + 7 = 44", 1.0),                 # the sum worked out: prose and operands before it neither cost nor earn
    ("The answer is 44.", 1.0),
    ("44 or 45", 0.0),                    # hedging: only the last number counts
    ("43, 44, 45", 0.0),
    ("144", 0.0),                         # the sum at the end of a longer number is not the sum
    ("-44", 0.0),                         # a sign changes the number
    ("\u0664\u0664", 0.0),                # another script's digits are not read as 44
    ("4 4", 0.0),
    ("37 + 7", 0.0),                      # the question repeated
    ("", 0.0),
])
def test_the_reward_is_the_verdict_through_the_real_scorer(env, reply, reward):
    score = _score(env, 37, 7, reply)
    assert score.reward == reward and score.metrics == {"exact_match": reward}
    assert (score.feedback is None) == (reward == 1.0)


def test_no_fixed_reply_farms_the_reward(env):
    # The best constant reply (the most common sum) against the held-out split pays no more than that sum's share,
    # and echoing either operand never pays (the sum exceeds both).
    examples = env.examples("eval")
    sums = collections.Counter(e.task.data.a + e.task.data.b for e in examples)
    best = max(sums.values()) / len(examples)
    assert best <= 0.05
    for reply in (str(sums.most_common(1)[0][0]), "50", "99", " ".join(map(str, range(11, 109)))):
        rewards = [asyncio.run(env.score(e, reply)).reward for e in examples]
        assert sum(rewards) / len(rewards) <= best
    for e in examples:
        assert asyncio.run(env.score(e, f"{e.task.data.b} + {e.task.data.a}")).reward == 0.0


def test_feedback_never_gives_the_sum_away():
    for a in range(10, 100):
        for b in range(1, 10):
            assert describe_error(a + b, a, b) is None
            for got in (None, 0, a, a + b - 1, a + b + 1, 10 * (a + b)):
                message = describe_error(got, a, b)
                assert message is not None and str(a + b) not in message.replace(str(got), "")
            assert describe_error(a + b + 3, a, b).startswith(f"{a + b + 3} is not {a} + {b}: it is too large")
            assert describe_error(a + b - 3, a, b).startswith(f"{a + b - 3} is not {a} + {b}: it is too small")


def test_feedback_works_the_carry_exactly_where_the_units_carry():
    # The trained model's typical error (a dropped carry: 57 + 8 -> 55) gets the column that carries, not the sum.
    assert describe_error(55, 57, 8) == "55 is not 57 + 8: it is too small; 7 + 8 = 15, so 1 carries into the tens"
    assert describe_error(55, 57, 8, carry_step=False) == "55 is not 57 + 8: it is too small"
    for a in range(10, 100):
        for b in range(1, 10):
            carries = a % 10 + b >= 10
            assert ("carries into the tens" in describe_error(a + b - 10, a, b)) == carries
            assert ("carries" in describe_error(None, a, b)) is False  # nothing to place a carry in
