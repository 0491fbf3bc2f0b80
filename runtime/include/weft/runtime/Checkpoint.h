//===- Checkpoint.h - sharded, atomic training checkpoints ------*- C++ -*-===//
//
// A checkpoint is one consistent unit, as torch.distributed.checkpoint makes
// it: a directory `DIR/step_<8 digits>/` holding one shard per rank
// (`rank_<r>.onnx`: an ONNX model whose initializers are the rank's
// parameters, state and optimizer state) and `manifest.json`, written last:
//
//   {"format": "weft-checkpoint", "version": 2, "step": N, "seed": S,
//    "plan_sha256": ..., "model_sha256": ..., "ranks": R,
//    "shards": [{"rank": r, "file": "rank_r.onnx", "bytes": B,
//                "sha256": ..., "tensors": {name: piece, ...}}, ...]}
//
// where a piece (Reshard.h's pieceJson) says which part of the model's
// whole tensor the shard holds, so another layout can resume.
//
// then `DIR/latest` (the step directory's name) replaced atomically. Every
// file goes to a temporary name, is fsynced and renamed, and the directory
// is fsynced: a crash at any point leaves `latest` naming the previous
// complete checkpoint, which no save touches. Data windows and dropout masks
// are functions of (seed, step), so the step and the seed are the data
// position and the RNG state.
//
//===----------------------------------------------------------------------===//
#ifndef WEFT_RUNTIME_CHECKPOINT_H
#define WEFT_RUNTIME_CHECKPOINT_H

#include "weft/runtime/Communicator.h"
#include "weft/runtime/Executor.h"
#include "weft/runtime/Plan.h"

#include <cstdint>
#include <string>

namespace weft::rt {

/// Writes the checkpoint after `step` steps into `dir` (collective: every
/// rank calls it), then keeps the newest `keep` complete checkpoints and
/// removes older and incomplete step directories. Throws Error naming the
/// file on any write failure.
void saveCheckpoint(const Plan &plan, const Executor &executor,
                    Communicator &comm, const std::string &dir, int64_t step,
                    uint64_t seed, int64_t keep);

/// Loads this rank's tensors from the checkpoint `dir` names: the one its
/// `latest` file names, or `dir` itself when it holds a manifest. Checks the
/// manifest (format, version, model SHA-256, seed). When the plan's SHA-256
/// is the checkpoint's, loads this rank's shard (rank count, the shard's
/// size and SHA-256, one tensor for every name this rank holds, each of the
/// plan's size). Otherwise, with `reshard`, assembles each tensor this rank
/// holds from the pieces of every shard and loads its piece (Reshard.h):
/// another pipeline, tensor or data-parallel degree or ZeRO stage of the
/// same model; without it, refuses. Throws Error naming what differs.
/// Returns the steps the checkpoint had done.
int64_t loadCheckpoint(const Plan &plan, Executor &executor, int64_t rank,
                       const std::string &dir, uint64_t seed, bool reshard);

} // namespace weft::rt

#endif // WEFT_RUNTIME_CHECKPOINT_H
