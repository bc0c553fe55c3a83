#include "tapegrad/io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "tapegrad/error.h"

namespace tapegrad::io {

namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  check(!ec && fs::exists(status), "cannot read '", path, "': no such file");
  check(!fs::is_directory(status), "cannot read '", path, "': it is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  check(in.good(), "cannot read '", path, "': ", std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  check(!in.bad(), "cannot read '", path, "': read error");
  return bytes;
}

namespace {
void write_all(int fd, std::string_view bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      throw Error(cat("cannot write '", path, "': ", why));
    }
    done += static_cast<size_t>(n);
  }
}
}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  const std::string tmp = (dir / ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()))).string();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  check(fd >= 0, "cannot write '", path, "': ", std::strerror(errno));
  write_all(fd, bytes, tmp);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw Error(cat("cannot write '", path, "': ", why));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw Error(cat("cannot write '", path, "': ", why));
  }
  // Make the rename itself durable.
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void ensure_writable_directory(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    check(fs::is_directory(dir, ec), "output directory '", dir, "' exists and is not a directory");
  } else {
    fs::create_directories(dir, ec);
    check(!ec, "cannot create output directory '", dir, "': ", ec.message());
  }
  const std::string probe = (fs::path(dir) / (".write-test." + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  check(fd >= 0, "output directory '", dir, "' is not writable: ", std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace tapegrad::io
