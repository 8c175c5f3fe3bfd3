"""Networks for dnngraph.torch, built without downloads (random weights, seeded): ResNet-50 and
MobileNetV2 as torchvision defines them (weights=None), and a BERT-base-width transformer encoder
(6 layers, hidden 768, 12 heads, FFN 3072, GELU, post-norm, F.scaled_dot_product_attention).
Every constructor takes smaller sizes, for tests on the CPU. Needs torch only."""
from __future__ import annotations

from typing import List, Optional, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F


def _randomize_batchnorms(model: nn.Module, seed: int) -> nn.Module:
    """Running statistics and affine parameters away from 0/1, so that the norms are exercised."""
    gen = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm2d, nn.LayerNorm)):
            with torch.no_grad():
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.copy_(torch.rand(m.num_features, generator=gen) * 0.2 - 0.1)
                    m.running_var.copy_(torch.rand(m.num_features, generator=gen) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) * 0.5 + 0.75)
                m.bias.copy_(torch.rand(m.bias.shape, generator=gen) * 0.2 - 0.1)
    return model


class Bottleneck(nn.Module):
    """ResNet v1.5 bottleneck: 1x1, 3x3 (stride here), 1x1 with 4x expansion, projection shortcut."""

    def __init__(self, cin: int, width: int, stride: int) -> None:
        super().__init__()
        cout = width * 4
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2, self.bn2 = nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.down: Optional[nn.Sequential] = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block on x [N, C, H, W]."""
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


class ResNet(nn.Module):
    """ResNet with bottleneck blocks: stem 7x7/2 + max pool, four stages, global average pool, FC."""

    def __init__(self, layers: Sequence[int] = (3, 4, 6, 3), base: int = 64, num_classes: int = 1000) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, base, 7, 2, 3, bias=False), nn.BatchNorm2d(base), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        blocks: List[nn.Module] = []
        cin = base
        for i, count in enumerate(layers):
            width = base * 2 ** i
            for j in range(count):
                blocks.append(Bottleneck(cin, width, 2 if (j == 0 and i > 0) else 1))
                cin = width * 4
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits [N, classes] of images x [N, 3, H, W]."""
        y = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


def resnet50(seed: int = 0, layers: Sequence[int] = (3, 4, 6, 3), base: int = 64, num_classes: int = 1000) -> ResNet:
    """ResNet-50 (torchvision's resnet50(weights=None)); smaller with fewer layers or a narrower base."""
    torch.manual_seed(seed)
    return _randomize_batchnorms(ResNet(layers, base, num_classes), seed).eval()


def _conv_bn(cin: int, cout: int, kernel: int, stride: int = 1, groups: int = 1, act: bool = True) -> nn.Sequential:
    layers: List[nn.Module] = [nn.Conv2d(cin, cout, kernel, stride, kernel // 2, groups=groups, bias=False),
                               nn.BatchNorm2d(cout)]
    if act:
        layers.append(nn.ReLU6())
    return nn.Sequential(*layers)


class InvertedResidual(nn.Module):
    """MobileNetV2 block: 1x1 expansion, 3x3 depthwise, 1x1 linear projection; residual when shapes match."""

    def __init__(self, cin: int, cout: int, stride: int, expand: int) -> None:
        super().__init__()
        hidden = cin * expand
        layers: List[nn.Module] = [_conv_bn(cin, hidden, 1)] if expand != 1 else []
        layers += [_conv_bn(hidden, hidden, 3, stride, groups=hidden), _conv_bn(hidden, cout, 1, act=False)]
        self.body = nn.Sequential(*layers)
        self.residual = stride == 1 and cin == cout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The block on x [N, C, H, W]."""
        return x + self.body(x) if self.residual else self.body(x)


class MobileNetV2(nn.Module):
    """MobileNetV2 (width 1.0 by default): torchvision's layer table."""

    SETTINGS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]

    def __init__(self, width: float = 1.0, num_classes: int = 1000) -> None:
        super().__init__()

        def ch(c: int) -> int:
            return max(8, int(c * width + 4) // 8 * 8)

        cin = ch(32)
        layers: List[nn.Module] = [_conv_bn(3, cin, 3, 2)]
        for t, c, n, s in self.SETTINGS:
            for i in range(n):
                layers.append(InvertedResidual(cin, ch(c), s if i == 0 else 1, t))
                cin = ch(c)
        last = max(1280, ch(1280))
        layers.append(_conv_bn(cin, last, 1))
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(last, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Logits [N, classes] of images x [N, 3, H, W]."""
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


def mobilenet_v2(seed: int = 0, width: float = 1.0, num_classes: int = 1000) -> MobileNetV2:
    """MobileNetV2 (torchvision's mobilenet_v2(weights=None), without dropout: inference)."""
    torch.manual_seed(seed)
    return _randomize_batchnorms(MobileNetV2(width, num_classes), seed).eval()


class EncoderLayer(nn.Module):
    """BERT's layer: self-attention (fused QKV projection, SDPA), residual + LayerNorm, GELU FFN,
    residual + LayerNorm."""

    def __init__(self, hidden: int, heads: int, ffn: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.ln1, self.ln2 = nn.LayerNorm(hidden, eps=1e-12), nn.LayerNorm(hidden, eps=1e-12)
        self.fc1, self.fc2 = nn.Linear(hidden, ffn), nn.Linear(ffn, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The layer on x [B, S, hidden]."""
        b, s, h = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, h // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, h)
        x = self.ln1(x + self.proj(a))
        return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))


class Encoder(nn.Module):
    """A stack of encoder layers (BERT-base width by default: 6 x [768, 12 heads, 3072])."""

    def __init__(self, layers: int = 6, hidden: int = 768, heads: int = 12, ffn: int = 3072) -> None:
        super().__init__()
        self.layers = nn.Sequential(*(EncoderLayer(hidden, heads, ffn) for _ in range(layers)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Hidden states [B, S, hidden] after every layer."""
        return self.layers(x)


def transformer_encoder(seed: int = 0, layers: int = 6, hidden: int = 768, heads: int = 12,
                        ffn: int = 3072) -> Encoder:
    """The 6-layer BERT-base-width encoder (random weights); smaller with the arguments."""
    torch.manual_seed(seed)
    return _randomize_batchnorms(Encoder(layers, hidden, heads, ffn), seed).eval()
