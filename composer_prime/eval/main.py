"""`uv run eval --model.path DIR`: mean reward and pass@k of a model on an environment's eval split.
A tool environment (feature-deletion) is evaluated with multi-turn rollouts, as rl trains and evaluates it.

Starts its own inference server on a free port, runs the held-out evaluation an rl run uses
(composer_prime.heldout.evaluate), prints one line, appends it to <output_dir>/metrics.jsonl
(process "eval") when output_dir is set, and stops the server whatever happens.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from pathlib import Path

from composer_prime.cli import run_cli
from composer_prime.configs.shared import LogConfig
from composer_prime.configs.eval import EvalCommandConfig
from composer_prime.configs.inference import InferenceConfig
from composer_prime.heldout.evaluate import EvalResult, evaluate, held_out_examples
from composer_prime.eval.server import inference_server, wait_ready
from composer_prime.inference.client import InferenceClient
from composer_prime.model.load import load_tokenizer
from composer_prime.configs.rollout import SamplingConfig
from composer_prime.rollout.envs import load_environment
from composer_prime.utils.metrics import MetricsLogger
from composer_prime.utils.net import check_port_free, free_port


def run_eval(config: EvalCommandConfig, work_dir: Path) -> EvalResult:
    # Everything a user can get wrong is checked before the server costs a model load.
    env = load_environment(config.env)
    tokenizer = load_tokenizer(config.model)
    examples = held_out_examples(env, config.num_examples)
    if config.port is not None:
        check_port_free("127.0.0.1", config.port)
    port = config.port or free_port()
    server_config = InferenceConfig(model=config.model, host="127.0.0.1", port=port, backend=config.backend,
                                    seed=config.seed, log=LogConfig(level=config.log.level, progress=False))

    async def _run(child) -> EvalResult:
        async with InferenceClient(f"http://127.0.0.1:{port}") as client:
            await wait_ready(client, child, config.startup_timeout_s)
            sampling = SamplingConfig(temperature=config.temperature, max_tokens=config.max_tokens)
            return await evaluate(client, env, tokenizer, examples, sampling, k=config.k, samples_per_prompt=config.n,
                                  success_metric=config.success_metric, pass_threshold=config.pass_threshold,
                                  seed=config.seed, max_concurrent=config.max_concurrent,
                                  max_turns=config.max_turns, seq_len=config.seq_len)

    with inference_server(server_config, work_dir) as child:
        return asyncio.run(_run(child))


def main(config: EvalCommandConfig) -> EvalResult:
    logging.basicConfig(level=config.log.level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    if config.output_dir is not None:
        result = run_eval(config, config.output_dir / "logs" / "eval")
        metrics = MetricsLogger(config.output_dir, "eval", config.log.wandb_project, config.model_dump(mode="json"))
        metrics.log(0, {**result.metrics(), "eval/model": config.model.path, "eval/env": config.env.id})
        metrics.close()
    else:
        with tempfile.TemporaryDirectory(prefix="composer-prime-eval-") as tmp:
            result = run_eval(config, Path(tmp))
    print(f"{config.env.id} eval of {config.model.path}: {result.summary()}", flush=True)
    return result


def cli() -> None:
    run_cli(EvalCommandConfig, main)


if __name__ == "__main__":
    cli()
