//===- Files.h - whole-file reads and crash-safe writes ---------*- C++ -*-===//
#ifndef WEFT_RUNTIME_FILES_H
#define WEFT_RUNTIME_FILES_H

#include <string>

namespace weft::rt {

/// The bytes of the file at `path`. Throws Error "<what>: cannot read
/// '<path>'" when it cannot be opened.
std::string readFile(const std::string &path, const std::string &what);

/// Writes `bytes` to `path` so that a crash leaves either the old file or
/// the new one, never a part: a temporary name (`path`.tmp), fsync, rename,
/// fsync of the directory. Throws Error "<what>: cannot write ..." naming
/// the file on any failure.
void writeFileAtomically(const std::string &path, const std::string &bytes,
                         const std::string &what);

} // namespace weft::rt

#endif // WEFT_RUNTIME_FILES_H
