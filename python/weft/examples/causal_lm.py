"""A Hugging Face causal language model as weft trains it: `CausalLMLoss(
model)(idx, targets)` is the mean next-token cross-entropy (nats) of
`model(input_ids=idx).logits` ([B, S, V]) against `targets` ([B, S] int64),
so the exported graph ends in the loss. Used with transformers' *ForCausalLM
classes (tests: test_hf_models.py, test_hf_legacy_exports.py).
`PaddedLMLoss(model)(idx, mask, targets)` passes `attention_mask=mask` too
([B, S] int64, 1 for a token and 0 for padding), so the padding mask is a
graph input; the loss still averages every position (the targets decide
what is learned)."""

import torch


class CausalLMLoss(torch.nn.Module):
    """Wraps `model` (as submodule `m`: its parameters are named `m.*`)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.m = model

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.m(input_ids=idx).logits
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class PaddedLMLoss(CausalLMLoss):
    """CausalLMLoss with the attention mask an input."""

    def forward(self, idx: torch.Tensor, mask: torch.Tensor,  # type: ignore
                targets: torch.Tensor) -> torch.Tensor:
        logits = self.m(input_ids=idx, attention_mask=mask).logits
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
