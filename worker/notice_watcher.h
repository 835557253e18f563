// Spot interruption notices. A notice may come from any of three sources, all optional:
// a file that appears (tests, demos, a node's own shutdown hook), SIGUSR1 sent to the
// worker, or a cloud metadata URL polled every few seconds (AWS spot instance-action,
// GCP preempted). A file or metadata notice stands while its source says so: the file
// removed, or the metadata answering "no notice" again (AWS 404, GCP FALSE), withdraws it
// (decision 0021). SIGUSR1 cannot be taken back: it stands for the worker's life.
//
// Threading: Check() is called from the agent's single thread. The SIGUSR1 handler only
// sets a sig_atomic_t flag, which Check() reads.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace frugal::worker {

struct HttpRequest {
  std::string method = "GET";
  std::string url;  // http://host[:port]/path
  std::vector<std::pair<std::string, std::string>> headers;
};

struct HttpText {
  int status = 0;
  std::string body;
};

using HttpFetch = std::function<StatusOr<HttpText>(const HttpRequest&)>;

// A small blocking HTTP/1.0 request for metadata servers: plain http, no redirects, body
// capped at 64 KiB, the whole exchange bounded by `timeout`. (The API client speaks JSON
// only and sends no custom headers, and GCP's metadata server requires one.)
// InvalidArgument for a URL it cannot use; Unavailable when there is no usable answer.
StatusOr<HttpText> FetchPlainHttp(const HttpRequest& request, std::chrono::milliseconds timeout);

// Whether a metadata answer announces an interruption. "aws": HTTP 200 with a JSON object
// whose "action" is terminate, stop or hibernate (404 means none). "gcp": HTTP 200 with
// body TRUE.
bool IsNotice(const std::string& format, const HttpText& response);

struct NoticeOptions {
  std::string file;            // empty: not watched
  std::string url;             // empty: not polled
  std::string format = "aws";  // aws | gcp
  std::chrono::milliseconds poll_interval{5000};
  std::chrono::milliseconds http_timeout{1000};
};

class NoticeWatcher {
 public:
  // `fetch` defaults to FetchPlainHttp with options.http_timeout.
  NoticeWatcher(NoticeOptions options, const Clock& clock, HttpFetch fetch = nullptr);

  // Makes SIGUSR1 a notice. Call once, before the agent runs.
  static void InstallSignalHandler();

  // Looks at every source (the URL at most once per poll interval; a slow metadata server
  // costs the caller up to http_timeout). True while any source gives notice. Between
  // polls, and when the metadata server cannot be reached, the URL's last answer stands.
  bool Check();

  // Which source gives notice ("file /path", "SIGUSR1", "metadata http://..."), or "".
  const std::string& source() const { return source_; }

 private:
  bool CheckUrl();
  HttpRequest MetadataRequest();

  const NoticeOptions options_;
  const Clock& clock_;
  HttpFetch fetch_;
  Timestamp next_poll_{};
  std::string aws_token_;  // IMDSv2 session token; empty: get one (or fall back to IMDSv1)
  bool url_notice_ = false;  // the metadata URL's last usable answer
  std::string source_;
};

}  // namespace frugal::worker
