#!/usr/bin/env bash
# The GPU path end to end, on a machine with a CUDA GPU: bash benchmarks/gpu/run.sh [RESULTS_DIR]
#
#   1. uv sync --extra vllm
#   2. the GPU tests: pytest -m gpu
#   3. the quickstart with the vLLM backend and the CUDA trainer (configs/quickstart/gpu.toml)
#   4. trainer memory and throughput on the Qwen3-0.6B-shaped model, built locally with random weights
#      (benchmarks/trainer_memory.py: plain, activation checkpointing, LoRA; bf16 compute, fp32 masters)
#
# Every figure goes to RESULTS_DIR/results.md (default outputs/gpu), the file the GPU section of
# benchmarks/README.md is filled from; each step's full output sits beside it. Without CUDA it stops
# at once with one line. GPU_RUN_DRY=1 prints the steps' commands instead of running them (no CUDA
# needed): tests/benchmarks/test_gpu_run.py checks each of them on CPU.
set -euo pipefail
cd "$(dirname "$0")/../.."

out="${1:-outputs/gpu}"
results="$out/results.md"

steps() {
  echo "uv sync --extra vllm"
  echo "uv run --no-sync pytest -m gpu -q -p no:cacheprovider"
  echo "uv run --no-sync rl @ configs/quickstart/gpu.toml --output-dir $out/quickstart"
  echo "uv run --no-sync python benchmarks/trainer_memory.py --device cuda --dtype bfloat16 --tokens 8192 --reps 5 --model-dir $out/qwen3-0.6b-random --out $out/trainer_memory.json"
}

if [[ "${GPU_RUN_DRY:-0}" == 1 ]]; then
  steps
  exit 0
fi

if ! uv run --no-sync python -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "error: no CUDA device (torch.cuda.is_available() is False): benchmarks/gpu/run.sh needs a GPU" >&2
  exit 1
fi

mkdir -p "$out"
{
  echo "# GPU run $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD)"
  echo
  echo "device: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)"
  echo
} > "$results"

n=0
while IFS= read -r command; do
  n=$((n + 1))
  log="$out/step_$n.log"
  echo "== step $n: $command" >&2
  start=$(date +%s)
  status=0
  bash -c "$command" < /dev/null > "$log" 2>&1 || status=$?
  wall=$(( $(date +%s) - start ))
  {
    echo "## step $n: \`$command\`"
    echo
    echo "exit $status, wall ${wall} s, full output: \`$log\`"
    echo
    echo '```'
    case "$n" in
      2) tail -n 3 "$log" ;;   # pytest's summary: passed / failed / skipped counts
      3) tail -n 5 "$log" ;;   # rl's last lines: eval exact match before and after, wall
      4) grep -E '^(machine|model|\||trainer step)' "$log" || tail -n 5 "$log" ;;
      *) tail -n 2 "$log" ;;
    esac
    echo '```'
    echo
  } >> "$results"
  [[ $status == 0 ]] || echo "step $n failed (exit $status): see $log" >&2
done < <(steps)

echo "figures written to $results" >&2
