// A TCP proxy on 127.0.0.1 in front of a Unix socket (the test PostgreSQL's), for tests
// that cut a process off from its database: Cut() closes every proxied connection and
// refuses new ones, as a network partition seen from the client side would.
//
// Threading: one acceptor thread and one thread per connection, all joined by the
// destructor; Cut() and port() may be called from any thread.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace frugal::testing {

class TcpProxy {
 public:
  // Listens on a free port of 127.0.0.1 and forwards each connection to `unix_path`.
  // Throws std::runtime_error if it cannot listen.
  explicit TcpProxy(std::string unix_path);
  ~TcpProxy();
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  // Closes every connection and the listening socket: connecting is refused from now on.
  void Cut();

 private:
  void AcceptLoop();
  void Pump(int client, int upstream);

  const std::string unix_path_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> cut_{false};
  std::mutex mu_;
  std::vector<int> fds_;              // guarded by mu_; closed by the destructor
  std::vector<std::thread> pumps_;    // guarded by mu_
  std::thread acceptor_;
};

}  // namespace frugal::testing
