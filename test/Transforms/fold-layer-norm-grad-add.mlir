// RUN: weft-opt %s --split-input-file --weft-fold-layer-norm-grad-add | FileCheck %s

// The LayerNorm's input gradient read only by an add with the residual
// gradient: the gradient kernel takes it as accumulate, the add goes.
// CHECK-LABEL: func.func @residual
// CHECK: %[[R:.*]] = weft.mul %arg5, %arg5
// CHECK: %[[G:.*]], %[[S:.*]], %{{.*}} = weft.layer_norm_grad %arg0, %arg1, %arg2, %arg3, %arg4 accumulate %[[R]] {axis = 1 : i64}
// CHECK-NOT: weft.add
// CHECK: return %[[G]], %[[S]]
func.func @residual(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %m: tensor<4x1xf32>, %r: tensor<4x1xf32>, %dy: tensor<4x8xf32>, %d: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %dres = weft.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %dx, %ds, %db = weft.layer_norm_grad %x, %s, %m, %r, %dy {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %sum = weft.add %dres, %dx : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %sum, %ds : tensor<4x8xf32>, tensor<8xf32>
}

// -----

// The residual gradient computed after the LayerNorm's gradient, whose
// results nothing reads before the add: the gradient moves down to it.
// CHECK-LABEL: func.func @later
// CHECK: %[[R:.*]] = weft.mul %arg5, %arg5
// CHECK-NEXT: %{{.*}}, %{{.*}}, %{{.*}} = weft.layer_norm_grad {{.*}} accumulate %[[R]]
// CHECK-NOT: weft.add
func.func @later(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %m: tensor<4x1xf32>, %r: tensor<4x1xf32>, %dy: tensor<4x8xf32>, %d: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>) {
  %dx, %ds, %db = weft.layer_norm_grad %x, %s, %m, %r, %dy {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %dres = weft.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %sum = weft.add %dx, %dres : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %sum, %ds : tensor<4x8xf32>, tensor<8xf32>
}

// -----

// Left alone: the residual gradient computed after a reader of the
// LayerNorm gradient's scale gradient (it cannot move down); a
// broadcasting add; an input gradient read twice.
// CHECK-LABEL: func.func @refused
// CHECK-NOT: accumulate
// CHECK: return
func.func @refused(%x: tensor<4x8xf32>, %s: tensor<8xf32>, %m: tensor<4x1xf32>, %r: tensor<4x1xf32>, %dy: tensor<4x8xf32>, %d: tensor<4x8xf32>, %row: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %dx, %ds, %db = weft.layer_norm_grad %x, %s, %m, %r, %dy {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %dd = weft.mul %ds, %ds : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %dres = weft.mul %d, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %sum = weft.add %dx, %dres : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %dx2, %ds2, %db2 = weft.layer_norm_grad %x, %s, %m, %r, %d {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %bcast = weft.add %dx2, %row : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %dx3, %ds3, %db3 = weft.layer_norm_grad %x, %s, %m, %r, %dres {axis = 1 : i64} : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x1xf32>, tensor<4x1xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %twice = weft.add %dx3, %d : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %sum, %dd, %bcast, %twice, %dx3 : tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
