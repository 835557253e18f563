#include "api/client.h"

#include <httplib.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <mutex>

namespace frugal::api {

namespace {

using nlohmann::json;

struct ParsedUrl {
  std::string host;
  int port = 80;
  std::string prefix;  // "" or "/something", without a trailing slash
};

StatusOr<int> ParsePort(const std::string& text, const std::string& url) {
  if (text.empty() || text.size() > 5 ||
      text.find_first_not_of("0123456789") != std::string::npos) {
    return InvalidArgument("bad port in scheduler URL '" + url + "'", "url");
  }
  const int port = std::stoi(text);
  if (port < 1 || port > 65535) {
    return InvalidArgument("port out of range in scheduler URL '" + url + "'", "url");
  }
  return port;
}

// Splits "host", "host:port", "[v6]" or "[v6]:port".
Status ParseAuthority(const std::string& authority, const std::string& url, ParsedUrl& out) {
  std::string::size_type port_colon = std::string::npos;
  if (!authority.empty() && authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string::npos)
      return InvalidArgument("unclosed '[' in URL '" + url + "'", "url");
    out.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') {
        return InvalidArgument("bad host in scheduler URL '" + url + "'", "url");
      }
      port_colon = close + 1;
    }
  } else {
    port_colon = authority.find(':');
    out.host = authority.substr(0, port_colon);
  }
  if (out.host.empty() || out.host.find_first_of("@/?#[] ") != std::string::npos) {
    return InvalidArgument("bad host in scheduler URL '" + url + "'", "url");
  }
  if (port_colon != std::string::npos) {
    ASSIGN_OR_RETURN(out.port, ParsePort(authority.substr(port_colon + 1), url));
  }
  return Status::Ok();
}

StatusOr<ParsedUrl> ParseBaseUrl(const std::string& url) {
  std::string rest = url;
  const auto scheme_end = rest.find("://");
  if (scheme_end != std::string::npos) {
    std::string scheme = rest.substr(0, scheme_end);
    for (auto& c : scheme) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (scheme != "http") {
      return InvalidArgument("scheduler URL '" + url + "': only http:// is supported", "url");
    }
    rest = rest.substr(scheme_end + 3);
  }
  const auto slash = rest.find('/');
  ParsedUrl out;
  RETURN_IF_ERROR(ParseAuthority(rest.substr(0, slash), url, out));
  if (slash != std::string::npos) out.prefix = rest.substr(slash);
  while (!out.prefix.empty() && out.prefix.back() == '/') out.prefix.pop_back();
  if (out.prefix.find_first_of("?#") != std::string::npos) {
    return InvalidArgument("scheduler URL '" + url + "' must not have a query or fragment", "url");
  }
  return out;
}

// Says what went wrong in words a user can act on; httplib's names are terse.
std::string DescribeTransportError(httplib::Error error, std::chrono::seconds timeout) {
  const std::string after = " after " + std::to_string(timeout.count()) + "s";
  switch (error) {
    case httplib::Error::Connection:
      return "connection failed (is the scheduler running there?)";
    case httplib::Error::ConnectionTimeout:
      return "connection timed out" + after;
    case httplib::Error::Read:
      return "no answer (connection closed, or timed out" + after + ")";
    case httplib::Error::Write:
      return "sending the request failed";
    default:
      return httplib::to_string(error);
  }
}

StatusCode CodeFromName(const std::string& name) {
  for (StatusCode c :
       {StatusCode::kInvalidArgument, StatusCode::kUnauthenticated, StatusCode::kPermissionDenied,
        StatusCode::kNotFound, StatusCode::kConflict, StatusCode::kPayloadTooLarge,
        StatusCode::kFailedPrecondition, StatusCode::kUnavailable, StatusCode::kInternal}) {
    if (name == StatusCodeName(c)) return c;
  }
  return StatusCode::kOk;  // unknown: the caller falls back to the HTTP status
}

StatusCode CodeFromHttpStatus(int status) {
  switch (status) {
    case 400:
      return StatusCode::kInvalidArgument;
    case 401:
      return StatusCode::kUnauthenticated;
    case 403:
      return StatusCode::kPermissionDenied;
    case 404:
      return StatusCode::kNotFound;
    case 409:
      return StatusCode::kConflict;
    case 413:
      return StatusCode::kPayloadTooLarge;
    case 422:
      return StatusCode::kFailedPrecondition;
    case 502:
    case 503:
    case 504:
      return StatusCode::kUnavailable;
    default:
      return status >= 400 && status < 500 ? StatusCode::kInvalidArgument : StatusCode::kInternal;
  }
}

std::string StringOr(const json& object, const char* key) {
  if (!object.is_object()) return "";
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

std::string ClientResponse::Header(std::string_view name) const {
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string wanted = lower(name);
  for (const auto& [key, value] : headers) {
    if (lower(key) == wanted) return value;
  }
  return "";
}

Status ResponseStatus(const ClientResponse& response) {
  if (response.status >= 200 && response.status < 300) return Status::Ok();
  const json error = response.body.is_object() && response.body.contains("error")
                         ? response.body["error"]
                         : json();
  std::string message = StringOr(error, "message");
  if (message.empty()) message = "HTTP " + std::to_string(response.status);
  StatusCode code = CodeFromName(StringOr(error, "code"));
  if (code == StatusCode::kOk) code = CodeFromHttpStatus(response.status);
  return Status(code, std::move(message), StringOr(error, "field"));
}

std::string UrlEncode(std::string_view text) {
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += ch;
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::string WithQuery(const std::string& path,
                      const std::vector<std::pair<std::string, std::string>>& params) {
  std::string out = path;
  char sep = '?';
  for (const auto& [key, value] : params) {
    out += sep + UrlEncode(key) + "=" + UrlEncode(value);
    sep = '&';
  }
  return out;
}

// The comma-separated parts of `base_url`, spaces around each trimmed.
std::vector<std::string> SplitUrls(const std::string& base_url) {
  std::vector<std::string> out;
  std::string::size_type start = 0;
  while (true) {
    const auto comma = base_url.find(',', start);
    std::string part = base_url.substr(start, comma == std::string::npos ? comma : comma - start);
    const auto first = part.find_first_not_of(" \t");
    const auto last = part.find_last_not_of(" \t");
    out.push_back(first == std::string::npos ? "" : part.substr(first, last - first + 1));
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

class Client::Impl {
 public:
  Impl(const std::string& base_url, std::string token, ClientOptions options)
      : base_url_(base_url), token_(std::move(token)), options_(options) {
    for (const std::string& url : SplitUrls(base_url)) {
      if (url.empty()) {
        url_status_ = InvalidArgument("empty scheduler URL in '" + base_url + "'", "url");
        return;
      }
      auto parsed = ParseBaseUrl(url);
      if (!parsed.ok()) {
        url_status_ = parsed.status();
        return;
      }
      Endpoint e{url, parsed->prefix, std::make_unique<httplib::Client>(parsed->host, parsed->port)};
      e.http->set_connection_timeout(options_.timeout);
      e.http->set_read_timeout(options_.timeout);
      e.http->set_write_timeout(options_.timeout);
      // Kept connections send small requests in two writes (headers, body): without
      // TCP_NODELAY the second waits for the server's delayed acknowledgement (~40 ms).
      e.http->set_keep_alive(options_.keep_alive_gap.count() > 0);
      e.http->set_tcp_nodelay(true);
      endpoints_.push_back(std::move(e));
    }
  }

  const Status& url_status() const { return url_status_; }
  const std::string& base_url() const { return base_url_; }
  void Abort() {
    for (auto& e : endpoints_) e.http->stop();
  }
  void set_token(std::string token) { token_ = std::move(token); }

  StatusOr<ClientResponse> Get(const std::string& path) {
    RETURN_IF_ERROR(url_status_);
    return Send(/*idempotent=*/true, {}, [&](Endpoint& e, const httplib::Headers& headers) {
      return e.http->Get(e.prefix + path, headers);
    });
  }

  StatusOr<ClientResponse> Post(const std::string& path, const json& body,
                                const std::map<std::string, std::string>& extra) {
    RETURN_IF_ERROR(url_status_);
    std::string text;
    try {
      text = body.dump();
    } catch (const json::exception&) {
      // nlohmann refuses to serialise strings that are not UTF-8; say so instead of crashing.
      return InvalidArgument("request contains text that is not valid UTF-8");
    }
    return Send(/*idempotent=*/false, extra, [&](Endpoint& e, const httplib::Headers& headers) {
      return e.http->Post(e.prefix + path, headers, text, "application/json");
    });
  }

 private:
  struct Endpoint {
    std::string url;
    std::string prefix;
    std::unique_ptr<httplib::Client> http;
  };

  // Sends through the endpoint that answered last, failing over to the next ones (each
  // once) when it cannot be reached. Schedulers sharing a database serve the same API, so
  // any one will do. A request that may have reached a server (a read timeout, a 503) is
  // tried elsewhere at once only when `idempotent`; either way the next request starts at
  // the next endpoint, so a frozen scheduler costs one timeout, not one per request.
  // Serialised (send_mu_): whether a kept connection may be reused is decided, and a stale
  // one closed, with no other request of this client in flight.
  template <typename SendFn>
  StatusOr<ClientResponse> Send(bool idempotent, const std::map<std::string, std::string>& extra,
                                SendFn&& send) {
    std::lock_guard<std::mutex> lock(send_mu_);
    httplib::Headers headers = RequestHeaders(extra);
    if (!ReuseConnection()) headers.emplace("Connection", "close");
    struct Ended {  // when this request ended, however it returns
      Impl* self;
      ~Ended() { self->last_end_ms_ = NowMs(); }
    } ended{this};
    const std::size_t n = endpoints_.size();
    const std::size_t start = current_.load();
    std::string failures;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (start + k) % n;
      Endpoint& e = endpoints_[i];
      httplib::Result result = send(e, headers);
      const bool last = k + 1 == n;
      if (!result) {
        const std::string why = DescribeTransportError(result.error(), options_.timeout);
        failures += (failures.empty() ? "" : "; ") + e.url + ": " + why;
        std::size_t expected = i;  // unless another thread has moved on already
        current_.compare_exchange_strong(expected, (i + 1) % n);
        const bool not_sent = result.error() == httplib::Error::Connection ||
                              result.error() == httplib::Error::ConnectionTimeout;
        if (!last && (not_sent || idempotent)) continue;
        return Unavailable(n == 1 ? "cannot reach scheduler at " + e.url + ": " + why
                                  : "cannot reach any scheduler (" + failures + ")");
      }
      if (result->status == 503) {
        // Not serving now (its database out of reach, at its connection cap): another
        // scheduler may be. A POST's caller retries as it would on this one.
        std::size_t expected = i;
        current_.compare_exchange_strong(expected, (i + 1) % n);
        if (idempotent && !last) continue;
        return Convert(result, e.url);
      }
      current_.store(i);
      return Convert(result, e.url);
    }
    return Unavailable("no scheduler URL");  // n == 0: not reached (SplitUrls gives one)
  }

  static std::int64_t NowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  // Whether this request may use, and then keep, a connection: only when it follows the
  // previous request's end within keep_alive_gap. Otherwise any connection still kept has
  // idled longer than the gap and is closed first: the server may be closing it at its own
  // idle limit right now, and a request sent into that close is lost.
  bool ReuseConnection() {
    if (options_.keep_alive_gap.count() <= 0) return false;
    if (last_end_ms_ >= 0 && NowMs() - last_end_ms_ <= options_.keep_alive_gap.count()) {
      return true;
    }
    for (auto& e : endpoints_) e.http->stop();  // no request in flight: closes at once
    return false;
  }

  httplib::Headers RequestHeaders(const std::map<std::string, std::string>& extra) const {
    httplib::Headers h{{"Accept", "application/json"}};
    if (!token_.empty()) h.emplace("Authorization", "Bearer " + token_);
    for (const auto& [key, value] : extra) h.emplace(key, value);
    return h;
  }

  static StatusOr<ClientResponse> Convert(const httplib::Result& result, const std::string& url) {
    ClientResponse out;
    out.status = result->status;
    for (const auto& [key, value] : result->headers) out.headers.emplace(key, value);
    if (result->body.empty()) return out;
    out.body = json::parse(result->body, nullptr, /*allow_exceptions=*/false);
    if (out.body.is_discarded()) {
      return Internal("scheduler at " + url + " answered HTTP " +
                      std::to_string(result->status) +
                      " with a body that is not JSON: " + result->body.substr(0, 200));
    }
    return out;
  }

  const std::string base_url_;
  std::string token_;
  const ClientOptions options_;
  Status url_status_;
  std::vector<Endpoint> endpoints_;     // empty when url_status_ is an error
  std::atomic<std::size_t> current_{0};  // the endpoint to try first
  std::mutex send_mu_;                   // held for each request (Send)
  std::int64_t last_end_ms_ = -1;  // guarded by send_mu_: steady clock, when the last one ended
};

Client::Client(const std::string& base_url, std::string token, ClientOptions options)
    : impl_(std::make_unique<Impl>(base_url, std::move(token), options)) {}
Client::~Client() = default;
Client::Client(Client&&) noexcept = default;
Client& Client::operator=(Client&&) noexcept = default;

const Status& Client::url_status() const { return impl_->url_status(); }
void Client::set_token(std::string token) { impl_->set_token(std::move(token)); }
const std::string& Client::base_url() const { return impl_->base_url(); }
void Client::Abort() { impl_->Abort(); }

StatusOr<ClientResponse> Client::Get(const std::string& path_with_query) {
  return impl_->Get(path_with_query);
}

StatusOr<ClientResponse> Client::Post(const std::string& path, const nlohmann::json& body,
                                      const std::map<std::string, std::string>& headers) {
  return impl_->Post(path, body, headers);
}

}  // namespace frugal::api
