"""Key/value caches written at traced positions, as LLM decoders do (gpt-fast's ``KVCache``):
``self.k_cache[:, :, input_pos] = k`` writes into a buffer, which plain fx records as one
``__setitem__`` node; shape-aware tracing (which proxies buffers) must record it too, never report
FXS105. The cache class has no ``forward`` of its own: the attention calls its ``update``."""

import torch
from torch import nn

INPUTS = {
    "CachedAttention": {"x": [1, 3, 8], "input_pos": {"shape": [3], "dtype": "int64"}},
    "WriteThenRead": {"k": [1, 2, 3, 4], "input_pos": {"shape": [3], "dtype": "int64"}},
    "CounterBuffer": {"x": [2, 4]},
}


class KVCache(nn.Module):  # FXS107 kv-cache
    def __init__(self, heads=2, max_len=16, head_dim=4):
        super().__init__()
        self.register_buffer("k_cache", torch.zeros(1, heads, max_len, head_dim))
        self.register_buffer("v_cache", torch.zeros(1, heads, max_len, head_dim))

    def update(self, input_pos, k, v):
        self.k_cache[:, :, input_pos] = k
        self.v_cache[:, :, input_pos] = v
        return self.k_cache, self.v_cache


class CachedAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(8, 24)
        self.kv_cache = KVCache()
        self.out = nn.Linear(8, 8)

    def forward(self, x, input_pos):
        b, t = x.shape[0], x.shape[1]
        q, k, v = self.qkv(x).split(8, dim=-1)
        q = q.view(b, t, 2, 4).transpose(1, 2)
        k = k.view(b, t, 2, 4).transpose(1, 2)
        v = v.view(b, t, 2, 4).transpose(1, 2)
        k, v = self.kv_cache.update(input_pos, k, v)
        y = nn.functional.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(b, t, 8))


class WriteThenRead(nn.Module):
    """The write traces; reading the buffer back sliced by a traced size does not (plain fx: slice
    indices must be integers), unless shape-aware tracing answers the size."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 2, 16, 4))

    def forward(self, k, input_pos):
        self.cache[:, :, input_pos] = k
        return self.cache[:, :, : input_pos.shape[0]] * 2  # FXS104 read


class CounterBuffer(nn.Module):
    """A write with a concrete index into a buffer: plain fx writes the real tensor."""

    def __init__(self):
        super().__init__()
        self.register_buffer("seen", torch.zeros(4))

    def forward(self, x):
        self.seen[0] = 1.0
        return x * self.seen
