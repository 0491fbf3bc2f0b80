//===- Sha256.h - SHA-256 of files (OpenSSL libcrypto) ----------*- C++ -*-===//
#ifndef WEFT_RUNTIME_SHA256_H
#define WEFT_RUNTIME_SHA256_H

#include <string>

namespace weft::rt {

/// The SHA-256 (FIPS 180-4) of the file at `path` as 64 lowercase hex
/// digits, read in 1 MiB chunks. Throws Error naming `what` and the path
/// when the file cannot be read.
std::string sha256File(const std::string &path, const std::string &what);

/// The SHA-256 of `bytes`, as 64 lowercase hex digits.
std::string sha256Bytes(const std::string &bytes);

} // namespace weft::rt

#endif // WEFT_RUNTIME_SHA256_H
