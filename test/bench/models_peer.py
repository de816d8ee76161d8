"""PyTorch peer for `npm run bench:models`: an eager Llama-style decoder with the shapes of ours,
scoring the log-probs of given tokens (batch × length) the way eager Hugging Face code runs on a
CPU. A long-lived server (peer_server.serve): `setup` builds random weights at a thread setting,
`score` times one scoring pass. Run with Debian's /usr/bin/python3."""
import math

import torch
import torch.nn.functional as F

from peer_server import serve, setting, timed

state = {}


def setup(request):
    c = request["model"]
    torch.manual_seed(0)
    V, D, L, H, KV, FF = c["vocab"], c["hidden"], c["layers"], c["heads"], c["kvHeads"], c["ffn"]
    hd = D // H

    def w(*shape):
        return torch.randn(*shape) * 0.02

    state.update(
        c=c,
        hd=hd,
        embed=w(V, D),
        layers=[dict(q=w(H * hd, D), k=w(KV * hd, D), v=w(KV * hd, D), o=w(D, H * hd), gate=w(FF, D), up=w(FF, D), down=w(D, FF), n1=torch.ones(D), n2=torch.ones(D)) for _ in range(L)],
        norm=torch.ones(D),
        inv_freq=1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd)),
    )
    return setting(request["threads"])


def rms(x, g):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g


def rope(x, pos):
    ang = pos.float()[..., None] * state["inv_freq"]
    emb = torch.cat([ang, ang], -1)[:, None]
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return x * emb.cos() + torch.cat([-x2, x1], -1) * emb.sin()


def forward(ids, pos):
    c, hd = state["c"], state["hd"]
    H, KV = c["heads"], c["kvHeads"]
    group = H // KV
    B, T = ids.shape
    x = state["embed"][ids]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for p in state["layers"]:
        h = rms(x, p["n1"])
        q = rope(F.linear(h, p["q"]).view(B, T, H, hd).transpose(1, 2), pos)
        k = rope(F.linear(h, p["k"]).view(B, T, KV, hd).transpose(1, 2), pos).repeat_interleave(group, 1)
        v = F.linear(h, p["v"]).view(B, T, KV, hd).transpose(1, 2).repeat_interleave(group, 1)
        s = ((q @ k.transpose(-1, -2)) / math.sqrt(hd)).masked_fill(~mask, float("-inf"))
        a = torch.softmax(s, -1) @ v
        x = x + F.linear(a.transpose(1, 2).reshape(B, T, H * hd), p["o"])
        h = rms(x, p["n2"])
        x = x + F.linear(F.silu(F.linear(h, p["gate"])) * F.linear(h, p["up"]), p["down"])
    return rms(x, state["norm"])


def score(request):
    ids = torch.tensor(request["ids"])
    B, T = ids.shape

    @torch.no_grad()
    def run():
        pos = torch.arange(T)[None].expand(B, T)
        h = forward(ids, pos)
        logp = torch.log_softmax(F.linear(h[:, :-1], state["embed"]), -1)
        return logp.gather(-1, ids[:, 1:, None])

    seconds, _ = timed(run)
    return {"seconds": seconds}


serve({"setup": setup, "score": score})
