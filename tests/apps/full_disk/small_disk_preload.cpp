// A small disk for the full-disk test, without mounting one (CI may not): an LD_PRELOAD library
// that gives the files under one folder a byte budget shared by all of them. Writes past it write
// what fits and then fail with ENOSPC, as a full filesystem does.
//
//   PELAB_TEST_DISK_DIR    the folder (absolute, as /proc/self/fd shows it); unset: no limit
//   PELAB_TEST_DISK_BYTES  the budget, counted from the first write of the process
//
// It interposes the calls pelab's writers use: stdio's fwrite (write_file_atomically, spdlog) and
// write/writev (iostreams). Deleting files gives no space back; the test needs none.

#include <dlfcn.h>
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

std::atomic<long long> bytes_written{0};

const char* disk_dir() {
  static const char* dir = std::getenv("PELAB_TEST_DISK_DIR");
  return dir;
}

long long disk_bytes() {
  static const long long bytes = [] {
    const char* text = std::getenv("PELAB_TEST_DISK_BYTES");
    return text ? std::atoll(text) : 0LL;
  }();
  return bytes;
}

bool on_small_disk(int fd) {
  if (disk_dir() == nullptr || fd < 0) return false;
  char link[64];
  char target[4096];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t length = ::readlink(link, target, sizeof target - 1);
  if (length <= 0) return false;
  target[length] = '\0';
  const std::size_t prefix = std::strlen(disk_dir());
  return std::strncmp(target, disk_dir(), prefix) == 0 &&
         (target[prefix] == '/' || target[prefix] == '\0');
}

// How many of `wanted` bytes to `fd` still fit, taken from the budget.
std::size_t take_space(int fd, std::size_t wanted) {
  if (!on_small_disk(fd)) return wanted;
  long long used = bytes_written.load();
  for (;;) {
    const long long granted = std::max(0LL, std::min<long long>(wanted, disk_bytes() - used));
    if (bytes_written.compare_exchange_weak(used, used + granted))
      return static_cast<std::size_t>(granted);
  }
}

template <typename Function>
Function real(const char* name) {
  return reinterpret_cast<Function>(::dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" ssize_t write(int fd, const void* data, std::size_t count) {
  static const auto real_write = real<ssize_t (*)(int, const void*, std::size_t)>("write");
  const std::size_t granted = take_space(fd, count);
  if (granted == 0 && count > 0) {
    errno = ENOSPC;
    return -1;
  }
  return real_write(fd, data, granted);
}

extern "C" ssize_t writev(int fd, const struct iovec* parts, int count) {
  static const auto real_writev = real<ssize_t (*)(int, const struct iovec*, int)>("writev");
  if (!on_small_disk(fd)) return real_writev(fd, parts, count);
  // Rare (libstdc++ joins a buffer and a large write this way): one part at a time.
  ssize_t total = 0;
  for (int i = 0; i < count; ++i) {
    const ssize_t done = write(fd, parts[i].iov_base, parts[i].iov_len);
    if (done < 0) return total > 0 ? total : -1;
    total += done;
    if (static_cast<std::size_t>(done) < parts[i].iov_len) break;
  }
  return total;
}

extern "C" std::size_t fwrite(const void* data, std::size_t size, std::size_t count,
                              std::FILE* file) {
  static const auto real_fwrite =
      real<std::size_t (*)(const void*, std::size_t, std::size_t, std::FILE*)>("fwrite");
  if (size == 0 || !on_small_disk(::fileno(file))) return real_fwrite(data, size, count, file);
  const std::size_t items = take_space(::fileno(file), size * count) / size;
  const std::size_t done = items > 0 ? real_fwrite(data, size, items, file) : 0;
  if (done < count) errno = ENOSPC;
  return done;
}
