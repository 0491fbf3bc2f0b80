//===- CudaLossConformanceTest.cpp - the classification losses ------------===//
//
// The CUDA kernels of softmax cross-entropy and NLL, their gradients, and
// the fused loss and gradient, against the CPU's (the harness:
// CudaConformance.h; the suite is instantiated in CudaConformanceTest.cpp).
//
//===----------------------------------------------------------------------===//

#include "CudaConformance.h"

using namespace weft::rt;
using namespace weft::rt::conformance;

namespace {

/// Every reduction, an ignored label, class weights, samples with and
/// without trailing dims, and more rows than the GPU's one summing block
/// has threads (1024: a model's batch has thousands).
TEST_P(CudaConformance, Losses) {
  for (DType d : floats())
    for (std::vector<int64_t> scores :
         {std::vector<int64_t>{40, 11}, std::vector<int64_t>{3, 11, 4},
          std::vector<int64_t>{1100, 11}})
      for (const char *reduction : {"mean", "sum", "none"})
        for (bool weighted : {false, true}) {
          std::vector<int64_t> labels = {scores[0]};
          labels.insert(labels.end(), scores.begin() + 2, scores.end());
          std::vector<int64_t> loss = reduction == std::string("none")
                                          ? labels
                                          : std::vector<int64_t>{};
          TensorType s{d, scores}, l{DType::I64, labels}, w{d, {11}};
          Case sce{"softmax_cross_entropy", {s, l}, {{d, loss}, s}};
          Case nll{"nll_loss", {s, l}, {{d, loss}}};
          Case sceGrad{"softmax_cross_entropy_grad", {s, l, {d, loss}}, {s}};
          Case nllGrad{"nll_loss_grad", {s, l, {d, loss}}, {s}};
          for (Case *c : {&sce, &nll, &sceGrad, &nllGrad}) {
            c->below = {{1, 11}};
            c->attrs.set("reduction", std::string(reduction));
            c->attrs.set("ignore_index", int64_t(2));
            if (weighted) {
              c->in.push_back(w);
              c->positive.insert(c->in.size() - 1);
            }
            expectConforms(*c, *gpu);
          }
        }
}

/// softmax_cross_entropy with log_sum_exp (weft-fold-loss-log-prob) gives
/// the loss of the log_prob form to the bit, and its gradient from the
/// scores and the log-sum-exp that of the log_prob form within the
/// dtype's tolerance: the recomputed log-probability x - lse rounds
/// differently from x - max - log(sum) by a few ulp of |log p| <= log C +
/// 4, a relative change of the softmax under 1e-6. Over [N, C, d] rows, in
/// each dtype and f32 beside 16-bit scores (log_prob_type), on the backend
/// under test.
TEST_P(CudaConformance, LogSumExpLossIsTheLogProbOne) {
  for (DType d : floats())
    for (bool widened : {false, true}) {
      if (widened && d == DType::F32)
        continue;
      DType wide = widened ? DType::F32 : d;
      TensorType s{d, {40, 11, 3}}, labels{DType::I64, {40, 3}}, loss{wide, {}},
          logp{wide, {40, 11, 3}}, lse{wide, {40, 3}};
      auto lossCase = [&](std::vector<TensorType> in,
                          std::vector<TensorType> out, bool kept,
                          const char *kernel) {
        Case c{kernel, std::move(in), std::move(out)};
        c.below = {{1, 11}};
        c.attrs.set("reduction", std::string("mean"));
        c.attrs.set("ignore_index", int64_t(2));
        if (kept)
          c.attrs.set("log_sum_exp", true);
        return c;
      };
      Case plain =
          lossCase({s, labels}, {loss, logp}, false, "softmax_cross_entropy");
      Case kept =
          lossCase({s, labels}, {loss, lse}, true, "softmax_cross_entropy");
      if (widened)
        for (Case *c : {&plain, &kept})
          c->attrs.set("log_prob_type", std::string("f32"));
      std::vector<std::string> in = inputs(plain, 8);
      std::vector<std::string> p = runOn(*gpu, plain, in),
                               k = runOn(*gpu, kept, in);
      EXPECT_EQ(k[0], p[0]) << dtypeName(d) << " loss";
      Case gradPlain = lossCase({logp, labels, loss}, {s}, false,
                                "softmax_cross_entropy_grad");
      if (widened)
        gradPlain.attrs.set("grad_type", std::string(dtypeName(d)));
      Case gradKept = lossCase({s, labels, loss, lse}, {s}, true,
                               "softmax_cross_entropy_grad");
      std::string dloss = inputs(gradPlain, 9)[2];
      expectMatches(s, runOn(*gpu, gradKept, {in[0], in[1], dloss, k[1]})[0],
                    runOn(*gpu, gradPlain, {p[1], in[1], dloss})[0],
                    std::string("log_sum_exp gradient, ") + dtypeName(d) +
                        (widened ? " beside f32" : ""));
    }
}

/// weft-mixed-precision's narrowed loss: 16-bit scores in, f32 loss and
/// log-probabilities out (log_prob_type), and the gradient of f32
/// log-probabilities written in 16 bits (grad_type), against the cast
/// chain they replace: widen, the f32 kernel, round to nearest even.
/// Exactly, on the backend under test.
TEST_P(CudaConformance, MixedLossIsTheCastChain) {
  for (DType d : {DType::BF16, DType::F16})
    for (const char *reduction : {"mean", "none"}) {
      bool none = reduction == std::string("none");
      TensorType s{d, {40, 11}}, wide{DType::F32, {40, 11}},
          labels{DType::I64, {40}},
          loss{DType::F32,
               none ? std::vector<int64_t>{40} : std::vector<int64_t>{}};
      Case up{"cast", {s}, {wide}};
      up.attrs.set("to", std::string("f32"));
      up.attrs.set("nearest_even", true);
      Case down{"cast", {wide}, {s}};
      down.attrs.set("to", std::string(dtypeName(d)));
      down.attrs.set("nearest_even", true);

      Case mixed{"softmax_cross_entropy", {s, labels}, {loss, wide}};
      mixed.below = {{1, 11}};
      mixed.attrs.set("reduction", std::string(reduction));
      mixed.attrs.set("ignore_index", int64_t(2));
      Case f32 = mixed;
      f32.in[0] = wide;
      mixed.attrs.set("log_prob_type", std::string("f32"));
      std::vector<std::string> in = inputs(mixed, 5);
      std::vector<std::string> narrow = runOn(*gpu, mixed, in);
      std::vector<std::string> chain =
          runOn(*gpu, f32, {runOn(*gpu, up, {in[0]})[0], in[1]});
      EXPECT_EQ(narrow, chain) << dtypeName(d) << " " << reduction;

      Case grad{"softmax_cross_entropy_grad", {wide, labels, loss}, {s}};
      grad.below = {{1, 11}};
      grad.attrs.set("reduction", std::string(reduction));
      grad.attrs.set("ignore_index", int64_t(2));
      Case gradF32 = grad;
      gradF32.out[0] = wide;
      grad.attrs.set("grad_type", std::string(dtypeName(d)));
      std::vector<std::string> gradIn = {narrow[1], in[1], inputs(grad, 6)[2]};
      EXPECT_EQ(runOn(*gpu, grad, gradIn)[0],
                runOn(*gpu, down, {runOn(*gpu, gradF32, gradIn)[0]})[0])
          << dtypeName(d) << " " << reduction << " gradient";
    }
}

/// softmax_cross_entropy_and_grad (weft-fold-loss-grad) gives the loss and
/// log-sum-exp of softmax_cross_entropy {log_sum_exp} and the gradient of
/// softmax_cross_entropy_grad from them: exactly on the CPU (its parts), on
/// a GPU within the dtype's tolerance (one kernel computes both). Every
/// reduction, class weights, an ignored label, f32 beside 16-bit scores,
/// rows of 11 classes with a trailing dim and of 300 (lanes loop over
/// them); the gradient over the scores (as plans place it) and beside.
TEST_P(CudaConformance, LossAndGradIsTheLossThenItsGradient) {
  for (DType d : floats())
    for (bool widened : {false, true})
      for (std::vector<int64_t> shape :
           {std::vector<int64_t>{40, 11, 3}, std::vector<int64_t>{13, 300}})
        for (const char *reduction : {"mean", "sum", "none"})
          for (bool weighted : {false, true}) {
            if ((widened && d == DType::F32) || (widened && weighted))
              continue;
            DType wide = widened ? DType::F32 : d;
            std::vector<int64_t> labels = {shape[0]};
            labels.insert(labels.end(), shape.begin() + 2, shape.end());
            bool none = reduction == std::string("none");
            TensorType s{d, shape}, l{DType::I64, labels},
                loss{wide, none ? labels : std::vector<int64_t>{}},
                lse{wide, labels}, w{d, {shape[1]}};
            std::string what =
                std::string(dtypeName(d)) + (widened ? " beside f32 " : " ") +
                typeString(s) + " " + reduction + (weighted ? " weighted" : "");
            Case fused{
                "softmax_cross_entropy_and_grad", {s, l, loss}, {loss, lse, s}};
            fused.below = {{1, shape[1]}};
            fused.attrs.set("reduction", std::string(reduction));
            fused.attrs.set("ignore_index", int64_t(2));
            if (widened)
              fused.attrs.set("log_prob_type", std::string("f32"));
            if (weighted) {
              fused.in.push_back(w);
              fused.positive.insert(3);
            }
            Case beside = fused;
            fused.inPlace = {{2, 0}};
            expectConforms(fused, *gpu);
            std::vector<std::string> in = inputs(fused, 21);
            std::vector<std::string> got = runOn(*gpu, fused, in);
            EXPECT_EQ(runOn(*gpu, beside, in), got) << what << " beside";
            // The parts: the forward, then the gradient from its
            // log-sum-exp (inputs scores, labels, seed, weights?, lse).
            Case forward{"softmax_cross_entropy", {s, l}, {loss, lse}};
            forward.attrs = fused.attrs;
            forward.attrs.set("log_sum_exp", true);
            Case grad{"softmax_cross_entropy_grad", fused.in, {s}};
            grad.attrs.set("reduction", std::string(reduction));
            grad.attrs.set("ignore_index", int64_t(2));
            grad.attrs.set("log_sum_exp", true);
            grad.in.push_back(lse);
            std::vector<std::string> forwardIn = {in[0], in[1]};
            if (weighted)
              forwardIn.push_back(in[3]);
            forward.in = weighted ? std::vector<TensorType>{s, l, w}
                                  : std::vector<TensorType>{s, l};
            std::vector<std::string> want = runOn(*gpu, forward, forwardIn);
            std::vector<std::string> gradIn = in;
            gradIn.push_back(want[1]);
            std::string wantGrad = runOn(*gpu, grad, gradIn)[0];
            expectMatches(loss, got[0], want[0], "loss, " + what);
            expectMatches(lse, got[1], want[1], "log-sum-exp, " + what);
            expectMatches(s, got[2], wantGrad, "gradient, " + what);
            if (GetParam() == "cpu") {
              EXPECT_EQ(got,
                        (std::vector<std::string>{want[0], want[1], wantGrad}))
                  << what;
            }
          }
}

} // namespace
