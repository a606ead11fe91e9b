"""Names in the arguments of a construction, read from the source without running it
(:mod:`fxscope.project.callsites`): what each name is bound to, and what cannot be read."""

from __future__ import annotations

import textwrap

from fxscope.model.recipe import Call, Lit, Ref, RefExpr, Seq
from fxscope.project.callsites import CallSite, python_call_sites


def _sites(source: str) -> dict[str, CallSite]:
    return {s.expr.func.path[-1]: s for s in python_call_sites(textwrap.dedent(source))}


def test_a_parameter_is_its_default_and_kwargs_is_empty() -> None:
    sites = _sites("""
        def resnet18(num_classes=10, widths=(64, 128), **kwargs):
            return ResNet(BasicBlock, [2, 2], num_classes, widths=widths, **kwargs)
    """)
    site = sites["ResNet"]
    assert site.holes == ()
    assert site.expr == Call(Ref("", ("ResNet",)), (RefExpr(Ref("", ("BasicBlock",))), Seq("list", (Lit(2), Lit(2))),
                                                    Lit(10)),
                             (("widths", Seq("tuple", (Lit(64), Lit(128)))),))


def test_what_the_file_passes_for_a_parameter_without_default() -> None:
    sites = _sites("""
        import argparse

        def build(size):
            return Net(size=size)

        def main(opts):
            net = build(opts.width * 2)
            return Model(depth=opts.depth, mode="a" if opts.fast else "b")

        if __name__ == "__main__":
            parser = argparse.ArgumentParser()
            parser.add_argument("--depth", type=int, default="3")
            parser.add_argument("--fast", action="store_true")
            parser.add_argument("--width", type=int, default=8)
            main(parser.parse_args())
    """)
    assert sites["Model"].expr.kwargs == (("depth", Lit(3)), ("mode", Lit("b")))
    assert sites["Net"].expr.kwargs == (("size", Lit(16)),)  # two calls deep


def test_a_dict_of_defaults_naming_the_parameters() -> None:
    sites = _sites("""
        def other_defaults():
            return dict(image_size=32, lr=0.1)

        def model_defaults():
            return dict(image_size=64, channels=128, depth=2)

        def create(image_size, channels, depth):
            return UNet(image_size=image_size, channels=channels, depth=depth)
    """)
    assert sites["UNet"].expr.kwargs == (("image_size", Lit(64)), ("channels", Lit(128)), ("depth", Lit(2)))


def test_what_cannot_be_read_is_a_hole_and_a_changed_name_is_not_read() -> None:
    sites = _sites("""
        def create(image_size=64, res="16,8"):
            ds = []
            for r in res.split(","):
                ds.append(image_size // int(r))
            return UNet(image_size, tuple(ds), channels=len(res), depth=2, heads=4)
    """)
    site = sites["UNet"]
    assert site.holes == ((1, "tuple(ds)"), ("channels", "len(res)"))
    assert site.expr.args == (Lit(64), Lit(None)) and site.expr.kwargs == (("depth", Lit(2)), ("heads", Lit(4)))
    assert CallSite.from_json(site.to_json()) == site


def test_a_construction_mostly_unread_is_not_a_site() -> None:
    sites = _sites("""
        def make(data):
            return Tagger(len(data), data.width, dim=4)
    """)
    assert "Tagger" not in sites


def test_an_if_with_a_known_test_binds_only_in_the_branch_that_runs() -> None:
    sites = _sites("""
        def create(image_size=64, channel_mult="", learn_sigma=False):
            if channel_mult == "":
                if image_size == 64:
                    channel_mult = (1, 2, 3, 4)
                elif image_size == 256:
                    channel_mult = (1, 1, 2, 2, 4, 4)
                    blocks = Decoder(width=256)
                else:
                    raise ValueError(image_size)
            else:
                channel_mult = tuple(int(m) for m in channel_mult.split(","))
            return UNet(image_size, channel_mult=channel_mult, out_channels=3 if not learn_sigma else 6)
    """)
    assert sites["UNet"].holes == ()
    assert sites["UNet"].expr.kwargs == (("channel_mult", Seq("tuple", (Lit(1), Lit(2), Lit(3), Lit(4)))),
                                         ("out_channels", Lit(3)))
    assert sites["Decoder"].expr.kwargs == (("width", Lit(256)),)  # a branch that does not run still shows how
