"""Example models for weft, each exported by torch 1.13 to ONNX opset 17.

Every module's forward returns the scalar training loss, so the exported graph
ends in the loss weft trains. Seeds are fixed and dropout probability is 0 so
numerics are reproducible.
"""
