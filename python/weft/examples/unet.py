"""U-Net with long skip connections, after torchgpipe's U-Net benchmark.

`depth` (5) down levels and 5 up levels. Each level holds `convs` (B)
3x3 Conv-BatchNorm-ReLU units; level i has `base * 2**i` (C * 2^i) channels.
Down: MaxPool 2x2; up: nearest Upsample x2 then a 1x1 conv halving the
channels, concatenated with the skip from the same level. A 1x1 conv maps to
one output channel; the loss is the pixel-wise mean squared error.

Inputs: `images` float32 [batch, 3, size, size], `target` float32
[batch, 1, size, size]; size must be divisible by 2**depth.

Usage: python3 -m weft.examples.unet OUT.onnx [--convs 1 --base 8 --size 64]
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

from weft.examples.common import export


def conv_units(cin, cout, convs):
    layers = []
    for i in range(convs):
        layers += [nn.Conv2d(cin if i == 0 else cout, cout, 3, padding=1,
                             bias=False),
                   nn.BatchNorm2d(cout), nn.ReLU()]
    return nn.Sequential(*layers)


class UNet(nn.Module):
    def __init__(self, depth=5, convs=1, base=8, in_channels=3):
        super().__init__()
        widths = [base * 2 ** i for i in range(depth + 1)]
        self.down = nn.ModuleList()
        cin = in_channels
        for w in widths[:-1]:
            self.down.append(conv_units(cin, w, convs))
            cin = w
        self.bottom = conv_units(widths[-2], widths[-1], convs)
        self.reduce = nn.ModuleList(
            nn.Conv2d(widths[i + 1], widths[i], 1) for i in reversed(range(depth)))
        self.up = nn.ModuleList(
            conv_units(2 * widths[i], widths[i], convs)
            for i in reversed(range(depth)))
        self.head = nn.Conv2d(widths[0], 1, 1)

    def forward(self, images, target):
        skips, x = [], images
        for level in self.down:
            x = level(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.bottom(x)
        for reduce, level in zip(self.reduce, self.up):
            x = reduce(F.interpolate(x, scale_factor=2.0, mode="nearest"))
            x = level(torch.cat([x, skips.pop()], dim=1))
        # Mean squared error, written out: torch 1.13 cannot export mse_loss.
        return ((self.head(x) - target) ** 2).mean()


def build(batch=2, size=64, depth=5, convs=1, base=8, seed=0):
    """The model and a fixed batch (images, target)."""
    torch.manual_seed(seed)
    model = UNet(depth, convs, base)
    images = torch.randn(batch, 3, size, size)
    target = torch.rand(batch, 1, size, size)
    return model, (images, target)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--depth", type=int, default=5)
    parser.add_argument("--convs", type=int, default=1, help="B")
    parser.add_argument("--base", type=int, default=8, help="C")
    args = parser.parse_args(argv)
    model, inputs = build(args.batch, args.size, args.depth, args.convs,
                          args.base)
    print(export(model, inputs, ["images", "target"], args.output))


if __name__ == "__main__":
    main()
