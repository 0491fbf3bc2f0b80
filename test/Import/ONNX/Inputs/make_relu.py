"""Writes a binary ONNX model y = Relu(x) with symbolic dims to argv[1]."""
import sys

import onnx
from onnx import TensorProto, helper

graph = helper.make_graph(
    [helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "features"])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "features"])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.save(model, sys.argv[1])
