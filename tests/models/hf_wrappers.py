"""User modules wrapping small transformers models (no weights, no hub access): findings inside
transformers are anchored at the line here that calls into it."""

from torch import nn
from transformers import GPT2Config, GPT2Model, LlamaConfig, LlamaModel


class TinyGPT2(nn.Module):
    def __init__(self):
        super().__init__()
        config = GPT2Config(
            n_layer=2, n_embd=64, n_head=2, vocab_size=100, n_positions=64, bos_token_id=0, eos_token_id=0,
        )
        self.gpt2 = GPT2Model(config)
        self.head = nn.Linear(64, 100)

    def forward(self, input_ids):
        hidden = self.gpt2(input_ids).last_hidden_state  # ANCHOR gpt2
        return self.head(hidden)


class TinyLlama(nn.Module):
    def __init__(self):
        super().__init__()
        config = LlamaConfig(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=100, max_position_embeddings=64,
        )
        self.llama = LlamaModel(config)

    def forward(self, input_ids):
        return self.llama(input_ids=input_ids).last_hidden_state  # ANCHOR llama
