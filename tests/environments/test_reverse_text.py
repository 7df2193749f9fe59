import subprocess
import zipfile
from pathlib import Path

import pytest
from reverse_text import ReverseTextTaskset
from reverse_text.taskset import ReverseTextConfig

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
    assert "Requires-Dist: verifiers>=0.4.0" in metadata
    assert "# reverse-text" in metadata  # the README travels as the long description
