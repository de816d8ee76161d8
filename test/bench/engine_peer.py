"""PyTorch peer for `npm run bench:engine`: the same decoder, shapes and thread count as the
engine benchmark, written as plain eager PyTorch (no compilation, no fused kernels beyond
what eager offers). Prints one JSON object. Run with Debian's /usr/bin/python3 (python3-torch)."""
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F

cfg = json.loads(sys.argv[1])
torch.set_num_threads(cfg["threads"])
torch.manual_seed(0)
V, D, L, H, FF, T, B = cfg["vocab"], cfg["hidden"], cfg["layers"], cfg["heads"], cfg["ffn"], cfg["seq"], cfg["batch"]
hd = D // H


def param(*shape, norm=False):
    return torch.nn.Parameter(torch.ones(*shape) if norm else torch.randn(*shape) * 0.02)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = param(D, norm=True), param(D, norm=True)
        self.q, self.k, self.v, self.o = param(D, D), param(D, D), param(D, D), param(D, D)
        self.gate, self.up, self.down = param(FF, D), param(FF, D), param(D, FF)

    def forward(self, x, cos, sin, mask):
        h = rms(x, self.n1)
        q = F.linear(h, self.q).view(B, T, H, hd).transpose(1, 2)
        k = F.linear(h, self.k).view(B, T, H, hd).transpose(1, 2)
        v = F.linear(h, self.v).view(B, T, H, hd).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        s = (q / math.sqrt(hd)) @ k.transpose(-1, -2)
        s = s.masked_fill(~mask, -1e9)
        a = torch.softmax(s, -1) @ v
        x = x + F.linear(a.transpose(1, 2).reshape(B, T, D), self.o)
        h = rms(x, self.n2)
        g = F.linear(h, self.gate)
        return x + F.linear(g * torch.sigmoid(g) * F.linear(h, self.up), self.down)


def rms(x, w):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def rope(x, cos, sin):
    x1, x2 = x[..., : hd // 2], x[..., hd // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = param(V, D)
        self.blocks = torch.nn.ModuleList([Block() for _ in range(L)])
        self.norm = param(D, norm=True)
        self.head = param(V, D)

    def forward(self, ids, targets, loss_mask, key_mask, positions):
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        ang = positions.float()[..., None] * inv
        emb = torch.cat([ang, ang], -1)[:, None]
        cos, sin = emb.cos(), emb.sin()
        mask = torch.tril(torch.ones(T, T, dtype=torch.bool)) & key_mask.bool()[:, None, None, :]
        x = self.embed[ids]
        for b in self.blocks:
            x = b(x, cos, sin, mask)
        logp = torch.log_softmax(F.linear(rms(x, self.norm), self.head), -1)
        picked = logp.gather(-1, targets[..., None])[..., 0]
        return -(picked * loss_mask).sum() / loss_mask.sum().clamp(min=1)


model = Model()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
g = torch.Generator().manual_seed(1)
ids = torch.randint(0, V, (B, T), generator=g)
targets = torch.randint(0, V, (B, T), generator=g)
loss_mask = torch.ones(B, T)
key_mask = torch.ones(B, T, dtype=torch.long)
positions = torch.arange(T)[None].expand(B, T)


def train_step():
    opt.zero_grad(set_to_none=True)
    loss = model(ids, targets, loss_mask, key_mask, positions)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    return loss.item()


def forward():
    with torch.no_grad():
        return model(ids, targets, loss_mask, key_mask, positions).item()


def timed(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


n = cfg["matmul"]
a, b2 = torch.randn(n, n), torch.randn(n, n)
mm = timed(lambda: a @ b2, 2, 5)
import os


def loaded_blas():
    """The BLAS libraries really mapped into this process (Debian's torch uses whatever libblas.so.3 points to)."""
    paths = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            parts = line.split()
            if len(parts) >= 6 and "blas" in os.path.basename(parts[-1]).lower():
                paths.add(os.path.realpath(parts[-1]))
    return sorted(paths)


blas_loaded = loaded_blas()
blas = "OpenBLAS" if any("openblas" in p for p in blas_loaded) else ("reference BLAS (slow)" if blas_loaded else "unknown")
print(json.dumps({
    "forward_s": timed(forward, cfg["warmup"], cfg["reps"]),
    "train_step_s": timed(train_step, cfg["warmup"], cfg["reps"]),
    "matmul_gflops": 2 * n ** 3 / mm / 1e9,
    "torch": torch.__version__,
    "threads": torch.get_num_threads(),
    "blas_build": blas,
    "blas_loaded": blas_loaded,
}))
