import random
import string
import subprocess
import zipfile
from pathlib import Path

import pytest
from reverse_text import ReverseTextTaskset
from reverse_text.taskset import ReverseTextConfig, credit, lcs_length

PACKAGE = Path(__file__).parents[2] / "environments" / "reverse_text"


def _tasks(**fields):
    return list(ReverseTextTaskset(ReverseTextConfig(id="reverse-text", **fields)))


@pytest.mark.parametrize("seed, lengths", [(0, (3, 8)), (1, (3, 8)), (7, (2, 3))])
def test_eval_strings_are_never_train_strings(seed, lengths):
    lo, hi = lengths
    train = {t.data.prompt for t in _tasks(split="train", num_examples=400, seed=seed, min_length=lo, max_length=hi)}
    # Eval with other seeds too: disjointness must not hinge on sharing one.
    for eval_seed in (seed, seed + 1):
        held_out = _tasks(split="eval", num_examples=60, seed=eval_seed, min_length=lo, max_length=hi)
        assert len(held_out) == 60 and not train & {t.data.prompt for t in held_out}


def test_tasks_are_deterministic_distinct_and_in_range():
    fields = dict(split="eval", num_examples=100, min_length=4, max_length=6)
    first = _tasks(seed=3, **fields)
    assert [t.data for t in first] == [t.data for t in _tasks(seed=3, **fields)]
    assert [t.data.prompt for t in first] != [t.data.prompt for t in _tasks(seed=4, **fields)]
    prompts = [t.data.prompt for t in first]
    assert len(set(prompts)) == 100
    for task in first:
        letters = task.data.prompt.split()
        assert 4 <= len(letters) <= 6 and all(len(c) == 1 and c.islower() for c in letters)
        assert task.data.answer.split() == letters[::-1]
        assert task.data.system_prompt


def test_impossible_requests_fail_with_a_reason():
    with pytest.raises(ValueError, match="min_length"):
        ReverseTextConfig(min_length=5, max_length=2)
    with pytest.raises(ValueError, match="found only"):
        _tasks(num_examples=30, min_length=1, max_length=1)  # 26 one-letter strings, some held out


@pytest.mark.slow
def test_builds_a_hub_ready_wheel(tmp_path):
    command = ["uv", "build", "--wheel", "--out-dir", str(tmp_path), str(PACKAGE)]
    subprocess.run(command, check=True, capture_output=True)
    (wheel,) = tmp_path.glob("reverse_text-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        metadata = zf.read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "reverse_text/__init__.py" in names and "reverse_text/taskset.py" in names
    assert "Requires-Dist: verifiers<0.5,>=0.4.0" in metadata
    assert "# reverse-text" in metadata  # the README travels as the long description


def _brute_lcs(a: str, b: str) -> int:
    """Longest common subsequence by trying every subsequence of a: an independent reference for short strings."""
    from itertools import combinations

    def is_subsequence(sub, s):
        it = iter(s)
        return all(c in it for c in sub)

    return max((n for n in range(len(a) + 1) for sub in combinations(a, n) if is_subsequence(sub, b)), default=0)


def test_lcs_matches_brute_force():
    rng = random.Random(0)
    for _ in range(300):
        a = "".join(rng.choices("abcd", k=rng.randint(0, 7)))
        b = "".join(rng.choices("abcd", k=rng.randint(0, 7)))
        assert lcs_length(a, b) == _brute_lcs(a, b), (a, b)


@pytest.mark.parametrize("reply, expected", [
    ("b x m", 1.0),        # complete and correct: the only reply worth 1
    ("bxm", 1.0),          # whitespace carries no meaning
    ("b x", 2 / 3),        # stopped early with 2 letters right: no more than ...
    ("b x q", 2 / 3),      # ... a complete attempt with 2 letters right
    ("q x m", 2 / 3),
    ("b", 1 / 3),
    ("b x m m", 3 / 4),    # rambling past the target costs
    ("m x b", 1 / 3),      # the prompt echoed back: one letter in order
    ("", 0.0),
])
def test_credit_on_hand_written_replies(reply, expected):
    assert credit(reply, "b x m") == pytest.approx(expected, abs=1e-12)


def test_credit_never_pays_more_for_stopping_early():
    # The property the training reward must have (taskset docstring): no reply shorter than the target scores
    # more than any of its continuations up to the target's length, and only the correct answer scores 1.
    rng = random.Random(1)
    for _ in range(500):
        target = "".join(rng.choices("abcde", k=rng.randint(1, 8)))
        reply = "".join(rng.choices("abcde", k=rng.randint(0, len(target))))
        for cut in range(len(reply)):
            assert credit(reply[:cut], target) <= credit(reply, target) + 1e-12
        assert (credit(reply, target) == 1.0) == (reply == target)


def _expected_reward(policy, reward, targets, samples=200, seed=0):
    rng = random.Random(seed)
    return sum(reward(policy(t, rng), t) for t in targets for _ in range(samples)) / (len(targets) * samples)


def test_a_policy_that_stops_early_is_not_preferred():
    # Two hand-made policies of the same correctness (one letter of the target missed): one stops one letter
    # short, the other answers in full with one letter wrong. difflib's ratio, the old reward, preferred stopping
    # early (what RL learned on the quickstart); the new reward must not.
    from difflib import SequenceMatcher

    targets = ["".join(random.Random(i).choices(string.ascii_lowercase, k=n)) for i, n in enumerate([3, 4, 5, 6, 7, 8] * 5)]

    def stops_early(target, rng):
        return target[:-1]

    def complete_one_wrong(target, rng):
        i = rng.randrange(len(target))
        wrong = rng.choice([c for c in string.ascii_lowercase if c != target[i]])
        return target[:i] + wrong + target[i + 1:]

    def ratio(reply, target):
        return SequenceMatcher(None, reply, target).ratio()

    assert _expected_reward(stops_early, ratio, targets) > _expected_reward(complete_one_wrong, ratio, targets)
    early, complete = (_expected_reward(p, credit, targets) for p in (stops_early, complete_one_wrong))
    assert early <= complete + 1e-12
    assert _expected_reward(lambda t, rng: t, credit, targets) == 1.0 > complete
