#include "api/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <thread>

namespace frugal::api {

namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int kListenBacklog = 1024;  // the kernel caps it at net.core.somaxconn

// Set by ConnectionThreads on the accept thread when the server is full: the connection is
// refused without a thread of its own.
thread_local bool t_over_capacity = false;
// Set on a connection's thread once a request's headers rule it out: the answer to give
// without reading its body (413 over the path's limit, 411 chunked, 503 too many large
// bodies at once), after which the connection ends; 0: route it.
thread_local int t_refuse = 0;
thread_local std::string t_refuse_why;

// httplib's TaskQueue, one detached thread per connection, at most `cap` at once. A fixed
// pool would let a handful of idle sockets hold every thread; deadlines bound how long
// each thread can be held instead, and the cap bounds how many there are.
class ConnectionThreads : public httplib::TaskQueue {
 public:
  explicit ConnectionThreads(int cap) : cap_(cap) {}

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (active_ < cap_) {
        ++active_;
      } else {
        t_over_capacity = true;
      }
    }
    if (t_over_capacity) {
      fn();  // refuses and closes the socket at once (process_and_close_socket)
      t_over_capacity = false;
      return;
    }
    try {
      std::thread([this, fn = std::move(fn)] {
        fn();
        Done();
      }).detach();
    } catch (const std::system_error&) {
      // Out of threads: refuse this one rather than stall the accept loop.
      Done();
      t_over_capacity = true;
      fn();
      t_over_capacity = false;
    }
  }

  // Called by httplib after its accept loop ends: waits for every connection to finish
  // (each ends within its deadlines once the listening socket is closed).
  void shutdown() override {
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [&] { return active_ == 0; });
  }

 private:
  void Done() {
    std::lock_guard<std::mutex> lock(mu_);
    --active_;
    done_.notify_all();
  }

  const int cap_;
  std::mutex mu_;
  std::condition_variable done_;
  int active_ = 0;  // guarded by mu_
};

int MillisUntil(SteadyClock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t - SteadyClock::now()).count();
  return static_cast<int>(std::clamp<long long>(ms, 0, 1 << 30));
}

bool Poll(int fd, short events, int timeout_ms) {
  pollfd p{fd, events, 0};
  int n;
  do {
    n = ::poll(&p, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

// A socket stream whose reads fail once a deadline passes, however the bytes trickle in.
// Buffered, because httplib reads request lines a byte at a time.
class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(int fd, std::chrono::milliseconds write_timeout)
      : fd_(fd), write_timeout_(write_timeout) {}

  void SetDeadline(SteadyClock::time_point t) { deadline_ = t; }
  bool has_buffered() const { return pos_ < end_; }
  // A read failed because the deadline passed: the connection must not be reused.
  bool expired() const { return expired_; }

  bool is_readable() const override {
    return has_buffered() || Poll(fd_, POLLIN, MillisUntil(deadline_));
  }
  bool is_writable() const override {
    return Poll(fd_, POLLOUT, static_cast<int>(write_timeout_.count()));
  }

  ssize_t read(char* ptr, size_t size) override {
    if (!has_buffered()) {
      if (SteadyClock::now() >= deadline_ || !is_readable()) {
        expired_ = true;
        return -1;
      }
      ssize_t n;
      do {
        n = ::recv(fd_, buf_, sizeof buf_, 0);
      } while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      pos_ = 0;
      end_ = static_cast<size_t>(n);
    }
    size_t n = std::min(size, end_ - pos_);
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) Name(addr, len, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) Name(addr, len, ip, port);
  }
  socket_t socket() const override { return fd_; }

  static void Name(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port) {
    char host[NI_MAXHOST];
    char serv[NI_MAXSERV];
    if (getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, serv,
                    sizeof serv, NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
      ip = host;
      port = std::atoi(serv);
    }
  }

 private:
  const int fd_;
  const std::chrono::milliseconds write_timeout_;
  SteadyClock::time_point deadline_ = SteadyClock::now();
  bool expired_ = false;
  char buf_[4096];
  size_t pos_ = 0, end_ = 0;
};

void CloseSocket(int fd) {
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

// What a refused connection gets: one non-blocking write of a 503, then the close.
void Refuse(int fd, const char* why) {
  const std::string body = std::string(R"({"error":{"code":"unavailable","message":")") + why +
                           R"(","field":null}})";
  const std::string text = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n"
                           "Content-Type: application/json\r\nConnection: close\r\n"
                           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)::send(fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  CloseSocket(fd);
}

// SO_REUSEADDR lets a restart bind while old connections sit in TIME_WAIT. httplib's
// default also sets SO_REUSEPORT, which lets a second process bind the same port and take
// half the connections: never.
void ListenSocketOptions(socket_t sock) {
  int yes = 1;
  setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

// Why host:port cannot be bound, found by trying it the same way httplib does.
std::string BindError(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return gai_strerror(rc);
  }
  std::string why = "cannot bind";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    ListenSocketOptions(fd);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 1) != 0) {
      why = errno == EADDRINUSE ? "address already in use (is another frugal-scheduler running?)"
                                : std::strerror(errno);
    }
    ::close(fd);
  }
  freeaddrinfo(found);
  return why;
}

// After the response is written: stops sending, then reads and drops what the client still
// sends, until it closes, `limit` passes, or kMaxDrainBytes were dropped. Memory stays one
// buffer, however large the body the client announced.
void LingeringDrain(socket_t sock, std::chrono::milliseconds limit) {
  constexpr std::size_t kMaxDrainBytes = 64 << 20;
  ::shutdown(sock, SHUT_WR);
  const auto end = SteadyClock::now() + limit;
  char buf[16 * 1024];
  std::size_t dropped = 0;
  while (dropped < kMaxDrainBytes && SteadyClock::now() < end) {
    if (!Poll(sock, POLLIN, std::min(200, MillisUntil(end)))) continue;
    const ssize_t n = ::recv(sock, buf, sizeof buf, 0);
    if (n <= 0) return;
    dropped += static_cast<std::size_t>(n);
  }
}

}  // namespace

HttpServer::HttpServer(EdgeLimits limits) : limits_(limits) {
  new_task_queue = [this] { return new ConnectionThreads(limits_.max_connections); };
  set_tcp_nodelay(true);
  set_socket_options(ListenSocketOptions);
  set_keep_alive_max_count(limits_.keep_alive_max_requests);
  set_pre_routing_handler([](const httplib::Request&, httplib::Response& res) {
    if (t_refuse == 0) return HandlerResponse::Unhandled;
    res.status = t_refuse;
    if (!t_refuse_why.empty()) {
      const char* code = t_refuse == 411 ? "invalid_argument" : "unavailable";
      res.set_content(std::string(R"({"error":{"code":")") + code + R"(","message":")" +
                          t_refuse_why + R"(","field":null}})",
                      "application/json");
    }  // else 413: the error handler words it, naming the path's limit
    res.set_header("Connection", "close");
    return HandlerResponse::Handled;
  });
}

void HttpServer::set_body_limit(std::function<std::size_t(const std::string& path)> limit) {
  body_limit_ = std::move(limit);
}

HttpServer::~HttpServer() = default;

StatusOr<int> HttpServer::Bind(const std::string& host, int port) {
  int bound = port == 0 ? bind_to_any_port(host) : (bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    return Unavailable("cannot listen on " + host + ":" + std::to_string(port) + ": " +
                       BindError(host, port));
  }
  // httplib listens with a backlog of 5: a burst of connects overflows it, and the kernel
  // then drops or resets connections the client already counts as open. listen(2) on a
  // listening socket only resizes its queue.
  ::listen(svr_sock_, kListenBacklog);
  return bound;
}

bool HttpServer::AdmitClient(const std::string& ip) {
  std::lock_guard<std::mutex> lock(mu_);
  int& n = per_client_[ip];
  if (n >= limits_.max_per_client) return false;
  ++n;
  return true;
}

void HttpServer::ReleaseClient(const std::string& ip) {
  std::lock_guard<std::mutex> lock(mu_);
  if (--per_client_[ip] <= 0) per_client_.erase(ip);
}

bool HttpServer::process_and_close_socket(socket_t sock) {
  const auto accepted = SteadyClock::now();
  if (t_over_capacity) {
    Refuse(sock, "too many connections; retry shortly");
    return false;
  }
  DeadlineStream strm(sock, limits_.write_timeout);
  std::string ip;
  int peer_port = 0;
  strm.get_remote_ip_and_port(ip, peer_port);
  if (!AdmitClient(ip)) {
    Refuse(sock, "too many connections from this address; retry shortly");
    return false;
  }
  ++open_;
  int yes = 1;
  setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);

  bool ok = false;
  for (size_t served = 0; served < limits_.keep_alive_max_requests; ++served) {
    // The first request's header clock starts at accept; a later one's at its first byte,
    // after at most keep_alive_idle of silence. Wait in slices to notice Stop().
    const auto idle_end = served == 0 ? accepted + limits_.header_deadline
                                      : SteadyClock::now() + limits_.keep_alive_idle;
    bool readable = strm.has_buffered();
    while (!readable && svr_sock_ != INVALID_SOCKET && SteadyClock::now() < idle_end) {
      readable = Poll(sock, POLLIN, std::min(200, MillisUntil(idle_end)));
    }
    if (!readable || svr_sock_ == INVALID_SOCKET) break;
    strm.SetDeadline(served == 0 ? accepted + limits_.header_deadline
                                 : SteadyClock::now() + limits_.header_deadline);
    bool closed = false;
    t_refuse = 0;
    t_refuse_why.clear();
    bool large = false;  // holds one of the large-body places until the request is done
    const bool last = served + 1 == limits_.keep_alive_max_requests;
    // httplib calls this once the headers are in, before it reads the body.
    ok = process_request(strm, last, closed, [&](httplib::Request& req) {
      strm.SetDeadline(SteadyClock::now() + limits_.body_deadline);
      // A request with neither Content-Length nor Transfer-Encoding has no body (RFC 9112
      // 6.3). httplib would read a POST's body until the client closes, so `curl -X POST`
      // on a route that needs none (cancel) waited out the body deadline, then got 400.
      if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) {
        req.headers.emplace("Content-Length", "0");
      }
      if (!body_limit_) return;
      // Chunked bodies are not taken: httplib reads them without its size limit.
      if (req.has_header("Transfer-Encoding")) {
        t_refuse = 411;
        t_refuse_why = "send the body with Content-Length, not Transfer-Encoding";
        return;
      }
      std::string length = req.get_header_value("Content-Length");
      length.erase(0, std::min(length.find_first_not_of('0'), length.size()));
      if (length.find_first_not_of("0123456789") != std::string::npos) return;  // httplib: 400
      const std::size_t limit = body_limit_(req.path);
      // More digits than a size_t holds is over any limit.
      const std::size_t bytes = length.size() > 18 ? SIZE_MAX : length.empty() ? 0 : std::stoull(length);
      if (bytes > limit) {
        t_refuse = 413;
      } else if (bytes > limits_.small_body_bytes) {
        // A body over the small size is read before its token is checked: bound how many
        // are held at once, so memory stays limits_.max_large_bodies times the largest.
        if (large_in_flight_.fetch_add(1) >= limits_.max_large_bodies) {
          large_in_flight_.fetch_sub(1);
          t_refuse = 503;
          t_refuse_why = "too many large requests at once; retry shortly";
          return;
        }
        large = true;
        strm.SetDeadline(SteadyClock::now() + limits_.large_body_deadline);
      }
    });
    if (large) large_in_flight_.fetch_sub(1);
    if (t_refuse != 0) {
      // The unread body would be taken for the next request, so the connection ends. A
      // client still sending it would get a reset, and most then never read the 413: read
      // and drop what it sends for a bounded while first (nginx's lingering close).
      LingeringDrain(sock, limits_.body_deadline);
      break;
    }
    if (!ok || closed || strm.expired()) break;
  }
  CloseSocket(sock);
  --open_;
  ReleaseClient(ip);
  return ok;
}

}  // namespace frugal::api
