"""Environments: verifiers v1 tasksets from `environments/`, loaded by id.

INTERFACE (implementation pending): the orchestrator, eval and sft code against this.

    @dataclass(frozen=True)
    class Example:
        id: str                      # stable across runs, e.g. "eval/17"
        prompt: list[dict[str, str]] # chat messages [{"role": ..., "content": ...}]
        answer: str | None           # reference answer (SFT demonstrations), when the env has one
        task: object                 # the verifiers Task behind it

    @dataclass(frozen=True)
    class Score:
        reward: float                # in [0, 1]
        metrics: dict[str, float]

    class Environment:
        id: str
        def examples(self, split: Literal["train", "eval"]) -> list[Example]
        async def score(self, example: Example, completion: str) -> Score

    def load_environment(config: EnvConfig) -> Environment   # UserError on an unknown id
"""
