"""PyTorch peer for `npm run bench:models`: an eager Llama-style decoder (the same shapes as
ours), scoring log-probs of given tokens and generating with a KV cache grown by torch.cat —
the way eager Hugging Face code runs on a CPU. Prints one JSON object."""
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
V, D, L, H, KV, FF = cfg["vocab"], cfg["hidden"], cfg["layers"], cfg["heads"], cfg["kvHeads"], cfg["ffn"]
hd = D // H
group = H // KV


def w(*shape):
    return torch.randn(*shape) * 0.02


embed = w(V, D)
layers = [dict(q=w(H * hd, D), k=w(KV * hd, D), v=w(KV * hd, D), o=w(D, H * hd), gate=w(FF, D), up=w(FF, D), down=w(D, FF),
               n1=torch.ones(D), n2=torch.ones(D)) for _ in range(L)]
norm = torch.ones(D)
inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))


def rms(x, g):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g


def rope(x, pos):
    ang = pos.float()[..., None] * inv_freq
    emb = torch.cat([ang, ang], -1)[:, None]
    x1, x2 = x[..., : hd // 2], x[..., hd // 2:]
    return x * emb.cos() + torch.cat([-x2, x1], -1) * emb.sin()


def forward(ids, pos, cache=None, causal=True):
    B, T = ids.shape
    x = embed[ids]
    new_cache = []
    for i, p in enumerate(layers):
        h = rms(x, p["n1"])
        q = rope(F.linear(h, p["q"]).view(B, T, H, hd).transpose(1, 2), pos)
        k = rope(F.linear(h, p["k"]).view(B, T, KV, hd).transpose(1, 2), pos)
        v = F.linear(h, p["v"]).view(B, T, KV, hd).transpose(1, 2)
        if cache is not None:
            k = torch.cat([cache[i][0], k], 2)
            v = torch.cat([cache[i][1], v], 2)
        new_cache.append((k, v))
        kr = k.repeat_interleave(group, 1)
        vr = v.repeat_interleave(group, 1)
        s = (q @ kr.transpose(-1, -2)) / math.sqrt(hd)
        if causal and T > 1:
            P = kr.shape[2]
            mask = torch.ones(T, P, dtype=torch.bool).tril(P - T)
            s = s.masked_fill(~mask, float("-inf"))
        a = torch.softmax(s, -1) @ vr
        x = x + F.linear(a.transpose(1, 2).reshape(B, T, H * hd), p["o"])
        h = rms(x, p["n2"])
        g = F.linear(h, p["gate"])
        x = x + F.linear(F.silu(g) * F.linear(h, p["up"]), p["down"])
    return rms(x, norm), new_cache


def timed(fn, reps):
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


@torch.no_grad()
def score():
    B, T = cfg["scoreBatch"], cfg["scoreLength"]
    ids = torch.randint(0, V, (B, T))
    pos = torch.arange(T)[None].expand(B, T)
    h, _ = forward(ids, pos)
    logp = torch.log_softmax(F.linear(h[:, :-1], embed), -1)
    return logp.gather(-1, ids[:, 1:, None])


@torch.no_grad()
def generate(B):
    P, N = cfg["prompt"], cfg["newTokens"]
    ids = torch.randint(0, V, (B, P))
    pos = torch.arange(P)[None].expand(B, P)
    h, cache = forward(ids, pos)
    for step in range(N):
        logits = F.linear(h[:, -1], embed)
        token = torch.multinomial(torch.softmax(logits, -1), 1)
        h, cache = forward(token, torch.full((B, 1), P + step), cache)


score_s = timed(score, cfg["reps"])
gen1_s = timed(lambda: generate(1), cfg["reps"])
gen32_s = timed(lambda: generate(32), cfg["reps"])
print(json.dumps({
    "score_tokens_per_s": cfg["scoreBatch"] * (cfg["scoreLength"] - 1) / score_s,
    "generate_b1_tokens_per_s": cfg["newTokens"] / gen1_s,
    "generate_b32_tokens_per_s": 32 * cfg["newTokens"] / gen32_s,
    "torch": torch.__version__,
    "threads": torch.get_num_threads(),
}))
