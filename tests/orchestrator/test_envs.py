import asyncio
import re
import textwrap

import pytest

from composer_prime.errors import UserError
from composer_prime.configs.rollout import EnvConfig
from composer_prime.rollout.envs import installed_environments, load_environment

SMALL = {"num_examples": 50}


@pytest.fixture(scope="module")
def env():
    return load_environment(EnvConfig(id="reverse-text", args=SMALL))


def test_examples_are_chat_prompts_with_reference_answers(env):
    train, held_out = env.examples("train"), env.examples("eval")
    assert env.id == "reverse-text" and len(train) == len(held_out) == 50
    assert [e.id for e in held_out[:2]] == ["eval/0", "eval/1"] and train[0].id == "train/0"
    first = train[0]
    assert [m["role"] for m in first.prompt] == ["system", "user"]
    assert first.answer.split() == first.prompt[1]["content"].split()[::-1]
    assert first.task.data.answer == first.answer
    assert not {e.prompt[1]["content"] for e in train} & {e.prompt[1]["content"] for e in held_out}


def test_scores_with_partial_credit(env):
    example = env.examples("eval")[0]
    letters = example.answer.split()

    def score(text):
        return asyncio.run(env.score(example, text))

    exact = score(example.answer)
    assert exact.reward == 1.0 and exact.metrics == {"lcs_credit": 1.0, "exact_match": 1.0}
    assert score("".join(letters)).reward == 1.0  # whitespace carries no meaning
    partial = score(" ".join(letters[:-1]))
    assert 0.0 < partial.reward < 1.0 and partial.metrics["exact_match"] == 0.0
    assert partial.reward == partial.metrics["lcs_credit"]
    assert score("").reward == 0.0


def test_reward_weights_come_from_the_verifiers_task():
    # A verifiers TaskConfig re-weights the task's own @vf.reward: proof the task scores, not a copy of it.
    args = {**SMALL, "task": {"rewards": {"lcs_credit": {"weight": 0.5}}}}
    env = load_environment(EnvConfig(id="reverse-text", args=args))
    example = env.examples("train")[0]
    score = asyncio.run(env.score(example, example.answer))
    assert score.reward == 0.5 and score.metrics["lcs_credit"] == 1.0


def test_concurrent_scoring_gives_each_completion_its_own_verdict(env):
    # The orchestrator scores a whole step's rollouts at once: 1000 concurrent calls must not mix up their
    # examples (each verdict names its own expected answer) nor differ from scoring one at a time.
    examples = env.examples("train")
    completions = [examples[i % 50].answer if i % 3 == 0 else "a b c d" for i in range(1000)]

    async def score_all():
        return await asyncio.gather(*(env.score(examples[i % 50], c) for i, c in enumerate(completions)))

    scores = asyncio.run(score_all())
    assert [s.metrics["exact_match"] for s in scores] == [1.0 if i % 3 == 0 else 0.0 for i in range(1000)]
    for i in (1, 2, 4, 998):
        assert repr(examples[i % 50].answer) in scores[i].feedback
        assert scores[i] == asyncio.run(env.score(examples[i % 50], completions[i]))


def test_any_v1_taskset_package_loads(tmp_path, monkeypatch):
    # A second, real taskset package with no split field and message-list prompts.
    package = tmp_path / "echo_words"
    package.mkdir()
    (package / "__init__.py").write_text(textwrap.dedent('''
        import verifiers.v1 as vf

        class EchoTask(vf.Task[vf.TaskData]):
            @vf.reward
            async def echoed(self, trace: vf.Trace) -> float:
                return float(trace.last_reply == self.data.prompt_text)

        class EchoTaskset(vf.Taskset[EchoTask, vf.TasksetConfig]):
            def load(self):
                return [EchoTask(vf.TaskData(prompt=[{"role": "user", "content": w}])) for w in ("hi", "yo")]

        __all__ = ["EchoTaskset"]
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    env = load_environment(EnvConfig(id="echo-words"))
    train, held_out = env.examples("train"), env.examples("eval")
    assert [e.prompt for e in train] == [[{"role": "user", "content": "hi"}], [{"role": "user", "content": "yo"}]]
    assert [e.id for e in held_out] == ["eval/0", "eval/1"] and train[0].answer is None
    assert asyncio.run(env.score(train[1], "yo")).reward == 1.0
    assert asyncio.run(env.score(train[1], "hi")).reward == 0.0


def test_unknown_environment_is_one_line_naming_it_and_the_installed_ones():
    with pytest.raises(UserError) as err:
        load_environment(EnvConfig(id="revrse-text"))
    message = str(err.value)
    assert "'revrse-text'" in message and "reverse-text" in message and "\n" not in message
    assert "reverse-text" in installed_environments() and "composer-prime" not in installed_environments()


@pytest.mark.parametrize(
    "args, expected",
    [
        ({"num_exampls": 5}, "num_exampls"),
        ({"min_length": 6, "max_length": 4}, "min_length (6) exceeds max_length (4)"),
        ({"split": "eval"}, "env.args.split"),
        ({"num_examples": 40, "min_length": 1, "max_length": 1}, "found only"),
    ],
)
def test_bad_args_are_one_line(args, expected):
    with pytest.raises(UserError, match=re.escape(expected)) as err:
        load_environment(EnvConfig(id="reverse-text", args=args))
    assert "\n" not in str(err.value)


def test_a_package_that_is_not_a_taskset_is_rejected():
    with pytest.raises(UserError, match="not a verifiers v1 taskset"):
        load_environment(EnvConfig(id="composer-prime"))
