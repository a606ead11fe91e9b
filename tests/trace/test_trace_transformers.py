"""The tracing core on transformers models built from small configs (no weights, no hub):
never crashes, reports graphs or failures, and anchors findings inside transformers at the user
code that called into it."""

from __future__ import annotations

import json
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")

from trace_support import MODELS_DIR, assert_located, is_user_file, model_class, run, statuses  # noqa: E402

pytestmark = [pytest.mark.requires_torch, pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")]


def _site_file(path: str) -> bool:
    return os.path.isabs(path) and os.path.exists(path) and not is_user_file(path)


CONFIGS = {
    "gpt2": lambda t: t.GPT2Model(t.GPT2Config(
        n_layer=2, n_embd=64, n_head=2, vocab_size=100, n_positions=64, bos_token_id=0, eos_token_id=0)),
    "bert": lambda t: t.BertModel(t.BertConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, vocab_size=100,
        max_position_embeddings=64)),
    "llama": lambda t: t.LlamaModel(t.LlamaConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        vocab_size=100, max_position_embeddings=64)),
    "t5": lambda t: t.T5Model(t.T5Config(
        d_model=64, d_ff=128, num_layers=2, num_decoder_layers=2, num_heads=2, d_kv=32, vocab_size=100)),
    "vit": lambda t: t.ViTModel(t.ViTConfig(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=2, intermediate_size=128, image_size=32,
        patch_size=8)),
}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_transformers_model_analyzes(name: str) -> None:
    built, report = run(lambda: CONFIGS[name](transformers))
    assert built.device == "meta"
    assert report.status in ("traced", "partial", "failed")
    assert len(report.collection) > 0 or any(m["status"] == "failed" for m in report.modules)
    rows = statuses(report)
    assert set(rows.values()) <= {"traced", "leaf", "failed", "unvisited"}
    assert rows[""] in ("traced", "failed")
    for path, module in built.model.named_modules():
        if type(module).__name__ in ("ModuleList", "ModuleDict"):
            assert rows[path] != "failed"
    for finding in report.findings:
        loc = finding.location
        assert _site_file(loc.file), loc  # nothing of this model is user code
        assert loc.line >= 1 and (loc.column is None or loc.column >= 1)
        assert finding.anchor is None  # no user frame on the stack
        assert finding.scopes or finding.code in ("FXS301", "FXS302")
    json.dumps(report.to_json(graphs=True))


def test_concrete_args_remove_placeholder_findings() -> None:
    """`input_ids=None, inputs_embeds=None` both placeholders: the model's own check fails;
    with the usual concrete args it gets past it."""
    factory = lambda: CONFIGS["llama"](transformers)  # noqa: E731
    with pytest.raises(ValueError) as check:  # the model's own check, in the installed transformers
        factory()(input_ids=None, inputs_embeds=None)
    text = str(check.value)
    _, report = run(factory)
    assert any(text in f.message for f in report.findings), [f.message for f in report.findings]
    _, report = run(factory, concrete_args={"inputs_embeds": None, "attention_mask": None,
                                            "position_ids": None, "past_key_values": None,
                                            "use_cache": False})
    assert not any(text in f.message for f in report.findings)


@pytest.mark.parametrize("name,attr", [("TinyGPT2", "gpt2"), ("TinyLlama", "llama")])
def test_findings_in_transformers_are_anchored_at_the_user_call(name: str, attr: str) -> None:
    built, report = run(model_class("hf_wrappers", name))
    rows = statuses(report)
    assert rows[""] == "traced" and rows[attr] == "failed"
    assert report.status == "partial"
    root = report.collection.graph_for("")
    assert attr in [n.target for n in root.nodes if n.op == "call_module"]
    assert report.findings
    call = {"gpt2": "self.gpt2(input_ids)", "llama": "self.llama(input_ids=input_ids)"}[attr]
    for finding in report.findings:
        assert _site_file(finding.location.file), finding.location
        assert finding.anchor is not None, finding
        assert_located(finding.anchor, "hf_wrappers.py", f"ANCHOR {attr}", call)
        assert finding.to_json()["anchor"]["file"] == str(MODELS_DIR / "hf_wrappers.py")
        assert all(path == attr or path.startswith(attr + ".") for path, _ in finding.scopes)
    # Every layer is explored in the root trace: later layers' problems are scoped to them too.
    scopes = {path for f in report.findings for path, _ in f.scopes}
    assert any(".1." in path for path in scopes), scopes
