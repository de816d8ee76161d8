"""PyTorch peer for `npm run bench:engine`: the reference decoder of the engine benchmark (same
shapes, rotary embeddings, RMSNorm, SwiGLU, causal attention, AdamW with clipping) as plain eager
PyTorch — no compilation, no fused kernels beyond what eager offers. A long-lived server
(peer_server.serve): `setup` builds the model at a thread setting; `train_step` and `forward`
time one call each. Run with Debian's /usr/bin/python3 (python3-torch, libopenblas0-pthread)."""
import math

import torch
import torch.nn.functional as F

from peer_server import serve, setting, timed

state = {}


def param(*shape, norm=False):
    return torch.nn.Parameter(torch.ones(*shape) if norm else torch.randn(*shape) * 0.02)


def rms(x, w):
    return x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w


class Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        D, FF = c["hidden"], c["ffn"]
        self.c = c
        self.n1, self.n2 = param(D, norm=True), param(D, norm=True)
        self.q, self.k, self.v, self.o = param(D, D), param(D, D), param(D, D), param(D, D)
        self.gate, self.up, self.down = param(FF, D), param(FF, D), param(D, FF)

    def forward(self, x, cos, sin, mask):
        B, T, D = x.shape
        H = self.c["heads"]
        hd = D // H
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


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class Model(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed = param(c["vocab"], c["hidden"])
        self.blocks = torch.nn.ModuleList([Block(c) for _ in range(c["layers"])])
        self.norm = param(c["hidden"], norm=True)
        self.head = param(c["vocab"], c["hidden"])

    def forward(self, ids, targets, loss_mask, key_mask, positions):
        T = ids.shape[1]
        hd = self.c["hidden"] // self.c["heads"]
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


def setup(request):
    c = request["model"]
    torch.manual_seed(0)
    model = Model(c)
    g = torch.Generator().manual_seed(1)
    B, T = c["batch"], c["seq"]
    state.update(
        model=model,
        opt=torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01),
        batch=(torch.randint(0, c["vocab"], (B, T), generator=g), torch.randint(0, c["vocab"], (B, T), generator=g), torch.ones(B, T), torch.ones(B, T, dtype=torch.long), torch.arange(T)[None].expand(B, T)),
    )
    return setting(request["threads"])


def train_step(_request):
    model, opt = state["model"], state["opt"]

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(*state["batch"])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    seconds, loss = timed(step)
    return {"seconds": seconds, "loss": loss}


def forward(_request):
    def run():
        with torch.no_grad():
            return state["model"](*state["batch"]).item()

    seconds, loss = timed(run)
    return {"seconds": seconds, "loss": loss}


def matmul(request):
    n = request["n"]
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    seconds, _ = timed(lambda: a @ b)
    return {"seconds": seconds}


serve({"setup": setup, "train_step": train_step, "forward": forward, "matmul": matmul})
