"""A scripted policy behind the native protocol: the whole RL path without a real LLM.

`[inference.backend] type = "scripted"` serves, on the same routes a model is served on
(GET /health, POST /generate, POST /update_weights), the feature-deletion scripted agent
(feature_deletion.scripted_agent): for each /generate call it decodes the prompt tokens, finds
the task from the "Task id: ..." line, counts the assistant turns already in the conversation
(occurrences of the chat template's generation prompt, less the one the prompt ends with) and
answers with the script's next step, written as a Hermes `<tool_call>` block
(`messages.render_tool_calls`, what a model without native tool calling writes), tokenised by the
policy's tokenizer and closed by its EOS token. Past the script's end it submits.

Scripts: `gold` (rebuild the feature, run the tests, submit: reward 1), `noop` (submit at once:
reward 0) and `stumbling` (gold, after a missing file, malformed JSON, an unknown tool and an
unclosed block: reward 1, with one error of each kind) — per task through `task_scripts`.

Log-probs: every token gets `logprob` (default 0.0: the script is deterministic, each token has
probability 1 under it). They are what the trainer's importance ratio compares against; with
0.0 the trainer sees its own policy as far off-policy, harmless for a pipeline test.
Weight updates are accepted (a complete version directory is required, as with a model) and only
change the reported `weight_version`. POST /score answers 400: a script has no distribution.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, ClassVar

from composer_prime.configs.inference import ScriptedBackendConfig
from composer_prime.configs.shared import ModelConfig
from composer_prime.inference.backend import Backend, check_prompt
from composer_prime.inference.protocol import Completion, GenerateRequest, GenerateResponse, ScoreRequest, ScoreResponse
from composer_prime.chat import ToolCall, render_tool_calls
from composer_prime.model.load import load_tokenizer
from composer_prime.weights import require_stable

_TASK_ID = re.compile(r"Task id: ([^\n]+)")
SUBMIT = {"tool": "submit", "args": {}}


def stumbling_script(row) -> list[dict[str, Any]]:
    """The gold script after four turns that go wrong, one per error kind a tool loop must survive."""
    from feature_deletion.scripted_agent import gold_script

    return [
        {"tool": "read_file", "args": {"path": "no/such/file.py"}},  # tool_error, recorded by the environment
        {"tool": "read_file", "raw_args": "{not json"},  # malformed_tool_call: arguments are not JSON
        {"tool": "frobnicate", "args": {}},  # malformed_tool_call: unknown tool
        {"text": '<tool_call>{"name": "list_dir", "arguments": {}}'},  # malformed_tool_call: block not closed
        *gold_script(row),
    ]


def scripts() -> dict[str, Any]:
    from feature_deletion.scripted_agent import SCRIPTS

    return {**SCRIPTS, "stumbling": stumbling_script}


def step_text(step: dict[str, Any]) -> str:
    """A script step as the text a Hermes-style model would write."""
    if "tool" not in step:
        return step.get("text", "")
    if "raw_args" in step:  # deliberately malformed: written as is
        return f'<tool_call>{{"name": {json.dumps(step["tool"])}, "arguments": {step["raw_args"]}}}</tool_call>'
    prefix = step.get("text", "")
    call = render_tool_calls([ToolCall(name=step["tool"], arguments=json.dumps(step.get("args", {})))])
    return f"{prefix}\n{call}" if prefix else call


class ScriptedBackend(Backend):
    name: ClassVar[str] = "scripted"

    def __init__(self, model: ModelConfig, config: ScriptedBackendConfig):
        from feature_deletion.task import load_rows
        from feature_deletion.taskset import DEFAULT_TASKS

        self.config = config
        self.tokenizer = load_tokenizer(model)
        self.model_name = f"scripted:{config.script}"
        self.weight_version = 0
        rows, _ = load_rows(Path(config.tasks_path) if config.tasks_path else DEFAULT_TASKS)
        available = scripts()
        unknown = sorted({config.script, *config.task_scripts.values()} - set(available))
        if unknown:
            raise ValueError(f"unknown scripts {unknown}; scripts: {sorted(available)}")
        self.scripts = {r.id: available[config.task_scripts.get(r.id, config.script)](r) for r in rows}
        probe = [{"role": "user", "content": "x"}]
        without = self.tokenizer.apply_chat_template(probe, add_generation_prompt=False, tokenize=False)
        with_prompt = self.tokenizer.apply_chat_template(probe, add_generation_prompt=True, tokenize=False)
        self._turn_marker = with_prompt[len(without):]
        if not self._turn_marker:
            raise ValueError("the chat template writes no generation prompt: assistant turns cannot be counted")

    def next_step(self, prompt_token_ids: list[int]) -> dict[str, Any]:
        text = self.tokenizer.decode(prompt_token_ids, skip_special_tokens=False)
        found = _TASK_ID.search(text)
        if found is None or found.group(1).strip() not in self.scripts:
            raise ValueError(f"no script for this conversation (task id {found and found.group(1).strip()!r})")
        script = self.scripts[found.group(1).strip()]
        turn = text.count(self._turn_marker) - 1
        return script[turn] if 0 <= turn < len(script) else SUBMIT

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        check_prompt(request.prompt_token_ids, len(self.tokenizer), None)
        ids = list(self.tokenizer.encode(step_text(self.next_step(request.prompt_token_ids)),
                                         add_special_tokens=False))
        if self.tokenizer.eos_token_id is not None:
            ids.append(self.tokenizer.eos_token_id)
        finish = "stop"
        if len(ids) > request.max_tokens:
            ids, finish = ids[: request.max_tokens], "length"
        completion = Completion(token_ids=ids, logprobs=[self.config.logprob] * len(ids), finish_reason=finish)
        return GenerateResponse(completions=[completion] * request.n, weight_version=self.weight_version)

    async def score(self, request: ScoreRequest) -> ScoreResponse:
        raise ValueError("a scripted policy has no distribution to score")

    async def load_weights(self, path: str, version: int) -> None:
        require_stable(path)
        self.weight_version = version

    async def close(self) -> None:
        pass
