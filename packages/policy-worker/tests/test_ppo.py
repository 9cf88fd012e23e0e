"""The update's arithmetic pinned on small hand-computed cases: every registered aggregation, the
clipped surrogate and the k3 KL term (issue 30, item 20: a flipped KL sign, sequence-mean computed
as token-mean, and `constant` ignoring its normaliser each fail one of these)."""

import math

import pytest
import torch
from conftest import SPEC, datum_from

from harness_s_worker import ppo

NEW = torch.tensor([-1.0, -0.5, -2.0])
OLD = torch.tensor([-1.2, -0.5, -2.0])
REF = torch.tensor([-0.8, -0.7, -2.0])
MASK = torch.tensor([1.0, 1.0, 0.0])


def test_surrogate_clips_the_ratio_and_masks_environment_tokens():
    surr, clip, _ = ppo.datum_terms(NEW, OLD, None, MASK, 2.0, ppo.Loss(clip_low=0.2, clip_high=0.2))
    # Token 0: ratio e^0.2 = 1.2214 > 1.2, so the clipped 1.2 × 2 counts; token 1: ratio 1; token 2: masked.
    assert surr.tolist() == pytest.approx([-2.4, -2.0, 0.0])
    assert clip.tolist() == [1.0, 0.0, 0.0]
    low, low_clip, _ = ppo.datum_terms(OLD, NEW, None, MASK, -1.0, ppo.Loss(clip_low=0.1, clip_high=0.3))
    # Ratio e^-0.2 = 0.8187 with a negative advantage: -min(-0.8187, -0.9) = 0.9 (clipped at 1 - 0.1).
    assert low.tolist() == pytest.approx([0.9, 1.0, 0.0])
    assert low_clip.tolist() == [1.0, 0.0, 0.0]


def test_token_weights_scale_each_tokens_advantage():
    # Issue 59 item 3: a row re-scored in H0's context carries per-token weights (0.5, 2) on its advantage.
    surr, clip, _ = ppo.datum_terms(
        NEW, OLD, None, MASK, 2.0 * torch.tensor([0.5, 2.0, 1.0]), ppo.Loss(clip_low=0.2, clip_high=0.2)
    )
    # Token 0: clipped 1.2 × (2 × 0.5); token 1: ratio 1 × (2 × 2); token 2: masked.
    assert surr.tolist() == pytest.approx([-1.2, -4.0, 0.0])
    assert clip.tolist() == [1.0, 0.0, 0.0]


def test_the_k3_kl_term_is_the_estimate_of_kl_to_the_reference_and_a_cost():
    _, _, kl = ppo.datum_terms(NEW, OLD, REF, MASK, 1.0, ppo.Loss(kl_coef=0.5))
    k3 = [math.exp(0.2) - 0.2 - 1, math.exp(-0.2) + 0.2 - 1, 0.0]  # e^(ref-new) - (ref-new) - 1
    assert kl.tolist() == pytest.approx(k3, abs=1e-6)
    assert all(k >= 0 for k in kl.tolist())
    surr = torch.tensor([-2.4, -2.0, 0.0])
    # The penalty raises the loss to minimise: 0.25 × (-4.4 + 0.5 × Σk3).
    assert float(ppo.datum_loss(surr, kl, 0.25, ppo.Loss(kl_coef=0.5))) == pytest.approx(
        0.25 * (-4.4 + 0.5 * sum(k3)), abs=1e-6
    )
    assert float(ppo.datum_loss(surr, kl, 0.25, ppo.Loss(kl_coef=0.0))) == pytest.approx(0.25 * -4.4)


@pytest.mark.parametrize(
    ("agg", "normaliser", "weights"),
    [
        ("token-mean", None, [1 / 3, 1 / 3]),  # Σ over the 3 trained tokens of both datums
        ("sequence-mean", None, [1 / (2 * 2), 1 / (2 * 1)]),  # the mean of each datum's own mean
        ("constant", 10.0, [1 / (2 * 10), 1 / (2 * 10)]),  # Dr. GRPO: datums × the given normaliser
        ("constant", None, [1 / (2 * 5), 1 / (2 * 5)]),  # no normaliser: the longest datum's length
    ],
)
def test_each_aggregation_weighs_datums_as_registered(agg, normaliser, weights):
    masks = [torch.tensor([0.0, 1.0, 1.0]), torch.tensor([0.0, 1.0, 0.0, 0.0, 0.0])]
    assert ppo.datum_weights(masks, ppo.Loss(agg=agg, normaliser=normaliser)) == pytest.approx(weights)


def test_an_update_reports_the_loss_computed_by_hand_from_the_scored_logprobs(client):
    # Prepare: two sampled turns as datums with chosen behaviour log-probabilities (ratios away from 1).
    client.put("/v2/policies/p1", json=SPEC)
    datums = []
    for i, advantage in enumerate([1.5, -0.5]):
        sample = client.post(
            "/v2/policies/p1/sample",
            json={
                "episode_id": f"e{i}",
                "messages": [{"role": "user", "content": f"hi {i}"}],
                "sampling": {"max_tokens": 4, "seed": i},
            },
        ).json()
        d = datum_from(sample, advantage, f"s{i}")
        d["behaviour_logprobs"] = [
            lp - 0.3 * (j % 2) if m else lp
            for j, (lp, m) in enumerate(zip(d["behaviour_logprobs"], d["loss_mask"], strict=True))
        ]
        datums.append(d)
    new = [
        client.post("/v2/policies/p1/score", json={"sequences": [{"ids": d["ids"]}]}).json()["logprobs"][0]
        for d in datums
    ]
    loss = {"clip_low": 0.2, "clip_high": 0.28, "agg": "sequence-mean", "kl_coef": 0.1}
    # Act
    job = client.post(
        "/v2/policies/p1/updates",
        json={"base_version": 0, "datums": datums, "loss": loss, "optim": {"lr": 1e-3}},
        headers={"Idempotency-Key": "k"},
    ).json()
    for _ in range(200):
        done = client.get(f"/v2/updates/{job['update_id']}?wait=5").json()
        if done["status"] != "queued" and done["status"] != "running":
            break
    # Assess: the first epoch's loss, by hand (the adapter starts at the base model: KL 0 there).
    expected = 0.0
    for d, lp in zip(datums, new, strict=True):
        terms = [
            -min(math.exp(n - o) * d["advantage"], min(max(math.exp(n - o), 1 - 0.2), 1 + 0.28) * d["advantage"])
            for n, o, m in zip(lp, d["behaviour_logprobs"], d["loss_mask"], strict=True)
            if m
        ]
        expected += sum(terms) / (len(datums) * len(terms))
    assert done["status"] == "done", done
    assert done["metrics"]["epochs"][0]["loss"] == pytest.approx(expected, rel=1e-4, abs=1e-6)
    assert done["metrics"]["epochs"][0]["kl"] == pytest.approx(0.0, abs=1e-6)
