#include "tapegrad/io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "tapegrad/error.h"
#include "tapegrad/text/lexical.h"

namespace tapegrad::io {

namespace fs = std::filesystem;

void check_path(const std::string& path, const std::string& what) {
  check(!path.empty(), what, ": the path is empty");
  check(path.find('\0') == std::string::npos, what, " '", text::shown(path),
        "': a path cannot hold a NUL byte (the system would read it only up to the NUL)");
}

namespace {
// open(2) that accepts only a regular file: anything else — missing, a link (with O_NOFOLLOW), a
// directory, a pipe, a device — is an Error naming the path and what it is. `verb`: "read" or
// "write", for the message. Returns the fd and fills `st`.
int open_regular(const std::string& path, int flags, const char* verb, struct stat& st) {
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    const int e = errno;
    check(e != ENOENT, "cannot ", verb, " '", path, "': no such file");
    check(e != ELOOP, "cannot ", verb, " '", path, "': it is a symbolic link, and tapegrad does not write through links");
    throw Error(cat("cannot ", verb, " '", path, "': ", std::strerror(e)));
  }
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    check(!dir, "cannot ", verb, " '", path, "': it is a directory, not a file");
    throw Error(cat("cannot ", verb, " '", path, "': not a regular file (a pipe, device or socket); give a file"));
  }
  return fd;
}
}  // namespace

// Opened without blocking (a FIFO would otherwise wait for a writer forever) and required to be
// a regular file of at most max_bytes: /dev/zero or a pipe is an error, not an endless read.
std::string read_file(const std::string& path, int64_t max_bytes) {
  check_path(path);
  struct stat st {};
  const int fd = open_regular(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC, "read", st);
  if (st.st_size > max_bytes) {
    ::close(fd);
    throw Error(cat("cannot read '", path, "': it is ", st.st_size, " bytes, more than the ", max_bytes, "-byte limit"));
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // a file that shrank while being read: what was there
    done += static_cast<size_t>(n);
  }
  const int e = errno;
  ::close(fd);
  check(done == bytes.size() || e == 0, "cannot read '", path, "': ", std::strerror(e));
  bytes.resize(done);
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

namespace {
constexpr std::string_view kTempMarker = ".tapegrad-tmp.", kWriteProbePrefix = ".tapegrad-write-test.";

const char* file_kind(mode_t m) {
  if (S_ISLNK(m)) return "a symbolic link";
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  return "a special file";
}

// A new file `dir/.<name>.tapegrad-tmp.XXXXXX` with an unpredictable suffix, created exclusively (mkostemp:
// O_CREAT | O_EXCL), so a link planted in advance can never be written through. Returns its fd
// and sets `tmp` to its path.
int create_temp(const fs::path& dir, const std::string& name, std::string& tmp, const std::string& for_path) {
  tmp = (dir / ("." + name + std::string(kTempMarker) + "XXXXXX")).string();
  const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  check(fd >= 0, "cannot write '", for_path, "': ", std::strerror(errno));
  ::fchmod(fd, 0644);
  return fd;
}
}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  check_path(path);
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // An output replaces a regular file or nothing: a device, FIFO, socket, folder or link there is
  // someone else's (rename would put a regular file in place of /dev/null, or of a link's name).
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw Error(cat("cannot write '", path, "': it is ", file_kind(st.st_mode),
                    ", not a regular file (outputs replace only regular files; remove it or choose another path)"));
  std::string tmp;
  const int fd = create_temp(dir, target.filename().string(), tmp, path);
  try {
    write_all(fd, bytes, path);
  } catch (...) {
    ::unlink(tmp.c_str());  // a failed write (a full disk) leaves nothing behind
    throw;
  }
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

namespace {
// The names create_temp and the write probe give their files: ".<name>.tapegrad-tmp.XXXXXX" and
// ".tapegrad-write-test.XXXXXX", the X's being mkostemp's six characters [A-Za-z0-9]. The marker
// keeps a user's ".draft.tmp.backup" or ".write-test.Ab12Cd" out of the pattern.
bool is_temp_name(const std::string& f) {
  constexpr size_t kRandom = 6;
  const std::string_view probe = kWriteProbePrefix, temp = kTempMarker;
  if (f.size() < 2 + temp.size() + kRandom || f[0] != '.') return false;
  const auto has = [&](std::string_view part, size_t at) { return f.compare(at, part.size(), part) == 0; };
  const bool random = std::all_of(f.end() - kRandom, f.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)); });
  return random && ((f.size() == probe.size() + kRandom && has(probe, 0)) || has(temp, f.size() - kRandom - temp.size()));
}
}  // namespace

int remove_stale_temp_files(const std::string& dir) {
  check_path(dir);
  int removed = 0;
  std::error_code ec;
  // Default options: symlinked folders are listed, not entered.
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (it.depth() >= 1) it.disable_recursion_pending();  // the folder and its own subfolders (DIR/curves/x.csv)
    const std::string name = it->path().filename().string();
    if (is_temp_name(name) && !it->is_directory(ec) && fs::remove(it->path(), ec)) ++removed;
  }
  return removed;
}

void require_directory(const std::string& dir, const std::string& what) {
  check_path(dir, what);
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  check(fs::exists(st), what, " '", dir, "' does not exist");
  check(fs::is_directory(st), what, " '", dir, "' is ", fs::is_regular_file(st) ? "a file" : "not a folder",
        ", not a directory", fs::is_regular_file(st) ? cat(" (give the folder that holds it: '",
        fs::path(dir).parent_path().empty() ? std::string(".") : fs::path(dir).parent_path().string(), "')") : "");
}

void ensure_writable_directory(const std::string& dir) {
  check_path(dir);
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    check(fs::is_directory(dir, ec), "output directory '", dir, "' exists and is not a directory");
  } else {
    fs::create_directories(dir, ec);
    check(!ec, "cannot create output directory '", dir, "': ", ec.message());
  }
  std::string probe = (fs::path(dir) / (std::string(kWriteProbePrefix) + "XXXXXX")).string();
  const int fd = ::mkostemp(probe.data(), O_CLOEXEC);
  check(fd >= 0, "output directory '", dir, "' is not writable: ", std::strerror(errno));
  ::close(fd);
  ::unlink(probe.c_str());
}

void ensure_own_directory(const std::string& dir) {
  check_path(dir);
  struct stat st {};
  check(::lstat(dir.c_str(), &st) != 0 || !S_ISLNK(st.st_mode), "'", dir,
        "' is a symbolic link: a run folder's own folders are never links (remove it; it is made again)");
  ensure_writable_directory(dir);
}

FILE* open_for_append(const std::string& path, bool truncate) {
  check_path(path);
  struct stat st {};
  const int fd = open_regular(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC | (truncate ? O_TRUNC : 0),
                              "write", st);
  FILE* f = ::fdopen(fd, "a");
  if (!f) ::close(fd);
  check(f != nullptr, "cannot write '", path, "': ", std::strerror(errno));
  return f;
}

}  // namespace tapegrad::io
