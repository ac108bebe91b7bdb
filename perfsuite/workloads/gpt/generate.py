"""Batch-1 generation latency of a GPT with a KV cache: time to first token and per-token
decode time, the two figures a serving system is judged by.

For each of the first `prompts` validation windows: the first `prompt` tokens are the prompt
(half the block by default). Time to first token = one forward pass over the prompt that fills
the KV cache (prefill) and the greedy choice of the next token. Each later token is one forward
pass over that single token against the cache (decode), up to `new_tokens` tokens or the end of
the block. The device is synchronised before and after every timed call (time.perf_counter);
one untimed prompt warms up first. Greedy decoding: the figures are about time, and greedy
makes the work the same in every run.
"""

from __future__ import annotations

import time
from typing import Any

from perfsuite.record import quantity
from perfsuite.stats import percentile


def _timed(fn: Any, sync: Any) -> tuple[Any, float]:
    sync()
    t0 = time.perf_counter()
    out = fn()
    sync()
    return out, time.perf_counter() - t0


def generate_once(
    model: Any, prompt: Any, new_tokens: int, sync: Any
) -> tuple[float, list[float], Any]:
    """(time to first token, decode times, the tokens generated) for one prompt [1, P]."""
    import torch

    from perfsuite.workloads.gpt.model import KVCache

    cfg = model.cfg
    param = next(model.parameters())
    cache = KVCache(cfg, 1, prompt.device, param.dtype)

    def first() -> Any:
        logits = model(prompt, cache)
        return logits[:, -1].argmax(-1, keepdim=True)

    token, ttft = _timed(first, sync)
    out = [token]
    steps: list[float] = []
    for _ in range(new_tokens - 1):

        def step(tok: Any = token) -> Any:
            return model(tok, cache)[:, -1].argmax(-1, keepdim=True)

        token, s = _timed(step, sync)
        steps.append(s)
        out.append(token)
    return ttft, steps, torch.cat(out, dim=1)


def generation_section(
    model: Any, data: Any, backend: Any, *, prompt: int, new_tokens: int, prompts: int
) -> dict[str, Any]:
    """The inference entry's `generation` part (see the module docstring)."""
    module = getattr(model, "_orig_mod", model)  # a compiled wrapper: decode runs eager
    cfg = module.cfg
    p = prompt or cfg.block_size // 2
    if not 1 <= p < cfg.block_size:
        raise ValueError(f"recipe field 'gen_prompt': {p} must be in 1..block_size-1")
    n = max(1, min(new_tokens, cfg.block_size - p))
    count = max(1, min(prompts, data.num_eval))
    windows = data.sample(count).inputs[0]
    module.eval()
    generate_once(module, windows[:1, :p], n, backend.sync)  # warm-up: the first prompt
    ttfts: list[float] = []
    decodes: list[float] = []
    for i in range(count):
        ttft, steps, _ = generate_once(module, windows[i : i + 1, :p], n, backend.sync)
        ttfts.append(ttft)
        decodes.extend(steps)
    where = f"time.perf_counter on {backend.device}, synchronised before and after each call"
    out: dict[str, Any] = {
        "batch_size": 1,
        "kv_cache": True,
        "decoding": "greedy",
        "prompt_tokens": p,
        "new_tokens": n,
        "prompts": count,
        "warmup_prompts": 1,
        "time_to_first_token": quantity(
            sum(ttfts) / len(ttfts),
            "s",
            "measured",
            f"mean over {count} prompts of {p} tokens (first validation windows) of the prefill "
            f"forward pass and the greedy pick of the first new token; {where}",
        ),
        "time_to_first_token_p50_s": percentile(ttfts, 50),
    }
    if decodes:
        out["decode_per_token"] = quantity(
            sum(decodes) / len(decodes),
            "s",
            "measured",
            f"mean of {len(decodes)} single-token forward passes against the KV cache "
            f"({n - 1} per prompt); {where}",
        )
        out["decode_per_token_p50_s"] = percentile(decodes, 50)
        out["decode_per_token_p90_s"] = percentile(decodes, 90)
    return out
