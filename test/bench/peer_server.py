"""The request loop every PyTorch benchmark peer runs (test/bench/lib/peerProcess.ts drives it):
one JSON request per stdin line, one JSON reply per stdout line, kept alive for the whole
benchmark so Python's and torch's start-up is never timed. Also what a peer reports about its
setting: torch's intra-op threads, OPENBLAS_NUM_THREADS, and the BLAS library really loaded."""
import json
import os
import sys
import time
import traceback

import torch


def loaded_blas():
    """BLAS libraries mapped into this process (Debian's torch uses whatever libblas.so.3 points to)."""
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) >= 6 and "blas" in os.path.basename(parts[-1]).lower():
                paths.add(os.path.realpath(parts[-1]))
    return sorted(paths)


def setting(threads):
    """Apply the thread setting and describe it (call after building the model: BLAS is loaded by then)."""
    torch.set_num_threads(threads)
    blas = loaded_blas()
    name = "OpenBLAS" if any("openblas" in p for p in blas) else ("reference BLAS (slow: install libopenblas0-pthread)" if blas else "unknown")
    return {
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
        "blas": name,
        "blas_loaded": blas,
    }


def timed(fn):
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


def peak_memory_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return None


def serve(handlers):
    """Answer requests {"op": name, ...} with handlers[name](request) until stdin closes."""
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
            reply = handlers[request["op"]](request)
        except Exception:  # the driver prints the traceback with the request that caused it
            reply = {"error": traceback.format_exc()}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
