"""CPU per pre-fill forward pass of the tiny model: two rows with one padded (the masked attention
path, as one pass over prompts of different lengths takes) against the same rows unpadded (the
causal kernel, as one pass per prompt shape takes). Run with the worker's venv:
packages/policy-worker/.venv/bin/python scripts/prefill-bench.py"""

import time

import torch
from transformers import DynamicCache

from harness_s_worker.tiny import build_tiny

torch.set_num_threads(1)
model, tokenizer = build_tiny(0)
model.eval()
with torch.no_grad():  # warm-up
    model(input_ids=torch.randint(5, len(tokenizer), (2, 256)), past_key_values=DynamicCache(), use_cache=True)
for length in (250, 500, 1000, 1500, 3000):
    ids = torch.randint(5, len(tokenizer), (2, length))
    padded = torch.ones(2, length, dtype=torch.long)
    padded[1, :50] = 0
    seconds = {}
    for name, mask in (("unpadded", None), ("padded", padded)):
        started = time.process_time()
        with torch.no_grad():
            for _ in range(3):
                model(input_ids=ids, attention_mask=mask, past_key_values=DynamicCache(), use_cache=True)
        seconds[name] = (time.process_time() - started) / 3
    print(f"{length} tokens: {seconds['padded']:.3f} s CPU a pass padded, {seconds['unpadded']:.3f} s unpadded ({seconds['padded'] / seconds['unpadded']:.1f}x)")
