#include "planning/cache_files.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace dnngraph::files {
namespace {

Status io_error(const std::string& what, const std::string& path, int err) {
  return {ErrorCode::IO_ERROR, what + " '" + path + "': " + std::strerror(err)};
}

Status write_all(int fd, std::string_view data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("cannot write", path, errno);
    done += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace

std::string default_cache_dir() {
  if (const char* d = std::getenv("DNNGRAPH_CACHE_DIR"); d && *d) return d;
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/dnngraph";
  return {};
}

Status make_directories(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return {ErrorCode::IO_ERROR, "cannot create the folder '" + dir + "': " + ec.message()};
  return {};
}

Status write_atomically(const std::string& path, std::string_view data) {
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return io_error("cannot create", tmp, errno);
  Status s = write_all(fd, data, tmp);
  if (s.ok() && ::fsync(fd) != 0) s = io_error("cannot flush", tmp, errno);
  if (::close(fd) != 0 && s.ok()) s = io_error("cannot close", tmp, errno);
  if (s.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) s = io_error("cannot rename a temp file onto", path, errno);
  if (!s.ok()) ::unlink(tmp.c_str());
  return s;
}

Status read_whole(const std::string& path, std::string& out, bool& found) {
  out.clear();
  found = false;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? Status{} : io_error("cannot open", path, errno);
  found = true;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return io_error("cannot read", path, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return {};
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the descriptor releases the flock
}

Status FileLock::acquire(const std::string& path) {
  if (fd_ >= 0) return {ErrorCode::INTERNAL_ERROR, "FileLock: '" + path + "' is already held"};
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return io_error("cannot open the lock file", path, errno);
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    return io_error("cannot lock", path, err);
  }
  return {};
}

}  // namespace dnngraph::files
