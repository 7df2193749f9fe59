"""`uv run rl @ configs/quickstart/rl.toml`: inference, orchestrator and trainer as one run.

`rl` checks what it can before starting anything (model, tokenizer, environment, port, where the
GPUs go: rl/placement.py), writes each process's resolved config to `<output>/configs/`, starts
inference (with `inference_python` when given) and waits until it answers, then the orchestrator
and the trainer (through torchrun when num_train_processes > 1), each seeing only its own GPUs;
draws one progress line from
the shared metrics.jsonl, and stops everything as soon as one process fails. Rerunning the
same command resumes: the trainer from its newest checkpoint, the orchestrator from the
newest complete batch on disk.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path

import httpx
from rich.console import Console

from composer_prime.cli import run_cli
from composer_prime.configs.shared import write_config
from composer_prime.errors import UserError
from composer_prime.heldout.headline import headline
from composer_prime.inference.protocol import HealthResponse
from composer_prime.rl.config import RLConfig
from composer_prime.rl.placement import Placement, needs, place, trainer_fraction
from composer_prime.utils.gpus import cuda_problem
from composer_prime.utils.metrics import MetricsFollower, read_metrics
from composer_prime.utils.net import check_port_free, free_port
from composer_prime.utils.processes import Child, spawn, stop
from composer_prime.utils.progress import step_progress

console = Console(stderr=True)


def preflight(config: RLConfig) -> Placement | None:
    """Fail fast, before any process exists, on the mistakes users make most; returns where the GPUs go."""
    if config.inference_python is not None and not Path(config.inference_python).is_file():
        raise UserError(f"inference_python not found: {config.inference_python}")
    import torch

    from composer_prime.heldout.evaluate import held_out_examples
    from composer_prime.model.load import load_tokenizer
    from composer_prime.rollout.envs import load_environment

    load_tokenizer(config.model)
    env = load_environment(config.orchestrator.env)
    if config.orchestrator.eval.num_examples:
        held_out_examples(env, config.orchestrator.eval.num_examples)  # an empty eval split, before any process
    if config.start_inference:
        check_port_free(config.inference.host, config.inference.port)
    else:
        check_running_inference(config)
    # rl itself runs no CUDA work: asking torch here is safe (its children are new processes, not forks).
    num_gpus = torch.cuda.device_count()
    if num_gpus == 0 and any(needs(config)) and (problem := cuda_problem()) is not None:
        raise UserError(f'{problem} (or set model.device = "cpu" to run on the CPU)')
    placement = place(config, num_gpus)
    if placement is not None and (fraction := trainer_fraction(config, placement)) is not None:
        config.trainer.gpu_memory_fraction = fraction
    return placement


def _same_model(served: str, path: str) -> bool:
    return served == path or (Path(served).exists() and Path(served).resolve() == Path(path).resolve())


def check_running_inference(config: RLConfig) -> None:
    """The server a run without its own inference uses: up, on this run's model, at the base weights (version 0).

    A server on another version holds weights no trainer step of this run produced, so every rollout it sampled
    would be off-policy by an unknown amount: refused, never assumed."""
    url = f"http://{config.inference.host}:{config.inference.port}"
    try:
        health = HealthResponse.model_validate(httpx.get(f"{url}/health", timeout=10).raise_for_status().json())
    except (httpx.HTTPError, ValueError) as exc:
        raise UserError(f"start_inference = false, but no inference server answers at {url}: {exc}") from None
    if not _same_model(health.model, str(config.model.path)):
        raise UserError(f"the inference server at {url} serves {health.model}, not model.path = {config.model.path}")
    if health.weight_version != 0:
        raise UserError(f"the inference server at {url} serves weight version {health.weight_version}; a run starts "
                        "from the base weights (version 0): restart it or load them back as version 0")


def commands(config: RLConfig, config_dir: Path) -> dict[str, list[str]]:
    py = sys.executable
    trainer_cfg = str(write_config(config.trainer, config_dir / "trainer.toml"))
    trainer = [py, "-m", "composer_prime.trainer.main", "@", trainer_cfg]
    if config.num_train_processes > 1:
        # torchrun in front of the same module: it runs one copy per rank
        trainer[1:1] = ["-m", "torch.distributed.run", "--nproc-per-node", str(config.num_train_processes),
                        "--master-addr", "127.0.0.1", "--master-port", str(free_port())]
    return {
        "inference": [config.inference_python or py, "-m", "composer_prime.inference.main", "@",
                      str(write_config(config.inference, config_dir / "inference.toml"))],
        "orchestrator": [py, "-m", "composer_prime.orchestrator.main", "@",
                         str(write_config(config.orchestrator, config_dir / "orchestrator.toml"))],
        "trainer": trainer,
    }


class _ProgressInfo:
    """The newest trainer step, loss and train reward, updated from new metrics records only."""

    def __init__(self, output_dir: Path):
        self.follower = MetricsFollower(output_dir)
        self.step, self.loss, self.reward = 0, "loss -", "reward -"

    def update(self) -> tuple[int, str]:
        for record in self.follower.new_records():
            if record["process"] == "trainer" and "loss" in record:
                self.step, self.loss = record["step"], f"loss {record['loss']:+.4f}"
            elif record["process"] == "orchestrator" and "reward/mean" in record:
                self.reward = f"reward {record['reward/mean']:.3f}"
        return self.step, f"{self.reward}  {self.loss}"


def supervise(config: RLConfig, children: dict[str, Child]) -> None:
    """Wait until trainer and orchestrator finish; stop everything if any process fails."""
    workers = [children["orchestrator"], children["trainer"]]
    with step_progress("rl", console, config.log.progress, config.log.progress_interval_s) as progress:
        task = progress.add_task("steps", total=config.max_steps, info="starting")
        info = _ProgressInfo(config.output_dir)
        while True:
            # Read metrics before polling: a worker writes its last record before it exits, so the final
            # progress line (the one kept in logs that are not a terminal) shows the finished state.
            step, text = info.update()
            progress.update(task, completed=step, info=text)
            for child in children.values():
                code = child.poll()
                if code not in (None, 0) or (child.name == "inference" and code is not None):
                    raise UserError(f"{child.name} exited with code {code}: {child.error_line()} "
                                    f"(log: {child.log_path})")
            if all(w.poll() == 0 for w in workers):
                return
            time.sleep(0.5)


def summarize(config: RLConfig) -> None:
    evals = [r for r in read_metrics(config.output_dir, "orchestrator") if "eval/solved_delta" in r]
    if evals:
        for line in headline(evals[-1]):
            style = "bold yellow" if line.startswith("warning") else None
            console.print(line, style=style, highlight=False, soft_wrap=True)  # one line each, even in a log file
    if config.plot:
        from composer_prime.utils.plot import plot_run

        console.print(f"plot: {plot_run(config.output_dir)}")


def wait_for_inference(config: RLConfig, child: Child) -> None:
    """Until inference answers /health: the trainer starts after it, so that on a shared GPU vLLM sizes its
    KV cache before the trainer holds any memory, and a server that cannot start stops the run at once."""
    url = f"http://{config.inference.host}:{config.inference.port}/health"
    # stdout: on stderr a server that cannot start must leave one line, the error (README: bad input, one line)
    print(f"waiting for inference at {url}", flush=True)
    while True:
        if (code := child.poll()) is not None:
            raise UserError(f"inference exited with code {code}: {child.error_line()} (log: {child.log_path})")
        try:
            if httpx.get(url, timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)


def main(config: RLConfig) -> None:
    placement = preflight(config)
    config_dir = config.output_dir / "configs"
    write_config(config, config_dir / "rl.toml")
    children: dict[str, Child] = {}

    def _terminate(signum, _frame):
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, _terminate)
    try:
        argvs = commands(config, config_dir)
        for name in ("inference", "orchestrator", "trainer") if config.start_inference else ("orchestrator", "trainer"):
            env = placement.env(name) if placement is not None else None
            children[name] = spawn(name, argvs[name], config.output_dir / "logs", env=env)
            if name == "inference":
                wait_for_inference(config, children[name])
        supervise(config, children)
    finally:
        stop(list(children.values()))
    summarize(config)


def cli() -> None:
    run_cli(RLConfig, main)


if __name__ == "__main__":
    cli()
