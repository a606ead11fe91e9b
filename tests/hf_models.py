"""Transformers models built from small configs (no weights, no hub): shared by the shape-aware
tracing tests and ``benchmarks/hf_coverage.py``."""

from __future__ import annotations

from typing import Callable

import torch.nn as nn


def small_hf_models() -> dict[str, Callable[[], nn.Module]]:
    """Model builders from small configs (transformers is imported here: it is slow to import)."""
    import transformers as t

    text = dict(vocab_size=100, max_position_embeddings=64)
    return {
        "gpt2": lambda: t.GPT2Model(t.GPT2Config(
            n_layer=2, n_embd=64, n_head=2, vocab_size=100, n_positions=64, bos_token_id=0, eos_token_id=0)),
        "bert": lambda: t.BertModel(t.BertConfig(
            hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, **text)),
        "llama": lambda: t.LlamaModel(t.LlamaConfig(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, **text)),
        "t5": lambda: t.T5Model(t.T5Config(
            d_model=64, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=2, d_kv=32, vocab_size=100,
            decoder_start_token_id=0)),
        "vit": lambda: t.ViTModel(t.ViTConfig(
            hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, image_size=32,
            patch_size=8)),
        "bart": lambda: t.BartModel(t.BartConfig(
            d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
            encoder_ffn_dim=128, decoder_ffn_dim=128, **text)),
        "qwen2": lambda: t.Qwen2Model(t.Qwen2Config(
            hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, **text)),
        "convnext": lambda: t.ConvNextModel(t.ConvNextConfig(
            hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 1, 1], image_size=32)),
        "whisper": lambda: t.WhisperModel(t.WhisperConfig(
            d_model=64, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
            encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=16, max_source_positions=16,
            max_target_positions=32, vocab_size=100, pad_token_id=0, bos_token_id=0, eos_token_id=0,
            decoder_start_token_id=0)),
        "distilbert": lambda: t.DistilBertModel(t.DistilBertConfig(
            dim=64, n_layers=2, n_heads=2, hidden_dim=128, **text)),
    }
