#include "tests/e2e/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace frugal::testing {

TcpProxy::TcpProxy(std::string unix_path) : unix_path_(std::move(unix_path)) {
  listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listen_fd_, 64) != 0 ||
      getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error(std::string("proxy: cannot listen: ") + std::strerror(errno));
  }
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { AcceptLoop(); });
}

TcpProxy::~TcpProxy() {
  Cut();
  acceptor_.join();
  std::vector<std::thread> pumps;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pumps.swap(pumps_);
  }
  for (auto& t : pumps) t.join();
  for (int fd : fds_) close(fd);
  close(listen_fd_);
}

void TcpProxy::Cut() {
  if (cut_.exchange(true)) return;
  // shutdown, not close: it wakes the threads blocked on these sockets, and the numbers
  // are not reused while they still hold them.
  shutdown(listen_fd_, SHUT_RDWR);
  std::lock_guard<std::mutex> lock(mu_);
  for (int fd : fds_) shutdown(fd, SHUT_RDWR);
}

void TcpProxy::AcceptLoop() {
  while (!cut_) {
    const int client = accept(listen_fd_, nullptr, nullptr);
    if (client < 0) {
      if (errno == EINTR) continue;
      return;  // shut down by Cut()
    }
    const int upstream = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    std::strncpy(un.sun_path, unix_path_.c_str(), sizeof un.sun_path - 1);
    if (upstream < 0 ||
        connect(upstream, reinterpret_cast<sockaddr*>(&un), sizeof un) != 0) {
      close(client);
      if (upstream >= 0) close(upstream);
      continue;
    }
    std::lock_guard<std::mutex> lock(mu_);
    fds_.push_back(client);
    fds_.push_back(upstream);
    if (cut_) {  // Cut() ran after accept(): do not start forwarding
      shutdown(client, SHUT_RDWR);
      shutdown(upstream, SHUT_RDWR);
      continue;
    }
    pumps_.emplace_back([this, client, upstream] { Pump(client, upstream); });
  }
}

void TcpProxy::Pump(int client, int upstream) {
  pollfd fds[2] = {{client, POLLIN, 0}, {upstream, POLLIN, 0}};
  char buf[16384];
  while (!cut_) {
    if (poll(fds, 2, 200) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    bool done = false;
    for (int i = 0; i < 2 && !done; ++i) {
      if (fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        done = true;
        break;
      }
      const int to = fds[1 - i].fd;
      for (ssize_t off = 0; off < n;) {
        // MSG_NOSIGNAL: a peer that has gone must not SIGPIPE the test binary.
        const ssize_t w = send(to, buf + off, static_cast<std::size_t>(n - off), MSG_NOSIGNAL);
        if (w <= 0) {
          done = true;
          break;
        }
        off += w;
      }
    }
    if (done) break;
  }
  shutdown(client, SHUT_RDWR);
  shutdown(upstream, SHUT_RDWR);
}

}  // namespace frugal::testing
