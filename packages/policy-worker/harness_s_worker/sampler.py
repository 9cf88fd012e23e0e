"""The sampler port: token ids in, sampled ids and their behaviour log-probabilities out.
`GenerateSampler` uses transformers' `generate`; a vLLM engine can implement the same port."""

from __future__ import annotations

from typing import Protocol

import torch


class Sampler(Protocol):
    def sample(self, model: torch.nn.Module, prefix: list[int], sampling: dict, eos_id: int) -> tuple[list[int], list[float], str]: ...


class GenerateSampler:
    """Temperature sampling with `generate`; log-probabilities from the raw logits in fp32 under
    the distribution actually sampled from (top_k 0, top_p 1 at temperature 1 for training)."""

    def sample(self, model, prefix, sampling, eos_id):
        temperature = float(sampling.get("temperature", 1.0))
        max_tokens = int(sampling.get("max_tokens", 64))
        dev = next(model.parameters()).device
        if "seed" in sampling:
            torch.manual_seed(int(sampling["seed"]))
        with torch.no_grad():
            out = model.generate(
                input_ids=torch.tensor([prefix], device=dev),
                attention_mask=torch.ones(1, len(prefix), dtype=torch.long, device=dev),
                max_new_tokens=max_tokens,
                do_sample=temperature > 0,
                temperature=temperature if temperature > 0 else None,
                top_p=float(sampling.get("top_p", 1.0)),
                top_k=0,
                output_logits=True,
                return_dict_in_generate=True,
                eos_token_id=eos_id,
                pad_token_id=eos_id,
            )
        ids = out.sequences[0, len(prefix) :].tolist()
        logprobs = []
        for step, token in enumerate(ids):
            logits = out.logits[step][0].float()
            logits = logits / temperature if temperature > 0 else logits
            logprobs.append(float(torch.log_softmax(logits, dim=-1)[token]))
        finish = "stop" if ids and ids[-1] == eos_id else "length"
        return ids, logprobs, finish
