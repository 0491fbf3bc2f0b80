//===- Sha256.cpp - SHA-256 of files (OpenSSL libcrypto) ------------------===//

#include "weft/runtime/Sha256.h"

#include "weft/runtime/Tensor.h"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

namespace weft::rt {

namespace {

using Context = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

Context begin(const std::string &what) {
  Context ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || !EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr))
    throw Error(what + ": SHA-256 is not available");
  return ctx;
}

std::string finish(Context &ctx) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
  static const char *hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

} // namespace

std::string sha256File(const std::string &path, const std::string &what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(what + ": cannot read '" + path + "'");
  Context ctx = begin(what);
  std::vector<char> chunk(1 << 20);
  while (in) {
    in.read(chunk.data(), chunk.size());
    EVP_DigestUpdate(ctx.get(), chunk.data(), in.gcount());
  }
  if (in.bad())
    throw Error(what + ": cannot read '" + path + "'");
  return finish(ctx);
}

std::string sha256Bytes(const std::string &bytes) {
  Context ctx = begin("sha256");
  EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size());
  return finish(ctx);
}

} // namespace weft::rt
