"""Building models on the meta device: torch's factories default to meta during construction
(no device context), and a model that escapes that is built again under ``torch.device("meta")``,
so what is built is what the device context builds."""

from __future__ import annotations

import pytest
import torch
from torch import nn, zeros  # a factory referenced before any build: never redirected

from fxscope.trace.build import build_model

pytestmark = pytest.mark.requires_torch

ORIGINAL_FACTORIES = (torch.zeros, torch.empty, torch.arange, torch.tensor, torch.fft.fftfreq)


class Counted(nn.Module):
    built = 0

    def __init__(self) -> None:
        super().__init__()
        Counted.built += 1
        self.layers = nn.ModuleList(nn.Linear(4, 4) for _ in range(3))
        self.register_buffer("steps", torch.arange(4))
        self.table = torch.zeros(2, 2)  # a plain tensor attribute
        self.freqs = torch.fft.fftfreq(8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers[0](x)


class CapturedFactory(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.register_buffer("mask", zeros(4))  # the module-level name: not redirected

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * self.mask


class ExplicitCpu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.scale = nn.Parameter(torch.ones(4, device="cpu"))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x) * self.scale


class KeepsFactory(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.make = torch.zeros

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


def test_construction_is_on_meta_once_and_restores_the_factories() -> None:
    before = Counted.built
    built = build_model(Counted)
    assert Counted.built == before + 1  # the fast path was enough: built once
    assert built.device == "meta" and built.findings == []
    assert all(t.is_meta for t in [*built.model.parameters(), *built.model.buffers()])
    assert built.model.table.is_meta and built.model.freqs.is_meta
    assert (torch.zeros, torch.empty, torch.arange, torch.tensor, torch.fft.fftfreq) == ORIGINAL_FACTORIES
    assert torch.zeros(1).device.type == "cpu"


def test_a_factory_referenced_before_the_build_still_ends_on_meta() -> None:
    built = build_model(CapturedFactory)
    assert built.device == "meta"
    assert built.model.mask.is_meta and built.model.proj.weight.is_meta


def test_an_explicit_device_is_kept_as_under_the_device_context() -> None:
    built = build_model(ExplicitCpu)
    assert built.device == "meta" and built.model.proj.weight.is_meta
    assert built.model.scale.device.type == "cpu"


def test_a_factory_kept_by_the_model_is_not_redirected_afterwards() -> None:
    built = build_model(KeepsFactory)
    assert built.model.make(2).device.type == "cpu"


def test_exact_meta_builds_under_the_device_context() -> None:
    seen = []

    def factory() -> nn.Module:
        seen.append(torch.get_default_device().type)
        return nn.Linear(2, 2)

    build_model(factory, exact_meta=True)
    build_model(factory)
    assert seen == ["meta", "cpu"]  # the context manager sets the default device; the fast path does not


def test_a_failure_on_meta_still_falls_back_to_cpu_with_one_info_finding() -> None:
    def factory() -> nn.Module:
        width = int(torch.arange(1, 4).sum().item())  # data: fails on meta
        return nn.Linear(width, 2)

    built = build_model(factory)
    assert built.device == "cpu" and built.model.weight.shape == (2, 6)
    assert [f.code for f in built.findings] == ["FXS406"]
    assert (torch.zeros, torch.empty, torch.arange, torch.tensor, torch.fft.fftfreq) == ORIGINAL_FACTORIES
