#include "control.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

namespace soak {

LineChannel::LineChannel(int readFd, int writeFd) : readFd_(readFd), writeFd_(writeFd) {
  fcntl(readFd_, F_SETFL, fcntl(readFd_, F_GETFL) | O_NONBLOCK);
}

bool LineChannel::receive(std::vector<std::string>* lines) {
  char buffer[4096];
  for (;;) {
    ssize_t n = read(readFd_, buffer, sizeof(buffer));
    if (n > 0) {
      partial_.append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    const bool open = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    size_t begin = 0;
    for (size_t end; (end = partial_.find('\n', begin)) != std::string::npos; begin = end + 1) {
      lines->push_back(partial_.substr(begin, end - begin));
    }
    partial_.erase(0, begin);
    return open;
  }
}

bool LineChannel::send(const std::string& line) const {
  const std::string text = line + "\n";
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(writeFd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

std::string toHex(const unsigned char* data, size_t size) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out(2 * size, '0');
  for (size_t i = 0; i < size; ++i) {
    out[2 * i] = kDigits[data[i] >> 4];
    out[2 * i + 1] = kDigits[data[i] & 15];
  }
  return out;
}

bool fromHex(std::string_view hex, unsigned char* out, size_t size) {
  if (hex.size() != 2 * size) return false;
  auto digit = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < size; ++i) {
    const int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<unsigned char>(hi << 4 | lo);
  }
  return true;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin < line.size()) {
    size_t end = line.find(' ', begin);
    if (end == std::string::npos) end = line.size();
    if (end > begin) out.push_back(line.substr(begin, end - begin));
    begin = end + 1;
  }
  return out;
}

std::string rest(const std::string& line, int skipWords) {
  size_t at = 0;
  for (int i = 0; i < skipWords && at != std::string::npos; ++i) {
    at = line.find(' ', at);
    if (at != std::string::npos) ++at;
  }
  return at == std::string::npos ? std::string() : line.substr(at);
}

int64_t residentKb() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  long long size = 0, resident = 0;
  const int got = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  if (got != 2) return -1;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

}  // namespace soak
