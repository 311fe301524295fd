"""The trainer's transformers generator: which decoder samples, and that both keep only the sampled
tokens' log-probabilities of the tempered distribution (what a teacher-forced pass gives)."""

from types import SimpleNamespace

import pytest
import torch
from transformers import GenerationConfig

from train.generation import SampledLogprobs, TransformersGenerator, fast_decoding_refusal
from train.tiny_model import build_tiny_policy

TEMPERATURE = 0.8


@pytest.fixture(scope="module")
def policy():
    model, tokenizer = build_tiny_policy()
    return model.eval(), tokenizer


def stub_trainer(model, tokenizer, **sampling):
    """What `TransformersGenerator` reads of a GRPOTrainer, as TRL builds it."""
    eos = [tokenizer.eos_token_id]
    config = GenerationConfig(do_sample=True, temperature=TEMPERATURE, top_p=1.0, top_k=0, min_p=None,
                              repetition_penalty=1.0, eos_token_id=eos, pad_token_id=tokenizer.pad_token_id,
                              **sampling)
    return SimpleNamespace(temperature=TEMPERATURE, eos_token_ids=eos, _tokenizer=tokenizer, generation_config=config,
                           accelerator=SimpleNamespace(device=torch.device("cpu")))


def check_logprobs(model, contexts, gens, eos_id, max_new_tokens):
    for ctx, gen in zip(contexts, gens):
        assert 1 <= len(gen.ids) == len(gen.logprobs) <= max_new_tokens
        assert eos_id not in gen.ids[:-1]
        with torch.no_grad():
            logits = model(torch.tensor([ctx + gen.ids])).logits[0, len(ctx) - 1:-1].float()
        expected = torch.log_softmax(logits / TEMPERATURE, -1).gather(-1, torch.tensor(gen.ids)[:, None])[:, 0]
        assert torch.allclose(torch.tensor(gen.logprobs), expected, atol=1e-4)


@pytest.mark.parametrize("decoder", ["fast", "hf"])
def test_sampled_logprobs_match_a_teacher_forced_pass(policy, decoder):
    model, tokenizer = policy
    trainer = stub_trainer(model, tokenizer)
    gen = TransformersGenerator(trainer, decoder=decoder)
    assert gen._uses_fast_decoder(model) == (decoder == "fast")
    contexts = [tokenizer("def relu(x):")["input_ids"], tokenizer("import triton")["input_ids"]] * 2
    torch.manual_seed(0)
    with torch.no_grad():
        gens = gen._sample_fitting(model, contexts, 12)
    check_logprobs(model, contexts, gens, tokenizer.eos_token_id, 12)


def test_hf_recorder_follows_early_stops(policy):
    """Every row ends before the budget: the recorder still pairs each token with its own step."""
    model, tokenizer = policy
    ctx = tokenizer("def relu(x):")["input_ids"]
    with torch.no_grad():
        first = int(model(torch.tensor([ctx])).logits[0, -1].argmax())
    recorder = SampledLogprobs(1.0)
    with torch.no_grad():
        out = model.generate(input_ids=torch.tensor([ctx, ctx]), max_new_tokens=8, do_sample=False,
                             eos_token_id=first, pad_token_id=tokenizer.pad_token_id, logits_processor=[recorder])
    new = out[:, len(ctx):]
    assert new.shape[1] == 1  # both rows stopped at once
    lps = recorder.finish(new)
    with torch.no_grad():
        expected = torch.log_softmax(model(torch.tensor([ctx])).logits[0, -1].float(), -1)[first]
    assert lps.shape == (2, 1) and torch.allclose(lps, expected.expand(2, 1), atol=1e-5)


def test_filtered_sampling_goes_to_model_generate(policy):
    model, tokenizer = policy
    assert fast_decoding_refusal(model, stub_trainer(model, tokenizer).generation_config) is None
    trainer = stub_trainer(model, tokenizer)
    trainer.generation_config.top_p = 0.9
    assert "top_p=0.9" in fast_decoding_refusal(model, trainer.generation_config)
    assert not TransformersGenerator(trainer)._uses_fast_decoder(model)
    with pytest.raises(ValueError, match="decoder 'fast' cannot sample here"):
        TransformersGenerator(trainer, decoder="fast")._uses_fast_decoder(model)
    with pytest.raises(ValueError, match="decoder must be one of"):
        TransformersGenerator(trainer, decoder="vllm")
