// Unreadable model files and bad flags: one clear line, non-zero exit.
// RUN: %python %S/Inputs/make_relu.py %t.relu.onnx
// RUN: printf "definitely not protobuf" > %t.garbage.onnx
// RUN: not weftc %t.garbage.onnx 2>&1 | FileCheck %s --check-prefix=GARBAGE
// GARBAGE: error: not a valid ONNX model: the protobuf does not parse

// RUN: head -c 60 %t.relu.onnx > %t.truncated.onnx
// RUN: not weftc %t.truncated.onnx 2>&1 | FileCheck %s --check-prefix=TRUNCATED
// TRUNCATED: error: not a valid ONNX model

// RUN: not weftc %t.does-not-exist.onnx 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: weftc: cannot read '{{.*}}does-not-exist.onnx'

// RUN: not weftc %t.relu.onnx --input-shape x=2xq 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: weftc: --input-shape 'x=2xq': 'q' is not a non-negative integer

// RUN: not weftc %t.relu.onnx --input-shape nope=2 2>&1 | FileCheck %s --check-prefix=NAME
// NAME: error: --input-shape names 'nope', which is not a model input; inputs: 'x'

// A binary model with symbolic dims imports once --input-shape fixes them.
// RUN: weftc %t.relu.onnx --input-shape x=3x5 | FileCheck %s --check-prefix=FIXED
// FIXED: weft.relu %arg0 : tensor<3x5xf32>
