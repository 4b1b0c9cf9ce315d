"""The local transformers backend with a real (tiny, untrained) model built here from a config.

An untrained model writes garbage, so these tests check the plumbing: strings come back,
token counts are real, the chat template is used when present, and parse errors are recorded.
"""

import pytest

pytest.importorskip("transformers")

import torch  # noqa: E402
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast  # noqa: E402

from littlekit.judge.annotate import annotate  # noqa: E402
from littlekit.judge.backends import BackendError
from littlekit.judge.local_backend import TransformersBackend  # noqa: E402
from littlekit.judge.prompts import JudgePrompt

SENTENCES = [
    "The cat sat on the mat.",
    "Cells divide by mitosis and meiosis.",
    '{"rationale": "short words", "band": "K5"}',
    "system user assistant: which grade band is this text for?",
]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def tiny_tokenizer(chat_template: str | None) -> PreTrainedTokenizerFast:
    specials = ["<pad>", "<eos>", "<unk>", "<|system|>", "<|user|>", "<|assistant|>"]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(SENTENCES, trainer)
    tok.decoder = decoders.ByteLevel()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    fast.chat_template = chat_template
    return fast


def tiny_model(vocab_size: int) -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                         pad_token_id=0, eos_token_id=1, bos_token_id=1)
    return LlamaForCausalLM(config)


@pytest.fixture(scope="module")
def backend():
    tokenizer = tiny_tokenizer(CHAT_TEMPLATE)
    return TransformersBackend(tiny_model(len(tokenizer)), tokenizer, name="tiny-llama", max_new_tokens=6,
                               device="cpu")


MESSAGES = [{"role": "system", "content": "judge the band"}, {"role": "user", "content": "The cat sat."}]


def test_chat_template_is_used(backend):
    assert backend.prompt_text(MESSAGES) == "<|system|>judge the band<|user|>The cat sat.<|assistant|>"


@pytest.fixture(scope="module")
def plain():
    tokenizer = tiny_tokenizer(None)
    return TransformersBackend(tiny_model(len(tokenizer)), tokenizer, name="plain", max_new_tokens=4,
                               device="cpu")


def test_plain_prompt_without_a_template(plain):
    assert plain.prompt_text(MESSAGES) == "system: judge the band\n\nuser: The cat sat.\n\nassistant:"
    assert isinstance(plain.complete(MESSAGES).text, str)


def test_greedy_completion_is_a_deterministic_string(backend):
    first = backend.complete(MESSAGES)
    second = backend.complete(MESSAGES)
    assert isinstance(first.text, str) and first == second
    prompt_ids = backend.tokenizer(backend.prompt_text(MESSAGES), add_special_tokens=False)["input_ids"]
    assert first.input_tokens == len(prompt_ids)
    assert 1 <= first.output_tokens <= 6
    assert "tiny-llama" in repr(backend)


def test_annotate_records_parse_errors_from_garbage(backend):
    prompts = [JudgePrompt("language", "judge the language"), JudgePrompt("context", "judge the context")]
    records = annotate(["The cat sat on the mat.", "Cells divide."], prompts, backend)
    assert len(records) == 2
    for record in records:
        assert record["judge"]["model"] == "tiny-llama"
        assert set(record["votes"]) == {"language", "context"}
        for name, band in record["votes"].items():
            # garbage either happens to parse as a band or is recorded as a parse error
            assert band is not None or record["judge"]["errors"][name].startswith("parse:")
        assert record["judge"]["usage"]["output_tokens"] > 0


def test_a_failing_request_is_returned_as_an_error(plain):
    results = plain.complete_many([[{"role": "user"}], MESSAGES])  # the first has no content
    assert isinstance(results[0], BackendError) and "KeyError" in str(results[0])
    assert isinstance(results[1].text, str)
