"""A graph exported at a fixed batch (torch.onnx.export without
dynamic_axes bakes the batch into nn.MultiheadAttention's Reshape constants)
cannot be split into micro-batches: weftc says so in at most 5 lines, naming
the node, the batch it fixes, the micro-batch the layout needs and the fix;
the same module through weft.export compiles."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from conftest import run
from weft.export import export


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.att = nn.MultiheadAttention(16, 4, batch_first=True)
        self.head = nn.Linear(16, 3)

    def forward(self, x, labels):
        y, _ = self.att(x, x, x)
        return F.cross_entropy(self.head(y.mean(1)), labels)


def example():
    torch.manual_seed(0)
    return Attention(), (torch.randn(8, 5, 16), torch.randint(0, 3, (8,)))


def export_fixed(model, inputs, path):
    """torch's TorchScript export without dynamic_axes: the batch fixed."""
    torch.onnx.export(model, inputs, str(path), input_names=["x", "labels"],
                      output_names=["loss"], opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING,
                      do_constant_folding=False)


def test_fixed_batch_export_fails_naming_the_node(weftc, tmp_path):
    model, inputs = example()
    path = tmp_path / "fixed.onnx"
    export_fixed(model, inputs, path)
    result = run([weftc, str(path), "--microbatches=4", "-o",
                  str(tmp_path / "plan.json")])
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 5, result.stderr
    assert "Reshape node '/att/Reshape'" in lines[0]
    assert "the graph fixes the batch at 8" in result.stderr
    assert "holds 32 = 8x4" in result.stderr  # batch x heads
    assert "--microbatches 4 needs micro-batches of 2" in result.stderr
    assert "weft.export" in result.stderr
    # One micro-batch: the fixed batch is the batch, and it compiles.
    result = run([weftc, str(path), "-o", str(tmp_path / "plan.json")])
    assert result.returncode == 0, result.stderr


def test_weft_export_of_the_same_module_splits(weftc, tmp_path):
    model, inputs = example()
    path = tmp_path / "dynamic.onnx"
    export(model, inputs, str(path))
    result = run([weftc, str(path), "--microbatches=4", "-o",
                  str(tmp_path / "plan.json")])
    assert result.returncode == 0, result.stderr


class Encoder(nn.Module):
    """nn.TransformerEncoder, whose fixed-batch export first clashes in
    libonnx's shape inference at a residual Add, far from the Reshape whose
    constant holds the batch."""

    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(
            16, 4, 32, dropout=0.0, batch_first=True), 2)
        self.head = nn.Linear(16, 3)

    def forward(self, x, labels):
        return F.cross_entropy(self.head(self.enc(x).mean(1)), labels)


def test_fixed_batch_encoder_names_the_reshape_not_the_clash(weftc, tmp_path):
    torch.manual_seed(0)
    path = tmp_path / "encoder.onnx"
    export_fixed(Encoder(), (torch.randn(8, 5, 16),
                             torch.randint(0, 3, (8,))), path)
    result = run([weftc, str(path), "--microbatches=4", "-o",
                  str(tmp_path / "plan.json")])
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) <= 5, result.stderr
    assert "Reshape node '/enc/layers.0/self_attn/Reshape" in lines[0], lines[0]
    assert "libonnx's report" not in result.stderr  # not its 15 lines
    assert "the graph fixes the batch at 8" in result.stderr
    assert "--microbatches 4 needs micro-batches of 2" in result.stderr
    assert "weft.export" in result.stderr
