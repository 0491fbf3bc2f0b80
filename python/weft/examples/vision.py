"""torchvision classifiers with a cross-entropy loss, for the numerical
oracles: each a different op mix, small enough to train a step on a CPU.

    densenet      dense blocks: concatenation, BN-ReLU-conv (DenseNet-BC)
    densenet121   the full DenseNet-121 (deep: float32 near-ties, see
                  weft.kinks)
    mobilenet_v2  depthwise separable convolutions, ReLU6, inverted residuals
    mobilenet_v3  MobileNetV3-Small: HardSwish, squeeze-excitation with
                  HardSigmoid gates
    efficientnet  EfficientNet-B0: squeeze-excitation, SiLU, depthwise convs
    shufflenet    channel shuffle (reshape-transpose-reshape), channel split
    resnext       grouped convolutions (cardinality 8)
    squeezenet    fire modules: 1x1/3x3 expand concatenated, ceil-mode pools
    regnet_x      RegNetX-400MF: grouped convolutions throughout (deep: a
                  float32 near-tie in its last block, see weft.kinks)
    vit           a vision transformer: patch conv, class token, attention

Dropout and stochastic depth are 0 (torch's RNG cannot be matched). Inputs:
`images` float32 [batch, 3, size, size] (size 64, 32 for vit), `labels`
int64 [batch] of 10 classes.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

MODELS = ("densenet", "densenet121", "mobilenet_v2", "mobilenet_v3",
          "efficientnet", "shufflenet", "resnext", "squeezenet", "regnet_x",
          "vit")


class Classify(nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, images, labels):
        return F.cross_entropy(self.net(images), labels)


def network(name: str) -> nn.Module:
    tv = torchvision.models
    if name == "densenet":
        return tv.DenseNet(growth_rate=8, block_config=(2, 2, 2),
                           num_init_features=16, bn_size=2, num_classes=10)
    if name == "densenet121":
        return tv.densenet121(num_classes=10)
    if name == "mobilenet_v2":
        return tv.mobilenet_v2(num_classes=10, width_mult=0.25)
    if name == "mobilenet_v3":
        return tv.mobilenet_v3_small(num_classes=10, width_mult=0.5)
    if name == "efficientnet":
        return tv.efficientnet_b0(num_classes=10, stochastic_depth_prob=0.0)
    if name == "shufflenet":
        return tv.shufflenet_v2_x0_5(num_classes=10)
    if name == "resnext":
        return tv.resnet.ResNet(tv.resnet.Bottleneck, [1, 1, 1, 1],
                                num_classes=10, groups=8, width_per_group=4)
    if name == "squeezenet":
        return tv.squeezenet1_1(num_classes=10)
    if name == "regnet_x":
        return tv.regnet_x_400mf(num_classes=10)
    if name == "vit":
        return tv.VisionTransformer(image_size=32, patch_size=8, num_layers=2,
                                    num_heads=2, hidden_dim=32, mlp_dim=64,
                                    num_classes=10)
    raise ValueError(f"unknown model '{name}'; expected one of {MODELS}")


def build(name: str, batch: int = 8, seed: int = 0, data_seed: int = 1):
    """The model (random init from `seed`, dropout 0) and one batch
    (images, labels) from `data_seed`."""
    torch.manual_seed(seed)
    net = network(name)
    for module in net.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    size = 32 if name == "vit" else 64
    generator = torch.Generator().manual_seed(data_seed)
    images = torch.randn(batch, 3, size, size, generator=generator)
    labels = torch.randint(0, 10, (batch,), generator=generator)
    return Classify(net), (images, labels)
