#include "worker/notice_watcher.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace frugal::worker {

namespace {

using SteadyTime = std::chrono::steady_clock::time_point;

volatile std::sig_atomic_t g_sigusr1 = 0;

void OnSigusr1(int) { g_sigusr1 = 1; }

constexpr size_t kMaxAnswer = 64 * 1024;
// AWS IMDSv2: a session token from PUT /latest/api/token, then sent with every read.
constexpr const char* kAwsTokenPath = "/latest/api/token";
constexpr const char* kAwsTokenTtlHeader = "X-aws-ec2-metadata-token-ttl-seconds";
constexpr const char* kAwsTokenHeader = "X-aws-ec2-metadata-token";

struct UrlParts {
  std::string host, port = "80", path = "/";
};

StatusOr<UrlParts> SplitUrl(const std::string& url) {
  const std::string scheme = "http://";
  if (url.compare(0, scheme.size(), scheme) != 0) {
    return InvalidArgument("metadata URL must start with http://: " + url, "notice_url");
  }
  const std::string rest = url.substr(scheme.size());
  const auto slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  UrlParts parts;
  if (slash != std::string::npos) parts.path = rest.substr(slash);
  const auto colon = authority.rfind(':');
  parts.host = authority.substr(0, colon);
  if (colon != std::string::npos) parts.port = authority.substr(colon + 1);
  if (parts.host.empty() || parts.port.empty()) {
    return InvalidArgument("bad metadata URL: " + url, "notice_url");
  }
  return parts;
}

int RemainingMs(SteadyTime deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return left.count() > 0 ? static_cast<int>(left.count()) : 0;
}

bool WaitFor(int fd, short events, SteadyTime deadline) {
  pollfd p{fd, events, 0};
  int r;
  do {
    r = poll(&p, 1, RemainingMs(deadline));
  } while (r < 0 && errno == EINTR);
  return r > 0;
}

// A non-blocking connect bounded by `deadline`; the first address that answers wins.
StatusOr<int> Connect(const UrlParts& u, SteadyTime deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(u.host.c_str(), u.port.c_str(), &hints, &found) != 0 || found == nullptr) {
    return Unavailable("cannot resolve " + u.host);
  }
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int err = connect(fd, a->ai_addr, a->ai_addrlen) == 0 ? 0 : errno;
    if (err == EINPROGRESS && WaitFor(fd, POLLOUT, deadline)) {
      socklen_t len = sizeof err;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    }
    if (err != 0) {
      close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  if (fd < 0) return Unavailable("cannot connect to " + u.host + ":" + u.port);
  return fd;
}

Status SendAll(int fd, const std::string& data, SteadyTime deadline) {
  size_t sent = 0;
  while (sent < data.size()) {
    if (!WaitFor(fd, POLLOUT, deadline)) return Unavailable("timed out sending");
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return Unavailable(std::string("send: ") + strerror(errno));
    sent += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// HTTP/1.0 with Connection: close: the answer ends when the server closes.
StatusOr<std::string> ReceiveAll(int fd, SteadyTime deadline) {
  std::string answer;
  char buf[4096];
  while (answer.size() < kMaxAnswer) {
    if (!WaitFor(fd, POLLIN, deadline)) return Unavailable("timed out waiting for the answer");
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) return Unavailable(std::string("recv: ") + strerror(errno));
    if (n == 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  return answer;
}

StatusOr<HttpText> ParseAnswer(const std::string& answer) {
  // "HTTP/1.1 200 OK\r\n..." : the status is the second word of the first line.
  const auto space = answer.find(' ');
  const auto head_end = answer.find("\r\n\r\n");
  if (answer.compare(0, 5, "HTTP/") != 0 || space == std::string::npos ||
      head_end == std::string::npos || answer.size() < space + 4) {
    return Unavailable("not an HTTP answer");
  }
  HttpText out;
  try {
    out.status = std::stoi(answer.substr(space + 1, 3));
  } catch (...) {
    return Unavailable("not an HTTP answer");
  }
  out.body = answer.substr(head_end + 4);
  return out;
}

std::string Trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r\n");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r\n") - begin + 1);
}

}  // namespace

StatusOr<HttpText> FetchPlainHttp(const HttpRequest& request, std::chrono::milliseconds timeout) {
  ASSIGN_OR_RETURN(UrlParts u, SplitUrl(request.url));
  const SteadyTime deadline = std::chrono::steady_clock::now() + timeout;
  ASSIGN_OR_RETURN(int fd, Connect(u, deadline));
  const std::string host = u.port == "80" ? u.host : u.host + ":" + u.port;
  std::string text =
      request.method + " " + u.path + " HTTP/1.0\r\nHost: " + host + "\r\nConnection: close\r\n";
  for (const auto& [name, value] : request.headers) text += name + ": " + value + "\r\n";
  if (request.method != "GET") text += "Content-Length: 0\r\n";
  text += "\r\n";
  Status sent = SendAll(fd, text, deadline);
  StatusOr<std::string> answer = sent.ok() ? ReceiveAll(fd, deadline) : StatusOr<std::string>(sent);
  close(fd);
  if (!answer.ok()) return Unavailable(request.url + ": " + answer.status().message());
  return ParseAnswer(*answer);
}

bool IsNotice(const std::string& format, const HttpText& response) {
  if (response.status != 200) return false;
  if (format == "gcp") return Trim(response.body) == "TRUE";
  const auto j = nlohmann::json::parse(response.body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("action") || !j["action"].is_string()) return false;
  const std::string action = j["action"].get<std::string>();
  return action == "terminate" || action == "stop" || action == "hibernate";
}

NoticeWatcher::NoticeWatcher(NoticeOptions options, const Clock& clock, HttpFetch fetch)
    : options_(std::move(options)), clock_(clock), fetch_(std::move(fetch)) {
  if (!fetch_) {
    const auto timeout = options_.http_timeout;
    fetch_ = [timeout](const HttpRequest& r) { return FetchPlainHttp(r, timeout); };
  }
}

void NoticeWatcher::InstallSignalHandler() {
  struct sigaction sa {};
  sa.sa_handler = OnSigusr1;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
}

bool NoticeWatcher::Check() {
  std::error_code ec;
  // The URL is polled even while another source gives notice, so its answer is current
  // when that source withdraws.
  const bool url = !options_.url.empty() && CheckUrl();
  if (g_sigusr1 != 0) {
    source_ = "SIGUSR1";
  } else if (!options_.file.empty() && std::filesystem::exists(options_.file, ec)) {
    source_ = "file " + options_.file;
  } else if (url) {
    source_ = "metadata " + options_.url;
  } else {
    source_.clear();
  }
  return !source_.empty();
}

bool NoticeWatcher::CheckUrl() {
  const Timestamp now = clock_.Now();
  if (now < next_poll_) return url_notice_;
  next_poll_ = now + options_.poll_interval;
  auto answer = fetch_(MetadataRequest());
  // No answer is neither a notice nor its withdrawal: the last answer stands.
  if (!answer.ok()) return url_notice_;
  if (options_.format == "aws" && answer->status == 401) {
    aws_token_.clear();  // expired: an answer about the token, not about the notice
    return url_notice_;
  }
  url_notice_ = IsNotice(options_.format, *answer);
  return url_notice_;
}

HttpRequest NoticeWatcher::MetadataRequest() {
  HttpRequest get{"GET", options_.url, {}};
  if (options_.format == "gcp") {
    get.headers.emplace_back("Metadata-Flavor", "Google");
    return get;
  }
  if (aws_token_.empty()) {
    // Same host as the notice URL. A server without IMDSv2 fails this; we then read
    // without a token (IMDSv1).
    const std::string base = options_.url.substr(0, options_.url.find('/', 7));
    auto token = fetch_({"PUT", base + kAwsTokenPath, {{kAwsTokenTtlHeader, "21600"}}});
    if (token.ok() && token->status == 200) aws_token_ = Trim(token->body);
  }
  if (!aws_token_.empty()) get.headers.emplace_back(kAwsTokenHeader, aws_token_);
  return get;
}

}  // namespace frugal::worker
