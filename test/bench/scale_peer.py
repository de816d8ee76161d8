"""PyTorch peer for `npm run bench:scale`: the same GRPO update with LoRA as ours, in eager
PyTorch the way TRL-style trainers run it on a CPU: a Qwen2-architecture decoder (q/k/v biases,
grouped-query attention, rotary embeddings, RMSNorm, SwiGLU, tied embeddings) with random frozen
weights, LoRA adapters (rank r, alpha) on the targeted projections as the only trainable tensors,
the LM head applied only at the policy's tokens, the clipped policy objective (token mean over
the whole batch, accumulated over micro-batches), gradient clipping and AdamW.
A long-lived server (peer_server.serve): `setup` builds the model and takes the trajectories,
`update` times one update over all of them (`set`: the trajectories as sampled, or with a
distinct first token each, so that no two share a prefix). Run with Debian's /usr/bin/python3."""
import math

import torch
import torch.nn.functional as F

from peer_server import peak_memory_bytes, serve, setting, timed

state = {}


class Lora(torch.nn.Module):
    def __init__(self, out_features, in_features, rank, scale):
        super().__init__()
        bound = 1 / math.sqrt(in_features)
        self.a = torch.nn.Parameter(torch.empty(rank, in_features).uniform_(-bound, bound))
        self.b = torch.nn.Parameter(torch.zeros(out_features, rank))
        self.scale = scale

    def forward(self, x):
        return F.linear(F.linear(x, self.a), self.b) * self.scale


def frozen(*shape, scale=0.02):
    return torch.randn(*shape) * scale


def setup(request):
    c, lora = request["model"], request["lora"]
    torch.manual_seed(0)
    D, H, KV, FF, V = c["hidden"], c["heads"], c["kvHeads"], c["intermediate"], c["vocab"]
    hd = D // H
    scale = lora["alpha"] / lora["rank"]
    sizes = {"q_proj": (H * hd, D), "k_proj": (KV * hd, D), "v_proj": (KV * hd, D), "o_proj": (D, H * hd)}
    layers, adapters = [], torch.nn.ModuleList()
    for _ in range(c["layers"]):
        layer = dict(
            q=frozen(H * hd, D), qb=torch.zeros(H * hd), k=frozen(KV * hd, D), kb=torch.zeros(KV * hd), v=frozen(KV * hd, D), vb=torch.zeros(KV * hd),
            o=frozen(D, H * hd), gate=frozen(FF, D), up=frozen(FF, D), down=frozen(D, FF), n1=torch.ones(D), n2=torch.ones(D),
        )
        lora_modules = torch.nn.ModuleDict({t: Lora(*sizes[t], lora["rank"], scale) for t in lora["targets"]})
        adapters.append(lora_modules)
        layer["lora"] = lora_modules
        layers.append(layer)
    state.update(
        c=c, hd=hd, layers=layers, adapters=adapters, embed=frozen(V, D), norm=torch.ones(D),
        inv_freq=1.0 / (c["ropeTheta"] ** (torch.arange(0, hd, 2).float() / hd)),
        opt=torch.optim.AdamW(adapters.parameters(), lr=1e-5, weight_decay=0.0),
        sequences={"shared": request["sequences"], "unshared": request["unsharedSequences"]}, micro=request["microBatchSize"],
    )
    return setting(request["threads"])


def rms(x, g):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin


def adapted(x, weight, bias, layer, target):
    y = F.linear(x, weight, bias)
    if target in layer["lora"]:
        y = y + layer["lora"][target](x)
    return y


def hidden_states(ids, key_mask):
    c, hd = state["c"], state["hd"]
    H, KV = c["heads"], c["kvHeads"]
    B, T = ids.shape
    pos = torch.arange(T)[None].expand(B, T)
    ang = pos.float()[..., None] * state["inv_freq"]
    emb = torch.cat([ang, ang], -1)[:, None]
    cos, sin = emb.cos(), emb.sin()
    allowed = torch.ones(T, T, dtype=torch.bool).tril()[None, None] & key_mask.bool()[:, None, None, :]
    x = state["embed"][ids]
    for p in state["layers"]:
        h = rms(x, p["n1"])
        q = rope(adapted(h, p["q"], p["qb"], p, "q_proj").view(B, T, H, hd).transpose(1, 2), cos, sin)
        k = rope(adapted(h, p["k"], p["kb"], p, "k_proj").view(B, T, KV, hd).transpose(1, 2), cos, sin).repeat_interleave(H // KV, 1)
        v = adapted(h, p["v"], p["vb"], p, "v_proj").view(B, T, KV, hd).transpose(1, 2).repeat_interleave(H // KV, 1)
        s = ((q @ k.transpose(-1, -2)) / math.sqrt(hd)).masked_fill(~allowed, -1e9)
        a = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, H * hd)
        x = x + adapted(a, p["o"], None, p, "o_proj")
        h = rms(x, p["n2"])
        x = x + F.linear(F.silu(F.linear(h, p["gate"])) * F.linear(h, p["up"]), p["down"])
    return rms(x, state["norm"])


def micro_batch_loss(batch, token_total, clip_low, clip_high):
    T = max(len(s["ids"]) for s in batch)
    ids = torch.zeros(len(batch), T, dtype=torch.long)
    key_mask = torch.zeros(len(batch), T, dtype=torch.long)
    mask = torch.zeros(len(batch), T)
    old = torch.zeros(len(batch), T)
    adv = torch.zeros(len(batch), T)
    for b, s in enumerate(batch):
        n = len(s["ids"])
        ids[b, :n] = torch.tensor(s["ids"])
        key_mask[b, :n] = 1
        mask[b, :n] = torch.tensor(s["mask"], dtype=torch.float)
        old[b, :n] = torch.tensor(s["logprobs"])
        adv[b, :n] = torch.tensor(s["advantages"])
    h = hidden_states(ids, key_mask)
    # Token t is predicted from position t − 1: the LM head only where the policy generated.
    where = mask[:, 1:].nonzero(as_tuple=True)
    logits = F.linear(h[:, :-1][where], state["embed"])
    targets = ids[:, 1:][where]
    logprobs = torch.log_softmax(logits, -1).gather(-1, targets[:, None])[:, 0]
    ratio = torch.exp(logprobs - old[:, 1:][where])
    a = adv[:, 1:][where]
    per_token = -torch.minimum(ratio * a, ratio.clamp(1 - clip_low, 1 + clip_high) * a)
    return per_token.sum() / token_total


def update(request):
    every = state["sequences"][request.get("set", "shared")]
    sequences = every[: request.get("limit", len(every))]
    micro = state["micro"]
    token_total = max(1, sum(sum(s["mask"]) for s in sequences))
    opt = state["opt"]

    def run():
        opt.zero_grad(set_to_none=True)
        total = 0.0
        ordered = sorted(sequences, key=lambda s: len(s["ids"]))
        for start in range(0, len(ordered), micro):
            loss = micro_batch_loss(ordered[start:start + micro], token_total, 0.2, 0.28)
            loss.backward()
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(state["adapters"].parameters(), 1.0)
        opt.step()
        return total

    seconds, loss = timed(run)
    return {"seconds": seconds, "loss": loss, "peak_memory": peak_memory_bytes()}


serve({"setup": setup, "update": update})
