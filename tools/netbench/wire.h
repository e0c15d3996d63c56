// The out-of-band bootstrap between the two netbench processes, in place of NCCL's bootstrap:
// one TCP connection carrying length-prefixed JSON messages (the options, the listen handles,
// per-size start/result, abort). Blocking calls, each with a deadline.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "pilot/core/result.h"

namespace pilot::cli {

/// A connected bootstrap socket. Move-only; closes on destruction.
class WireSocket {
 public:
  WireSocket() = default;
  explicit WireSocket(int fd) : fd_(fd) {}
  WireSocket(WireSocket&& o) noexcept : fd_(o.fd_), peer_(std::move(o.peer_)) { o.fd_ = -1; }
  WireSocket& operator=(WireSocket&& o) noexcept;
  ~WireSocket();

  /// Retries until `timeoutS` (the peer may not listen yet).
  static Expected<WireSocket> connectTo(const std::string& host, int port, double timeoutS);

  Status send(const nlohmann::json& message);
  /// The next message; fails on timeout, a closed connection or a malformed frame.
  Expected<nlohmann::json> receive(double timeoutS);
  /// Whether a message (or EOF) is waiting, after up to `timeoutMs`.
  bool readable(int timeoutMs) const;

  int fd() const { return fd_; }
  const std::string& peer() const { return peer_; }
  void setPeer(std::string peer) { peer_ = std::move(peer); }

 private:
  int fd_ = -1;
  std::string peer_;
};

class WireListener {
 public:
  WireListener() = default;
  WireListener(WireListener&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  WireListener& operator=(WireListener&& o) noexcept;
  ~WireListener();

  /// Every address (IPv6 dual-stack when available); port 0 picks a free one.
  static Expected<WireListener> listenOn(int port);
  /// 127.0.0.1 only, a free port: the default mode's socket, handed to the spawned peer.
  static Expected<WireListener> listenLoopback();
  /// Takes over an inherited listening socket.
  static WireListener adopt(int fd);

  Expected<WireSocket> accept(double timeoutS);
  int port() const;
  int fd() const { return fd_; }
  /// Gives up ownership (the parent closes its copy after the spawn).
  int release();

 private:
  explicit WireListener(int fd) : fd_(fd) {}
  int fd_ = -1;
};

/// "HOST:PORT" or "[V6ADDR]:PORT".
Expected<std::pair<std::string, int>> parseHostPort(const std::string& text);

}  // namespace pilot::cli
