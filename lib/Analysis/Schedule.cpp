//===- Schedule.cpp - micro-batch task order of a pipeline stage ----------===//

#include "weft/Analysis/Schedule.h"

#include "llvm/Support/ErrorHandling.h"

#include <algorithm>
#include <cassert>

using namespace weft;

std::optional<ScheduleKind> weft::scheduleNamed(llvm::StringRef name) {
  for (ScheduleKind kind :
       {ScheduleKind::GPipe, ScheduleKind::OneFOneB, ScheduleKind::Interleaved,
        ScheduleKind::ZBH1, ScheduleKind::ZBH2, ScheduleKind::ZBV})
    if (name == scheduleName(kind))
      return kind;
  return std::nullopt;
}

llvm::StringRef weft::scheduleName(ScheduleKind kind) {
  switch (kind) {
  case ScheduleKind::GPipe:
    return "gpipe";
  case ScheduleKind::OneFOneB:
    return "1f1b";
  case ScheduleKind::Interleaved:
    return "interleaved";
  case ScheduleKind::ZBH1:
    return "zb-h1";
  case ScheduleKind::ZBH2:
    return "zb-h2";
  case ScheduleKind::ZBV:
    return "zb-v";
  }
  llvm_unreachable("unknown schedule");
}

std::string StageTask::label() const {
  return (backward ? "B" : "F") + std::to_string(microBatch);
}

llvm::SmallVector<StageTask> weft::stageTasks(ScheduleKind kind, int64_t stage,
                                              int64_t stages,
                                              int64_t microbatches) {
  assert((kind == ScheduleKind::GPipe || kind == ScheduleKind::OneFOneB) &&
         "stageTasks: GPipe and 1F1B only (TaskOrder.h has the others)");
  llvm::SmallVector<StageTask> tasks;
  int64_t m = microbatches;
  if (kind == ScheduleKind::GPipe) {
    for (int64_t i = 0; i < m; ++i)
      tasks.push_back({false, i});
    for (int64_t i = m - 1; i >= 0; --i)
      tasks.push_back({true, i});
    return tasks;
  }
  int64_t warmup = std::min(stages - stage - 1, m);
  for (int64_t i = 0; i < warmup; ++i)
    tasks.push_back({false, i});
  for (int64_t i = 0; i < m - warmup; ++i) {
    tasks.push_back({false, warmup + i});
    tasks.push_back({true, i});
  }
  for (int64_t i = m - warmup; i < m; ++i)
    tasks.push_back({true, i});
  return tasks;
}
