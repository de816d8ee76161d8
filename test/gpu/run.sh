#!/usr/bin/env bash
# The benchmarks on a machine with a real GPU: WebGPU through the NVIDIA driver's Vulkan ICD, and
# CUDA where onnxruntime-node's CUDA 12 provider can be installed. Prepared for such a machine;
# it has not been run on one yet — the development and CI machines have no GPU (there,
# `test/gpu/run.sh --smoke` runs it end to end on Mesa lavapipe with tiny shapes).
#
#   test/gpu/run.sh [--smoke] [--pairs N]
#
# Needs: Linux x64, Node >= 20.18, network access to the npm registry (and to NuGet for
# onnxruntime's CUDA binaries), the NVIDIA driver (nvidia-smi) with its Vulkan ICD
# (libnvidia-gl / nvidia-vulkan-icd; `vulkaninfo --summary` should list the GPU). For CUDA also
# CUDA 12 and cuDNN 9 libraries on LD_LIBRARY_PATH. Writes test-output/gpu/{env.txt,results.md,results.json};
# paste results.md into the README's GPU section.
set -euo pipefail
cd "$(dirname "$0")/../.."

log() { printf '[gpu] %s\n' "$*" >&2; }
mkdir -p test-output/gpu

node -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a<20||(a===20&&b<18)) { console.error("Node >= 20.18 is needed, found "+process.versions.node); process.exit(1) }'

cuda=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  log "GPU: $(nvidia-smi -L | head -1)"
  if ldconfig -p 2>/dev/null | grep -q 'libcudart.so.12' || ls "${CUDA_HOME:-/usr/local/cuda}"/lib64/libcudart.so.12* >/dev/null 2>&1; then cuda=1; fi
else
  log "no NVIDIA GPU found (nvidia-smi); WebGPU will use whatever Vulkan adapter exists (lavapipe is software)"
fi
if command -v vulkaninfo >/dev/null 2>&1; then
  vulkaninfo --summary 2>/dev/null | grep -E 'deviceName|driverName' | sed 's/^/[gpu] vulkan: /' >&2 || true
else
  log "vulkaninfo not installed (apt-get install vulkan-tools) — cannot show which Vulkan adapters exist"
fi

# Dependencies: npm ci skips onnxruntime-node's install script (package.json allowScripts), so its
# CUDA binaries are fetched by that script run by hand when CUDA 12 is present (the opt-in the
# README and `rollout-studio env` name); node-llama-cpp's prebuilt CUDA and Vulkan builds come with it.
log "npm ci"
npm ci >&2
if [ "$cuda" = 1 ]; then
  log "onnxruntime-node's CUDA 12 provider"
  ONNXRUNTIME_NODE_INSTALL=cuda12 node node_modules/onnxruntime-node/script/install.js >&2
else
  log "no CUDA 12 runtime found: CPU and WebGPU providers only"
fi

log "rollout-studio env → test-output/gpu/env.txt"
npx tsx trainer/bridges/cli/main.ts env > test-output/gpu/env.txt 2>&1 || true
cat test-output/gpu/env.txt >&2

providers=webgpu
[ "$cuda" = 1 ] && providers=webgpu,cuda
log "benchmarks on: $providers"
npx tsx test/gpu/gpu.bench.ts --providers "$providers" "$@"

# The whole GRPO step (bench:step) on each GPU provider, ours only: its peers run on the CPU.
step_shapes=smollm2_135m_lora,qwen25_05b_lora
step_args=()
for a in "$@"; do [ "$a" = --smoke ] && step_args+=(--smoke) && step_shapes=tiny_lora; done
for p in ${providers//,/ }; do
  log "bench:step on $p → test-output/gpu/step-$p.txt"
  npx tsx test/bench/step.bench.ts --device "$p" --no-peers --shapes "$step_shapes" "${step_args[@]}" \
    2>&1 | tee "test-output/gpu/step-$p.txt" | grep -E '^RESULT' >&2 || log "bench:step on $p failed (see step-$p.txt)"
done
cat test-output/gpu/results.md
