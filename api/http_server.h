// The HTTP transport under the API (decision 0018): cpp-httplib's request parser, router and
// response writer, with its connection handling replaced so that slow or idle clients
// cannot stop the server. Internal to api/ (includes httplib).
//
// What it changes from a plain httplib::Server:
// - one thread per connection, up to `max_connections` (and `max_per_client` per peer
//   address), instead of httplib's fixed pool that 8 idle sockets fill; a connection over
//   either cap is answered 503 and closed at once, without a thread;
// - a total deadline for the request line and headers, and another for the body, instead
//   of a per-read timeout that a client sending a byte at a time never trips;
// - TCP_NODELAY on every connection; SO_REUSEADDR but never SO_REUSEPORT, so a second
//   process cannot bind the same port and share its traffic.
//
// Threading: Bind/Listen/Stop as httplib::Server. Handlers run on connection threads, so
// anything they share must be thread-safe; admission to handlers is HandlerLanes' job.
#pragma once

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "common/status.h"

namespace frugal::api {

struct EdgeLimits {
  // From accept (or from the first byte of a later request on a kept connection) until the
  // blank line that ends the headers. Slow clients are cut off after this, whatever their
  // pace. A few seconds: a real client sends its headers in one packet.
  std::chrono::milliseconds header_deadline{5000};
  // From the end of the headers until the last byte of the body, for bodies up to
  // small_body_bytes; larger ones (batch submit, up to 16 MiB) get large_body_deadline.
  std::chrono::milliseconds body_deadline{10000};
  std::chrono::milliseconds large_body_deadline{60000};
  std::size_t small_body_bytes = 1 << 20;
  // Requests with a body over small_body_bytes being read or handled at once; more are
  // answered 503 before their body is read.
  int max_large_bodies = 4;
  // How long a kept-alive connection may sit idle between requests.
  std::chrono::milliseconds keep_alive_idle{5000};
  // Per send: a client that stops reading its response.
  std::chrono::milliseconds write_timeout{10000};
  size_t keep_alive_max_requests = 100;
  int max_connections = 512;
  int max_per_client = 128;  // per peer IP address; a NAT can hold many honest clients
};

class HttpServer : public httplib::Server {
 public:
  explicit HttpServer(EdgeLimits limits = {});
  ~HttpServer() override;

  // Binds host:port (0 picks a free port) and returns the bound port. Unavailable naming
  // the address and the reason ("address already in use") when it cannot.
  StatusOr<int> Bind(const std::string& host, int port);

  // The largest body a request to a path may announce (default: httplib's payload limit
  // for every path). A request whose Content-Length is over it is answered 413 through the
  // error handler without its body being read, and its connection is closed; so is a
  // chunked body (411), and a large body while max_large_bodies are in flight (503). Set
  // before Listen.
  void set_body_limit(std::function<std::size_t(const std::string& path)> limit);

  // Connections open now (for tests and logs).
  int open_connections() const { return open_.load(); }

 private:
  // Called by httplib's accept loop for each accepted socket, on the thread the task queue
  // gives it; owns and closes `sock`.
  bool process_and_close_socket(socket_t sock) override;
  bool AdmitClient(const std::string& ip);
  void ReleaseClient(const std::string& ip);

  const EdgeLimits limits_;
  std::function<std::size_t(const std::string&)> body_limit_;
  std::atomic<int> open_{0};
  std::atomic<int> large_in_flight_{0};
  std::mutex mu_;
  std::map<std::string, int> per_client_;  // guarded by mu_
};

}  // namespace frugal::api
