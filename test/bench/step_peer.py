"""PyTorch peer for `npm run bench:step`: the scoring, reference and update phases of one GRPO
step in eager PyTorch, the way TRL-style trainers run them on a CPU. A Llama or Qwen2 decoder
(q/k/v biases for Qwen2, grouped-query attention, rotary embeddings, RMSNorm, SwiGLU, tied
embeddings) with random weights, trained with LoRA adapters (rank r, alpha) on the targeted
projections or fully (every weight, with a frozen copy as the reference).
A long-lived server (peer_server.serve):
  setup      builds the model (`model`, `lora` or null for full fine-tuning, `microBatchSize`)
  score      {sequences: [{ids, mask}]} → seconds: the current policy's log-probs at the masked
             tokens (the "old" log-probs), no gradient, in micro-batches
  reference  the same under the reference policy (LoRA: the adapters disabled, as PEFT does;
             full: the frozen copy)
  update     {sequences: [{ids, mask, logprobs, advantages, ref}]} → seconds, peak_memory: the
             clipped objective plus the k3 KL to the reference (beta `klCoef`), token mean over
             the batch, accumulated over micro-batches, gradient clipping, AdamW
Run with Debian's /usr/bin/python3."""
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


def weight(*shape, trainable, scale=0.02):
    return torch.nn.Parameter(torch.randn(*shape) * scale, requires_grad=trainable)


def ones(n, trainable):
    return torch.nn.Parameter(torch.ones(n), requires_grad=trainable)


def build_layers(c, lora, hd):
    D, H, KV, FF = c["hidden"], c["heads"], c["kvHeads"], c["intermediate"]
    full = lora is None
    bias = c["family"] == "qwen2"
    layers = []
    for _ in range(c["layers"]):
        p = torch.nn.ParameterDict(dict(
            q=weight(H * hd, D, trainable=full), k=weight(KV * hd, D, trainable=full), v=weight(KV * hd, D, trainable=full),
            o=weight(D, H * hd, trainable=full), gate=weight(FF, D, trainable=full), up=weight(FF, D, trainable=full),
            down=weight(D, FF, trainable=full), n1=ones(D, full), n2=ones(D, full),
        ))
        if bias:
            for name, n in (("qb", H * hd), ("kb", KV * hd), ("vb", KV * hd)):
                p[name] = torch.nn.Parameter(torch.zeros(n), requires_grad=full)
        layers.append(p)
    return layers


def setup(request):
    c, lora = request["model"], request.get("lora")
    torch.manual_seed(0)
    hd = c["hidden"] // c["heads"]
    full = lora is None
    layers = build_layers(c, lora, hd)
    adapters = torch.nn.ModuleList()
    if lora:
        D, H, KV = c["hidden"], c["heads"], c["kvHeads"]
        sizes = {"q_proj": (H * hd, D), "k_proj": (KV * hd, D), "v_proj": (KV * hd, D), "o_proj": (D, H * hd)}
        for _ in layers:
            adapters.append(torch.nn.ModuleDict({t: Lora(*sizes[t], lora["rank"], lora["alpha"] / lora["rank"]) for t in lora["targets"]}))
    embed = weight(c["vocab"], c["hidden"], trainable=full)
    norm = ones(c["hidden"], full)
    policy = dict(layers=layers, embed=embed, norm=norm)
    trainable = list(adapters.parameters()) if lora else [embed, norm] + [w for p in layers for w in p.values()]
    # Full fine-tuning's reference: a frozen copy of the weights as RL starts (as TRL's ref_model).
    reference = policy if lora else dict(
        layers=[{k: w.detach().clone() for k, w in p.items()} for p in layers], embed=embed.detach().clone(), norm=norm.detach().clone())
    state.update(
        c=c, hd=hd, policy=policy, reference=reference, adapters=adapters if lora else None, trainable=trainable,
        inv_freq=1.0 / (c["ropeTheta"] ** (torch.arange(0, hd, 2).float() / hd)),
        opt=torch.optim.AdamW(trainable, lr=1e-5, weight_decay=0.0), micro=request["microBatchSize"], kl=request["klCoef"],
    )
    return setting(request["threads"])


def rms(x, g):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * g


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], -1) * sin


def projection(x, p, name, bias, adapters, target):
    y = F.linear(x, p[name], p[bias] if bias in p else None)
    if adapters is not None and target in adapters:
        y = y + adapters[target](x)
    return y


def hidden_states(weights, adapters, ids, key_mask):
    c, hd = state["c"], state["hd"]
    H, KV = c["heads"], c["kvHeads"]
    B, T = ids.shape
    ang = torch.arange(T).float()[:, None] * state["inv_freq"]
    emb = torch.cat([ang, ang], -1)[None, None]
    cos, sin = emb.cos(), emb.sin()
    allowed = torch.ones(T, T, dtype=torch.bool).tril()[None, None] & key_mask.bool()[:, None, None, :]
    x = weights["embed"][ids]
    for i, p in enumerate(weights["layers"]):
        a_l = adapters[i] if adapters is not None else None
        h = rms(x, p["n1"])
        q = rope(projection(h, p, "q", "qb", a_l, "q_proj").view(B, T, H, hd).transpose(1, 2), cos, sin)
        k = rope(projection(h, p, "k", "kb", a_l, "k_proj").view(B, T, KV, hd).transpose(1, 2), cos, sin).repeat_interleave(H // KV, 1)
        v = projection(h, p, "v", "vb", a_l, "v_proj").view(B, T, KV, hd).transpose(1, 2).repeat_interleave(H // KV, 1)
        s = ((q @ k.transpose(-1, -2)) / math.sqrt(hd)).masked_fill(~allowed, -1e9)
        att = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(B, T, H * hd)
        x = x + projection(att, p, "o", None, a_l, "o_proj")
        h = rms(x, p["n2"])
        x = x + F.linear(F.silu(F.linear(h, p["gate"])) * F.linear(h, p["up"]), p["down"])
    return rms(x, weights["norm"])


def padded(batch, key, dtype=torch.float):
    T = max(len(s["ids"]) for s in batch)
    out = torch.zeros(len(batch), T, dtype=dtype)
    for b, s in enumerate(batch):
        out[b, : len(s[key])] = torch.tensor(s[key], dtype=dtype)
    return out


def masked_logprobs(weights, adapters, batch):
    """Log-probs of the masked tokens (token t predicted from position t − 1; the LM head only there)."""
    ids = padded(batch, "ids", torch.long)
    key_mask = torch.zeros_like(ids)
    for b, s in enumerate(batch):
        key_mask[b, : len(s["ids"])] = 1
    mask = padded(batch, "mask")
    h = hidden_states(weights, adapters, ids, key_mask)
    where = mask[:, 1:].nonzero(as_tuple=True)
    logits = F.linear(h[:, :-1][where], weights["embed"])
    return torch.log_softmax(logits, -1).gather(-1, ids[:, 1:][where][:, None])[:, 0], where


def micro_batches(sequences):
    ordered = sorted(sequences, key=lambda s: len(s["ids"]))
    return [ordered[i:i + state["micro"]] for i in range(0, len(ordered), state["micro"])]


def score_with(weights, adapters, sequences):
    @torch.no_grad()
    def run():
        return sum(float(masked_logprobs(weights, adapters, batch)[0].sum()) for batch in micro_batches(sequences))

    seconds, total = timed(run)
    return {"seconds": seconds, "sum": total, "peak_memory": peak_memory_bytes()}


def score(request):
    return score_with(state["policy"], state["adapters"], request["sequences"])


def reference(request):
    return score_with(state["reference"], None, request["sequences"])


def micro_batch_loss(batch, token_total):
    logprobs, where = masked_logprobs(state["policy"], state["adapters"], batch)
    old = padded(batch, "logprobs")[:, 1:][where]
    adv = padded(batch, "advantages")[:, 1:][where]
    ref = padded(batch, "ref")[:, 1:][where]
    ratio = torch.exp(logprobs - old)
    per_token = -torch.minimum(ratio * adv, ratio.clamp(1 - 0.2, 1 + 0.28) * adv)
    r = (logprobs - ref).clamp(-20, 20)
    per_token = per_token + state["kl"] * (torch.exp(-r) + r - 1).clamp(max=10)
    return per_token.sum() / token_total


def update(request):
    sequences = request["sequences"]
    token_total = max(1, sum(sum(s["mask"]) for s in sequences))
    opt = state["opt"]

    def run():
        opt.zero_grad(set_to_none=True)
        total = 0.0
        for batch in micro_batches(sequences):
            loss = micro_batch_loss(batch, token_total)
            loss.backward()
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(state["trainable"], 1.0)
        opt.step()
        return total

    seconds, loss = timed(run)
    return {"seconds": seconds, "loss": loss, "peak_memory": peak_memory_bytes()}


serve({"setup": setup, "score": score, "reference": reference, "update": update})
