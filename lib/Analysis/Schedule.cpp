//===- Schedule.cpp - micro-batch task order of a pipeline stage ----------===//

#include "weft/Analysis/Schedule.h"

#include <algorithm>

using namespace weft;

std::optional<ScheduleKind> weft::parseSchedule(llvm::StringRef name) {
  if (name == "gpipe")
    return ScheduleKind::GPipe;
  if (name == "1f1b")
    return ScheduleKind::OneFOneB;
  return std::nullopt;
}

llvm::StringRef weft::scheduleName(ScheduleKind kind) {
  return kind == ScheduleKind::GPipe ? "gpipe" : "1f1b";
}

std::string StageTask::label() const {
  return (backward ? "B" : "F") + std::to_string(microBatch);
}

llvm::SmallVector<StageTask> weft::stageTasks(ScheduleKind kind, int64_t stage,
                                              int64_t stages,
                                              int64_t microbatches) {
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
