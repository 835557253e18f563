// The HTTP client of the REST API v1 (docs/api.md), used by the `frugal` CLI and the
// worker agent. JSON in, JSON out, bearer-token auth. Transport failures become Status
// values here; HTTP error answers are returned as responses and turned into a Status by
// ResponseStatus(), so a caller can still read e.g. a 409 body when it expects one.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace frugal::api {

struct ClientResponse {
  int status = 0;
  nlohmann::json body;  // null when the server sent an empty body
  // As the server spelled them; if a header repeats, the first value is kept.
  std::map<std::string, std::string> headers;

  // The value of header `name` compared case-insensitively (HTTP header names are), or "".
  std::string Header(std::string_view name) const;
};

// Ok for a 2xx response. Otherwise the server's `error.message` verbatim, with the code
// mapped back from `error.code` (falling back to the HTTP status) and `error.field`;
// a non-2xx answer without an error object gives "HTTP <status>" as the message.
Status ResponseStatus(const ClientResponse& response);

// `path` with `params` appended as a percent-encoded query string, in the given order.
// Empty `params` returns `path` unchanged.
std::string WithQuery(const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& params);

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string UrlEncode(std::string_view text);

struct ClientOptions {
  // Applies to connecting, sending and waiting for the answer, each on its own.
  std::chrono::seconds timeout{30};
  // A request reuses and keeps a connection only when it starts within this gap of the
  // previous request's end; otherwise a connection still kept is closed first and the
  // request asks the server to close after answering. So a burst (a worker finishing jobs
  // back to back, a dispatch poll renewed at once) shares one connection, a slow cadence
  // (heartbeats every few seconds) holds no server thread between requests, and no
  // connection is reused after idling longer than the gap (keep it well under the
  // server's idle limit, 5 s on the edge). Zero: a connection per request.
  std::chrono::milliseconds keep_alive_gap{0};
};

// One scheduler, or several that share a database (high availability, decision 0020):
// `base_url` may list URLs separated by commas. A request goes to the one that answered
// last; when it cannot be reached the client fails over to the next (any request when the
// connection failed, so nothing was sent; GETs also after a timeout or a 503), and after
// any of these the next request starts at the next URL (a POST's caller retries there). A
// request opens its own connection unless ClientOptions::keep_alive_gap lets it reuse the
// previous one's; a kept connection whose close from the server (a restart) has arrived is
// noticed before sending and replaced. A POST sent on a kept connection to a scheduler that
// vanished without closing it fails (Unavailable) rather than going to the next URL at
// once; the caller's retry goes there.
//
// Thread-safety: one Client may be shared by threads; its requests are serialised.
class Client {
 public:
  // `base_url` is "http://host[:port][/prefix]" (port 80 by default; a bare "host:port"
  // means http), or several of them separated by commas. https is not supported. An unusable URL is not an error here: every
  // request then returns it as InvalidArgument, and url_status() reports it up front.
  // An empty `token` sends no Authorization header (for /healthz and /readyz).
  Client(const std::string& base_url, std::string token, ClientOptions options = {});
  ~Client();
  Client(Client&&) noexcept;
  Client& operator=(Client&&) noexcept;
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Ends the request another thread has in flight now (it returns Unavailable), e.g. a
  // long poll at shutdown. Thread-safe; later requests are not affected.
  void Abort();

  // Ok, or why `base_url` cannot be used.
  const Status& url_status() const;

  // The bearer token of later requests (the worker's node credential after registration).
  // Not while another thread has a request in flight.
  void set_token(std::string token);
  const std::string& base_url() const;

  // GET `path_with_query` (starting with '/'). Any HTTP answer is a ClientResponse, 4xx and
  // 5xx included. Errors: Unavailable when the scheduler cannot be reached or does not
  // answer in time; Internal when it answers with a body that is not JSON.
  StatusOr<ClientResponse> Get(const std::string& path_with_query);

  // POST `body` as JSON, with extra request `headers` (e.g. Idempotency-Key). Errors as Get.
  // A timeout after sending is Unavailable too, though the server may have acted on it:
  // callers that retry should use an idempotency key.
  StatusOr<ClientResponse> Post(const std::string& path,
                                const nlohmann::json& body = nlohmann::json::object(),
                                const std::map<std::string, std::string>& headers = {});

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace frugal::api
