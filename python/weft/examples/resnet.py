"""torchvision resnet18 (random init) with a cross-entropy loss.

Exported in training mode: BatchNormalization uses batch statistics and
returns updated running statistics (state, not parameters).

Inputs: `images` float32 [batch, 3, size, size], `labels` int64 [batch].

Usage: python3 -m weft.examples.resnet OUT.onnx [--batch 4 --size 64 --classes 10]
"""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

from weft.examples.common import export


class ResNetLoss(nn.Module):
    def __init__(self, classes):
        super().__init__()
        self.net = torchvision.models.resnet18(num_classes=classes)

    def forward(self, images, labels):
        return F.cross_entropy(self.net(images), labels)


def build(batch=4, size=64, classes=10, seed=0):
    """The model and a fixed batch (images, labels)."""
    torch.manual_seed(seed)
    model = ResNetLoss(classes)
    images = torch.randn(batch, 3, size, size)
    labels = torch.randint(0, classes, (batch,))
    return model, (images, labels)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--classes", type=int, default=10)
    args = parser.parse_args(argv)
    model, inputs = build(args.batch, args.size, args.classes)
    print(export(model, inputs, ["images", "labels"], args.output))


if __name__ == "__main__":
    main()
