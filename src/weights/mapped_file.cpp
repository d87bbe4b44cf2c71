#include "weights/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace orochi::weights {
namespace {

std::string errno_text(int err) { return std::string(std::strerror(err)); }

// Closes the descriptor on every path out of map_file; the mapping does not need it.
struct FdGuard {
  int fd;
  ~FdGuard() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Expected<MappedFile> map_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO by mistake must fail fast below, not hang waiting for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR)
      return not_found(path + ": no such file; check the path (relative paths start at " +
                       "the current directory) or download the model first");
    return io_error(path + ": cannot open (" + errno_text(err) + "); check its permissions");
  }
  FdGuard guard{fd};

  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return io_error(path + ": cannot stat (" + errno_text(errno) + ")");
  if (S_ISDIR(st.st_mode))
    return invalid_argument(path + " is a directory, not a file; pass a .safetensors file, " +
                            "or open the folder as a checkpoint");
  if (!S_ISREG(st.st_mode))
    return invalid_argument(path + " is not a regular file; pass a .safetensors file");

  MappedFile mapped;
  mapped.size = static_cast<size_t>(st.st_size);
  if (mapped.size == 0) return mapped;  // mmap rejects length 0; the caller reports it as too short

  void* addr = ::mmap(nullptr, mapped.size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (addr == MAP_FAILED)
    return io_error(path + ": cannot map " + std::to_string(mapped.size) + " bytes (" +
                    errno_text(errno) + ")");
  const size_t size = mapped.size;
  mapped.owner = std::shared_ptr<const void>(
      addr, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  mapped.data = static_cast<const uint8_t*>(addr);
  return mapped;
}

}  // namespace orochi::weights
