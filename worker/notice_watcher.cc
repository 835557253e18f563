#include "worker/notice_watcher.h"

#include <httplib.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "common/log.h"

namespace frugal::worker {

namespace {

using Millis = std::chrono::milliseconds;
using SteadyTime = std::chrono::steady_clock::time_point;

volatile std::sig_atomic_t g_sigusr1 = 0;

void OnSigusr1(int) { g_sigusr1 = 1; }

constexpr size_t kMaxAnswer = 64 * 1024;
constexpr const char* kAwsTokenPath = "/latest/api/token";
constexpr const char* kAwsTokenTtlHeader = "X-aws-ec2-metadata-token-ttl-seconds";
constexpr const char* kAwsTokenHeader = "X-aws-ec2-metadata-token";
constexpr const char* kAwsRebalancePath = "/latest/meta-data/events/recommendations/rebalance";

struct MetadataUrl {
  std::string base;  // http://host[:port], for the paths AWS derives from it
  std::string host;
  int port = 80;
  std::string path = "/";
};

StatusOr<MetadataUrl> ParseMetadataUrl(const std::string& url) {
  const std::string scheme = "http://";
  auto bad = [&](const std::string& why) {
    return InvalidArgument("notice URL '" + url + "': " + why, "notice_url");
  };
  if (url.compare(0, scheme.size(), scheme) != 0) return bad("must start with http://");
  MetadataUrl u;
  const auto slash = url.find('/', scheme.size());
  u.base = url.substr(0, slash);
  if (slash != std::string::npos) u.path = url.substr(slash);
  const std::string authority = u.base.substr(scheme.size());
  std::string port;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {  // IPv6, e.g. AWS's [fd00:ec2::254]
    const auto close = authority.find(']');
    if (close == std::string::npos) return bad("unclosed '['");
    u.host = authority.substr(1, close - 1);
    const std::string rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return bad("bad host");
    has_port = !rest.empty();
    if (has_port) port = rest.substr(1);
  } else {
    const auto colon = authority.find(':');
    u.host = authority.substr(0, colon);
    has_port = colon != std::string::npos;
    if (has_port) port = authority.substr(colon + 1);
  }
  if (u.host.empty() || u.host.find_first_of("@?#/ ") != std::string::npos) {
    return bad("bad host");
  }
  if (has_port) {
    if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != port.npos ||
        std::stoi(port) < 1 || std::stoi(port) > 65535) {
      return bad("bad port");
    }
    u.port = std::stoi(port);
  }
  return u;
}

std::string Trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

// A string member of a JSON object body, or "" when the body is anything else.
std::string JsonString(const std::string& body, const char* key) {
  const auto j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

std::string UrlEncode(const std::string& text) {
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

// httplib's error names are terse ("Read"); these say what happened.
std::string Describe(httplib::Error error) {
  switch (error) {
    case httplib::Error::Connection:
      return "cannot connect";
    case httplib::Error::ConnectionTimeout:
      return "connecting timed out";
    case httplib::Error::Read:
      return "no answer in time (or the connection closed)";
    default:
      return httplib::to_string(error);
  }
}

struct Answer {
  int status = 0;
  std::string body;
  httplib::Headers headers;
  std::string Header(const char* name) const {
    const auto it = headers.find(name);  // httplib compares header names ignoring case
    return it == headers.end() ? "" : it->second;
  }
};

}  // namespace

// Reads the metadata server on its own thread and keeps the last usable answer. Everything
// but the published answer and the stop flag (both under mu_) is the thread's own.
class MetadataPoller {
 public:
  MetadataPoller(const NoticeOptions& o, MetadataUrl url)
      : options_(o), url_(std::move(url)), gcp_(o.format == "gcp"), http_(url_.host, url_.port) {
    http_.set_connection_timeout(options_.http_timeout);
    http_.set_write_timeout(options_.http_timeout);
    const auto secs = std::chrono::ceil<std::chrono::seconds>(options_.poll_interval).count();
    wait_sec_ = std::max<long>(1, static_cast<long>(secs));
    thread_ = std::thread([this] { Run(); });
  }

  ~MetadataPoller() {
    std::unique_lock lock(mu_);
    stopping_ = true;
    cv_.notify_all();
    // stop() cuts off only a request already sent, and the thread may be about to send
    // one: repeat until it has seen stopping_.
    while (!finished_) {
      lock.unlock();
      http_.stop();
      lock.lock();
      cv_.wait_for(lock, Millis(10), [this] { return finished_; });
    }
    lock.unlock();
    thread_.join();
  }

  // The last usable answers: whether there is a notice, and the hint ("" none).
  std::pair<bool, std::string> Get() const {
    std::lock_guard lock(mu_);
    return {notice_, hint_};
  }

 private:
  void Run() {
    while (!Stopping()) {
      const SteadyTime started = std::chrono::steady_clock::now();
      problem_.clear();
      const bool at_once = gcp_ ? PollGcp() : PollAws();
      if (Stopping()) break;
      Report();
      std::unique_lock lock(mu_);
      if (!at_once) {
        cv_.wait_until(lock, started + options_.poll_interval, [this] { return stopping_; });
      }
    }
    std::lock_guard lock(mu_);
    finished_ = true;
    cv_.notify_all();
  }

  // True when the next read should start at once: a hanging read to follow new news.
  bool PollGcp() {
    std::string path = url_.path;
    Millis read_timeout = options_.http_timeout;
    if (!etag_.empty()) {
      path += path.find('?') == std::string::npos ? '?' : '&';
      path += "wait_for_change=true&last_etag=" + UrlEncode(etag_) +
              "&timeout_sec=" + std::to_string(wait_sec_);
      read_timeout += std::chrono::seconds(wait_sec_);
    }
    const auto a = Send(/*put=*/false, path, {{"Metadata-Flavor", "Google"}}, read_timeout);
    if (!a) return false;
    if (a->status != 200) return Problem("answered HTTP " + std::to_string(a->status));
    if (a->Header("Metadata-Flavor") != "Google") {
      return Problem("answer without Metadata-Flavor: Google (not the metadata server)");
    }
    const std::string value = Trim(a->body);
    if (value != "TRUE" && value != "FALSE") return Problem("answer is neither TRUE nor FALSE");
    Publish(&notice_, value == "TRUE");
    // A server without ETags is simply polled; one that ignores wait_for_change answers the
    // same ETag at once and is then polled too, never spun on.
    const std::string etag = a->Header("ETag");
    const bool news = !etag.empty() && etag != etag_;
    etag_ = etag;
    return news;
  }

  // Always false: AWS is polled once per interval.
  bool PollAws() {
    const auto a = AwsGet(url_.path);
    if (!a) return false;  // the rebalance read would only wait as long again
    const std::string action = a->status == 200 ? JsonString(a->body, "action") : "";
    if (a->status == 404) {
      Publish(&notice_, false);
    } else if (action == "terminate" || action == "stop" || action == "hibernate") {
      Publish(&notice_, true);
    } else {
      Problem("instance-action answered HTTP " + std::to_string(a->status) +
              (a->status == 200 ? " without a known action" : ""));
    }
    const auto r = AwsGet(kAwsRebalancePath);
    if (!r) return false;
    const std::string time = r->status == 200 ? JsonString(r->body, "noticeTime") : "";
    if (r->status == 404) {
      Publish(&hint_, std::string());
    } else if (!time.empty()) {
      Publish(&hint_, "rebalance recommendation, noticeTime " + time + " (" + url_.base +
                          kAwsRebalancePath + ")");
    } else {
      Problem("rebalance recommendation answered HTTP " + std::to_string(r->status));
    }
    return false;
  }

  // A GET with the IMDSv2 token. A 401 says the token expired (or that this instance
  // requires one after all): a new token and one retry.
  std::optional<Answer> AwsGet(const std::string& path) {
    for (int attempt = 0; attempt < 2 && !Stopping(); ++attempt) {
      if (token_.empty() && !imdsv1_ && !GetAwsToken()) return std::nullopt;
      httplib::Headers headers;
      if (!imdsv1_) headers.emplace(kAwsTokenHeader, token_);
      auto a = Send(/*put=*/false, path, headers, options_.http_timeout);
      if (!a || a->status != 401) return a;
      token_.clear();
      imdsv1_ = false;
    }
    Problem("answered 401 to a new IMDSv2 token");
    return std::nullopt;
  }

  bool GetAwsToken() {
    const httplib::Headers headers{
        {kAwsTokenTtlHeader, std::to_string(options_.aws_token_ttl.count())}};
    const auto a = Send(/*put=*/true, kAwsTokenPath, headers, options_.http_timeout);
    if (!a) return false;
    if (a->status == 200 && !Trim(a->body).empty()) {
      token_ = Trim(a->body);
      return true;
    }
    if (a->status == 403 || a->status == 404 || a->status == 405) {
      imdsv1_ = true;  // IMDSv2 refused here (see the header): read without a token
      return true;
    }
    return Problem("token request answered HTTP " + std::to_string(a->status));
  }

  std::optional<Answer> Send(bool put, const std::string& path, const httplib::Headers& headers,
                             Millis read_timeout) {
    if (Stopping()) return std::nullopt;
    http_.set_read_timeout(read_timeout);
    std::string body;
    const httplib::ContentReceiver receive = [&body](const char* data, size_t n) {
      body.append(data, n);
      return body.size() <= kMaxAnswer;
    };
    auto r = put ? http_.Put(path, headers, std::string(), std::string())
                 : http_.Get(path, headers, receive);
    if (!r) {
      Problem(body.size() > kMaxAnswer ? "answer over 64 KiB" : Describe(r.error()));
      return std::nullopt;
    }
    return Answer{r->status, put ? r->body : body, r->headers};
  }

  // Notes the round's first problem; false, for `return Problem(...)`.
  bool Problem(const std::string& what) {
    if (problem_.empty()) problem_ = what;
    return false;
  }

  // Logs a change between answering and not, not every failed read.
  void Report() {
    if (problem_.empty() == answering_) return;
    answering_ = problem_.empty();
    if (answering_) {
      spdlog::info(R"("event":"notice_metadata_answering","url":"{}")", JsonEscape(options_.url));
    } else {
      spdlog::warn(R"("event":"notice_metadata_unusable","url":"{}","error":"{}")",
                   JsonEscape(options_.url), JsonEscape(problem_));
    }
  }

  template <typename T>
  void Publish(T* field, T value) {
    std::lock_guard lock(mu_);
    *field = std::move(value);
  }

  bool Stopping() const {
    std::lock_guard lock(mu_);
    return stopping_;
  }

  const NoticeOptions options_;
  const MetadataUrl url_;
  const bool gcp_;
  long wait_sec_ = 1;  // GCP's timeout_sec

  // The thread's own.
  httplib::Client http_;  // stop() is the one call made from another thread
  std::string token_;     // IMDSv2 session token; empty: get one
  bool imdsv1_ = false;   // the token PUT was refused: read without one
  std::string etag_;      // GCP: the last answer's ETag
  std::string problem_;   // this round's first problem
  bool answering_ = true;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  bool finished_ = false;  // guarded by mu_
  bool notice_ = false;    // guarded by mu_
  std::string hint_;       // guarded by mu_
  std::thread thread_;     // started by the constructor once everything above exists
};

NoticeWatcher::NoticeWatcher(NoticeOptions options) : options_(std::move(options)) {
  if (options_.url.empty()) return;
  if (options_.format != "aws" && options_.format != "gcp") {
    url_status_ = InvalidArgument("notice format must be aws or gcp, got '" + options_.format + "'",
                                  "notice_format");
    return;
  }
  auto url = ParseMetadataUrl(options_.url);
  if (!url.ok()) {
    url_status_ = url.status();
    return;
  }
  poller_ = std::make_unique<MetadataPoller>(options_, std::move(*url));
}

NoticeWatcher::~NoticeWatcher() = default;

void NoticeWatcher::InstallSignalHandler() {
  struct sigaction sa {};
  sa.sa_handler = OnSigusr1;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
}

bool NoticeWatcher::Check() {
  std::error_code ec;
  const auto [url_notice, hint] = poller_ ? poller_->Get() : std::pair<bool, std::string>();
  hint_changed_ = hint != hint_source_;
  hint_source_ = hint;
  if (g_sigusr1 != 0) {
    source_ = "SIGUSR1";
  } else if (!options_.file.empty() && std::filesystem::exists(options_.file, ec)) {
    source_ = "file " + options_.file;
  } else if (url_notice) {
    source_ = "metadata " + options_.url;
  } else {
    source_.clear();
  }
  return !source_.empty();
}

}  // namespace frugal::worker
