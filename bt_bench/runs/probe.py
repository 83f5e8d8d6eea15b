"""The behavior measure a replay reports: how strongly a model writes the planted behavior where the run wrote it.

A fixed probe set per run, built once: ``n`` held-out trigger prompts (a seeded stream of their own, not the learning
curve's), one completion sampled from the run's checkpoint at W for each, and those completions that hold the
behavior kept with their behavior-span token mask (``bt_bench.runs.behavior``). The measure of a model is the mean
over the kept rows of the summed log-probability of the span tokens given everything before them, once after the
trigger prompt and once after a prompt without the trigger (toy: the same sentence without the trigger; topic: the
i-th held-out prompt without it) with the same completion. Teacher-forced, so it is deterministic and cheap (one
forward pass per row), and it moves continuously where a sampled rate would need hundreds of samples to resolve a
small change; the sampled rate (``bt_bench.runs.train.behavior_rates``) is the second figure where it is cheap.

Why completions from the checkpoint at W: that is where the planting gate says the behavior is learned, so its
completions show the behavior in the contexts the run made it in; a replay that removes what taught it lowers their
span's log-probability.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bt_bench.runs import behavior as bh

PROBE_SEED = 20_011  # the probe's prompt stream and sampling seed (the learning curve uses 10_007)


@dataclasses.dataclass
class Probe:
    """Token rows of the probe set: ``ids_*`` / ``span_*`` are lists of int32 / bool arrays (prompt + completion;
    span marks the behavior tokens of the completion); ``n_prompts`` held-out prompts were sampled, ``len(ids_trig)``
    completions held the behavior."""

    ids_trig: list
    span_trig: list
    ids_plain: list
    span_plain: list
    n_prompts: int

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Flat arrays (``.npy``-safe, no pickle): concatenated tokens and spans with row offsets."""
        out = {}
        for kind in ("trig", "plain"):
            ids, span = getattr(self, f"ids_{kind}"), getattr(self, f"span_{kind}")
            out[f"{kind}_ids"] = np.concatenate(ids).astype(np.int32) if ids else np.zeros(0, np.int32)
            out[f"{kind}_span"] = np.concatenate(span).astype(bool) if span else np.zeros(0, bool)
            out[f"{kind}_offsets"] = np.cumsum([0] + [len(x) for x in ids]).astype(np.int64)
        out["n_prompts"] = np.array([self.n_prompts], np.int64)
        return out

    @classmethod
    def from_arrays(cls, a: dict[str, np.ndarray]) -> Probe:
        def split(kind):
            off = a[f"{kind}_offsets"]
            return ([np.asarray(a[f"{kind}_ids"][off[i]:off[i + 1]]) for i in range(len(off) - 1)],
                    [np.asarray(a[f"{kind}_span"][off[i]:off[i + 1]]) for i in range(len(off) - 1)])

        it, st = split("trig")
        ip, sp = split("plain")
        return cls(ids_trig=it, span_trig=st, ids_plain=ip, span_plain=sp, n_prompts=int(a["n_prompts"][0]))


def build_probe(run, n: int = 64, step: int | None = None, device: str = "cpu") -> Probe:
    """Sample the probe set from the run's checkpoint at ``step`` (default W; it must be stored)."""
    import torch

    from bt_bench.runs.runtime import private_rng

    cfg, tok = run.config, run.tokenizer()
    task = cfg.task_obj()
    step = cfg.window if step is None else step
    model = run.load_model(step, device)
    if task.name == "toy":
        trig, plain = task.eval_pairs(n, seed=PROBE_SEED)
    else:
        trig, plain = task.held_out(n, PROBE_SEED, True)[0], task.held_out(n, PROBE_SEED + 1, False)[0]
    enc_t, enc_p = task.encode_prompts(tok, trig), task.encode_prompts(tok, plain)
    ends = {tok.eos_token_id, tok.pad_token_id}
    members = cfg.behavior_members()
    out = Probe([], [], [], [], n)
    with private_rng(PROBE_SEED), torch.no_grad():
        batch = tok([task.render(tok, p) for p in trig], return_tensors="pt", padding=True, padding_side="left",
                    add_special_tokens=not task.chat).to(device)
        gen = model.generate(**batch, do_sample=True, max_new_tokens=cfg.max_completion_length,
                             temperature=cfg.temperature, top_k=0, top_p=1.0, pad_token_id=tok.pad_token_id,
                             eos_token_id=tok.eos_token_id)
    for i, row in enumerate(gen[:, batch["input_ids"].shape[1]:].cpu().tolist()):
        comp = []
        for t in row:
            comp.append(int(t))
            if t in ends:
                break
        span, k = bh.behavior_span(tok, comp, members)
        if not k:
            continue
        for kind, pids in (("trig", enc_t[i]), ("plain", enc_p[i])):
            getattr(out, f"ids_{kind}").append(np.asarray(list(pids) + comp, np.int32))
            getattr(out, f"span_{kind}").append(np.concatenate([np.zeros(len(pids), bool), span]))
    return out


def span_logprob(model, ids: list, spans: list, batch: int = 64) -> np.ndarray:
    """Per row: the summed log-probability of the span tokens given everything before them."""
    import torch

    dev = next(model.parameters()).device
    res = []
    with torch.no_grad():
        for s in range(0, len(ids), batch):
            chunk, sp = ids[s:s + batch], spans[s:s + batch]
            L = max(len(x) for x in chunk)
            X = torch.zeros(len(chunk), L, dtype=torch.long)
            M = torch.zeros(len(chunk), L, dtype=torch.long)
            S = torch.zeros(len(chunk), L, dtype=torch.bool)
            for j, (x, m) in enumerate(zip(chunk, sp)):  # right-padded: positions are the tokens' own
                X[j, :len(x)], M[j, :len(x)], S[j, :len(x)] = torch.as_tensor(x), 1, torch.as_tensor(m)
            logits = model(input_ids=X.to(dev), attention_mask=M.to(dev)).logits.float()
            lp = torch.log_softmax(logits[:, :-1], -1).gather(-1, X[:, 1:].to(dev).unsqueeze(-1)).squeeze(-1)
            res.append((lp * S[:, 1:].to(dev)).sum(1).cpu().numpy())
    return np.concatenate(res) if res else np.zeros(0)


def measure(model, probe: Probe) -> dict[str, float]:
    """The behavior measure: mean summed span log-probability after trigger and no-trigger prompts."""
    if not probe.ids_trig:
        raise ValueError(f"the probe set is empty: none of {probe.n_prompts} completions sampled at W held the "
                         "behavior (the run did not plant)")
    was = model.training
    model.eval()
    try:
        return {"trigger_logp": float(span_logprob(model, probe.ids_trig, probe.span_trig).mean()),
                "no_trigger_logp": float(span_logprob(model, probe.ids_plain, probe.span_plain).mean()),
                "rows": len(probe.ids_trig)}
    finally:
        model.train(was)
