//===- Files.cpp - whole-file reads and crash-safe writes -----------------===//

#include "weft/runtime/Files.h"

#include "weft/runtime/Tensor.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <unistd.h>

namespace weft::rt {

std::string readFile(const std::string &path, const std::string &what) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error(what + ": cannot read '" + path + "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void writeFileAtomically(const std::string &path, const std::string &bytes,
                         const std::string &what) {
  std::string temp = path + ".tmp";
  auto fail = [&](const std::string &step, const std::string &file) {
    throw Error(what + ": cannot " + step + " '" + file + "'");
  };
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail("write", temp);
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n <= 0) {
      ::close(fd);
      fail("write", temp);
    }
    done += n;
  }
  bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced)
    fail("sync", temp);
  if (std::rename(temp.c_str(), path.c_str()) != 0)
    fail("rename to '" + path + "'", temp);
  // The rename itself is durable once the directory is.
  std::string dir = std::filesystem::path(path).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    synced = ::fsync(dfd) == 0;
    ::close(dfd);
    if (!synced)
      fail("sync", dir);
  }
}

} // namespace weft::rt
