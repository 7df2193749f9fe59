import numpy as np
import pytest
import torch
from transformers import Qwen3Config, Qwen3ForCausalLM

from composer_prime.batch import HintSite
from composer_prime.eval.hint_kl import error_site_kl


def test_error_site_kl_is_the_token_mean_of_reverse_kl():
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(Qwen3Config(vocab_size=50, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1, head_dim=16)).double()
    rng = np.random.default_rng(0)
    sites = []
    for _ in range(3):
        prompt, completion = rng.integers(1, 50, 4).tolist(), rng.integers(1, 50, int(rng.integers(2, 6))).tolist()
        sites.append(HintSite(kind="wrong_answer", student_prompt_ids=prompt, teacher_prompt_ids=prompt + [7, 8],
                              completion_ids=completion, completion_logprobs=[0.0] * len(completion)))
    total, count = 0.0, 0
    for s in sites:
        def logp(prompt):
            logits = model(input_ids=torch.tensor([prompt + s.completion_ids])).logits[0, len(prompt) - 1 : -1]
            return torch.log_softmax(logits, -1)
        ls, lt = logp(s.student_prompt_ids), logp(s.teacher_prompt_ids)
        total += (ls.exp() * (ls - lt)).sum().item()
        count += len(s.completion_ids)
    assert error_site_kl(model, sites) == pytest.approx(total / count, rel=1e-9)
    with pytest.raises(ValueError):
        error_site_kl(model, [])
