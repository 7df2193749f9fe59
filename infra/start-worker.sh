#!/usr/bin/env bash
# Start a volunteer worker pod with one command:
#   RUN_URL=https://run.example.org JOIN_TOKEN=... RUN_PUBLIC_KEY=<hex> ./infra/start-worker.sh [--gpu]
# Needs docker (and the NVIDIA container toolkit for --gpu). The worker's key and downloaded
# weights live in the volume `composer-worker-<id>`: keep it, and a restart resumes where it stopped.
# A worker holds no key to the run's store: it uploads through grants from the run's coordinator, and trusts
# only what the run key (RUN_PUBLIC_KEY, from the run's operators) signed.
set -euo pipefail
: "${RUN_URL:?set RUN_URL to the run's coordinator URL}"
: "${JOIN_TOKEN:?set JOIN_TOKEN to the run's join token}"
: "${RUN_PUBLIC_KEY:?set RUN_PUBLIC_KEY to the run's public key (hex)}"
WORKER_NAME="${WORKER_NAME:-$(hostname | tr -c 'A-Za-z0-9_\n-' '-' | cut -c1-41)}"
IMAGE="${IMAGE:-composer-prime-worker:0.1.0}"
GPU_ARGS=() EXTRA_CONFIG=() BUILD_ARGS=()
if [[ "${1:-}" == "--gpu" ]]; then
  GPU_ARGS=(--gpus all); EXTRA_CONFIG=(@ configs/worker/gpu.toml); BUILD_ARGS=(--build-arg EXTRAS=--extra=vllm)
fi
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
docker build -q -f "$ROOT/infra/Dockerfile.base" -t composer-prime-base:0.1.0 "$ROOT" >/dev/null
docker build -q -f "$ROOT/infra/Dockerfile.worker" "${BUILD_ARGS[@]}" -t "$IMAGE" "$ROOT" >/dev/null
exec docker run --rm --name "composer-worker-$WORKER_NAME" "${GPU_ARGS[@]}" \
  -v "composer-worker-$WORKER_NAME:/state" --restart=no \
  "$IMAGE" "${EXTRA_CONFIG[@]}" --run-url "$RUN_URL" --join-token "$JOIN_TOKEN" --name "$WORKER_NAME" \
  --run-public-key "$RUN_PUBLIC_KEY"
