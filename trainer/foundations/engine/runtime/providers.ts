import type { ExecutionProviderName } from '../../../contract/protocol/environment';

/** The provider names are the protocol's (the environment report and configs name them too). */
export type { ExecutionProviderName };

/** Turn onnxruntime's and Dawn's error text into what the user should do about it. */
export function explainProviderError(provider: ExecutionProviderName, message: string): string {
  if (provider === 'webgpu') {
    if (/ArrayDynamicIndexing/i.test(message)) {
      return "The Vulkan driver is too old for WebGPU (Dawn needs dynamic indexing of uniform arrays). With Mesa's lavapipe, install Mesa 25 or newer (Debian 12: apt-get install -t bookworm-backports mesa-vulkan-drivers).";
    }
    if (/No supported adapters|VK_ERROR_INCOMPATIBLE_DRIVER|Failed to get a WebGPU adapter/i.test(message)) {
      return process.platform === 'linux'
        ? "No WebGPU adapter was found: no working Vulkan driver is installed. Install your GPU's Vulkan driver (NVIDIA's driver, or mesa-vulkan-drivers for AMD/Intel; Mesa 25+ lavapipe runs WebGPU on the CPU)."
        : 'No WebGPU adapter was found: update the graphics driver (WebGPU uses Direct3D 12 on Windows and Metal on macOS).';
    }
    return 'Creating a WebGPU session failed; see the error below.';
  }
  if (provider === 'cuda') {
    const lib = /lib(cudart|cublas|cublasLt|cudnn|cufft|curand)[^ :]*/.exec(message)?.[0];
    if (lib)
      return `A CUDA library could not be loaded (${lib}). Install CUDA 12 and cuDNN 9 and put their lib folders on LD_LIBRARY_PATH.`;
    if (/libcuda\.so|no CUDA-capable device|CUDA driver version/i.test(message)) {
      return 'No usable NVIDIA driver or GPU was found. Install the NVIDIA driver for your GPU (CUDA 12 needs driver 525 or newer).';
    }
    if (/providers_shared|providers_cuda|Failed to load shared library/i.test(message)) {
      return "onnxruntime-node's CUDA provider libraries are not installed (they are downloaded by its install script, not shipped with it); `rollout-studio env` says which files are missing and the command that downloads them.";
    }
    return 'Creating a CUDA session failed; see the error below.';
  }
  return 'onnxruntime could not run a graph on the CPU; reinstall the dependencies (npm install).';
}
