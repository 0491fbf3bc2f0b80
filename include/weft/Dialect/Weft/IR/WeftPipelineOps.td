//===- WeftPipelineOps.td - point-to-point transfers ---------*- tablegen -*-===//
//
// Transfers between pipeline stages, split into a post and a wait so that the
// schedule can overlap them with compute (MPI_Isend/MPI_Irecv + MPI_Wait; on
// CUDA, NCCL send/recv on a copy stream + an event). `peer` is the other
// stage; `tag` identifies the transfer, unique per step within a module, so
// that one send matches exactly one receive.
//
//===----------------------------------------------------------------------===//

#ifndef WEFT_DIALECT_WEFT_IR_WEFTPIPELINEOPS_TD
#define WEFT_DIALECT_WEFT_IR_WEFTPIPELINEOPS_TD

def Weft_RequestType : TypeDef<Weft_Dialect, "Request"> {
  let mnemonic = "request";
  let summary = "An in-flight transfer, completed by a wait";
}

/// A transfer op; its cost is the bytes it moves: an isend reads its tensor,
/// an irecv writes its buffer, waits move nothing. A plan instruction of its
/// own, not a kernel.
class Weft_TransferOp<string mnemonic, list<Trait> traits = [],
                      list<string> costOverrides = []>
    : Weft_Op<mnemonic, traits, costOverrides> {
  let lowering = InstructionLowering;
  let backends = NoKernel;
  let precision = FollowPrecision;
  let split = NoSplit;
  let flops = NoFlops;
}

/// A wait: no FLOPs, no bytes.
class Weft_WaitOp<string mnemonic, list<Trait> traits = []>
    : Weft_TransferOp<mnemonic, traits, ["getBytesRead", "getBytesWritten"]> {
  let extraClassDefinition = [{
    int64_t $cppClass::getBytesRead() { return 0; }
    int64_t $cppClass::getBytesWritten() { return 0; }
  }];
}

def Weft_ISendOp : Weft_TransferOp<"isend"> {
  let summary = "Post the send of a tensor to stage `peer` (non-blocking).";
  let description = [{
    Starts sending `value` to stage `peer`. The bytes of `value` must stay
    untouched until the matching `weft.wait_send`, which takes `value` again
    so that its buffer stays live until then.
    ```mlir
    %req = weft.isend %x {peer = 1 : i64, tag = 4 : i64} : tensor<8x64xf32>
    ...
    weft.wait_send %req, %x : tensor<8x64xf32>
    ```
    Cost: no FLOPs; reads the tensor's bytes.
  }];
  let arguments = (ins Weft_Tensor:$value, I64Attr:$peer, I64Attr:$tag);
  let results = (outs Weft_RequestType:$request);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

def Weft_WaitSendOp : Weft_WaitOp<"wait_send"> {
  let summary = "Wait until a posted send has completed.";
  let description = [{
    Blocks until the send of `request` has completed (for a large message,
    until the receiver has taken the bytes); `value` is the sent tensor,
    whose buffer may be reused only after this op. Cost: none.
  }];
  let arguments = (ins Weft_RequestType:$request, Weft_Tensor:$value);
  let assemblyFormat = "$request `,` $value attr-dict `:` type($value)";
}

def Weft_IRecvOp : Weft_TransferOp<"irecv"> {
  let summary = "Post the receive of a tensor from stage `peer` (non-blocking).";
  let description = [{
    Starts receiving a tensor of the result type from stage `peer` into
    `buffer`, whose bytes are undefined until the matching `weft.wait_recv`;
    only that op may use `buffer`.
    ```mlir
    %buf, %req = weft.irecv {peer = 0 : i64, tag = 4 : i64} : tensor<8x64xf32>
    %x = weft.wait_recv %req, %buf : tensor<8x64xf32>
    ```
    Cost: no FLOPs; writes the tensor's bytes.
  }];
  let arguments = (ins I64Attr:$peer, I64Attr:$tag);
  let results = (outs Weft_Tensor:$buffer, Weft_RequestType:$request);
  let assemblyFormat = "attr-dict `:` type($buffer)";
}

def Weft_WaitRecvOp : Weft_WaitOp<"wait_recv",
    [AllTypesMatch<["buffer", "value"]>]> {
  let summary = "Wait until a posted receive has completed; yields the tensor.";
  let description = [{
    Blocks until the receive of `request` has filled `buffer`, and returns
    it: `value` is a view of `buffer`'s bytes (no copy). Cost: none.
  }];
  let arguments = (ins Weft_RequestType:$request, Weft_Tensor:$buffer);
  let results = (outs Weft_Tensor:$value);
  let assemblyFormat = "$request `,` $buffer attr-dict `:` type($value)";
}

#endif // WEFT_DIALECT_WEFT_IR_WEFTPIPELINEOPS_TD
