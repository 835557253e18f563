// The notice watcher's sources, with the metadata servers played by a real local HTTP server
// that speaks AWS IMDSv2 and GCP's metadata protocol: a notice stands while its source says
// so and is withdrawn when it stops (decision 0021); a slow or absent server never blocks
// Check(). Timing waits poll with a deadline; the watcher polls every 50 ms here.
#include "worker/notice_watcher.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

#include "tests/testing/temp_dir.h"

namespace frugal::worker {
namespace {

using Millis = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

constexpr const char* kTerminate = R"({"action":"terminate","time":"2026-11-26T01:00:00Z"})";
constexpr const char* kRebalance = R"({"noticeTime":"2026-11-26T00:58:00Z"})";

// What the fake metadata server answers, and what it saw. The test changes it with Set().
struct Script {
  std::string action;       // AWS instance-action body; empty: 404
  std::string rebalance;    // AWS rebalance recommendation body; empty: 404
  bool imdsv2 = true;       // false: the token PUT answers 405 and reads need no token
  std::string valid_token;  // reads with another token (or none) get 401
  int tokens_issued = 0;
  int tokens_to_expire = 0;      // this many next tokens are issued expired
  bool preempted = false;        // GCP; a change makes a new ETag and ends held reads
  int version = 1;               // GCP ETag "etag-<version>"
  bool flavor = true;            // GCP: answer with Metadata-Flavor: Google
  Millis delay{0};               // every answer waits this long first
  int delayed = 0;               // requests that arrived while delay > 0
  int held = 0;                  // GCP wait_for_change reads held now
  std::vector<std::string> log;  // one "METHOD name status" per answer, in order

  int Count(const std::string& entry) const {
    return static_cast<int>(std::count(log.begin(), log.end(), entry));
  }
};

// AWS's and GCP's metadata paths on 127.0.0.1, a free port, in this process.
class FakeMetadata {
 public:
  FakeMetadata() {
    server_.Put("/latest/api/token", [this](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock lock(mu_);
      Delay(lock);
      if (!s_.imdsv2) {
        res.status = 405;
      } else if (req.get_header_value("X-aws-ec2-metadata-token-ttl-seconds").empty()) {
        res.status = 400;  // as IMDS does
      } else {
        const std::string token = "token-" + std::to_string(++s_.tokens_issued);
        s_.valid_token = s_.tokens_to_expire > 0 ? "" : token;
        s_.tokens_to_expire = std::max(0, s_.tokens_to_expire - 1);
        res.status = 200;
        res.set_content(token, "text/plain");
      }
      s_.log.push_back("PUT token " + std::to_string(res.status));
    });
    AwsRead("/latest/meta-data/spot/instance-action", "instance-action", &Script::action);
    AwsRead("/latest/meta-data/events/recommendations/rebalance", "rebalance", &Script::rebalance);
    server_.Get("/computeMetadata/v1/instance/preempted",
                [this](const httplib::Request& req, httplib::Response& res) { Gcp(req, res); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(Millis(5));
  }

  ~FakeMetadata() {
    {
      std::lock_guard lock(mu_);
      closing_ = true;  // ends held and delayed answers, so that stop() need not wait
    }
    cv_.notify_all();
    server_.stop();
    thread_.join();
  }

  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

  void Set(const std::function<void(Script&)>& change) {
    std::lock_guard lock(mu_);
    const bool was = s_.preempted;
    change(s_);
    if (s_.preempted != was) ++s_.version;
    cv_.notify_all();
  }

  Script Get() const {
    std::lock_guard lock(mu_);
    return s_;
  }

 private:
  void AwsRead(const std::string& path, const std::string& name, std::string Script::*body) {
    server_.Get(path, [this, name, body](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock lock(mu_);
      Delay(lock);
      const std::string token = req.get_header_value("X-aws-ec2-metadata-token");
      if (s_.imdsv2 && token != s_.valid_token) {
        res.status = 401;
      } else if ((s_.*body).empty()) {
        res.status = 404;
      } else {
        res.status = 200;
        res.set_content(s_.*body, "text/plain");
      }
      s_.log.push_back("GET " + name + " " + std::to_string(res.status));
    });
  }

  void Gcp(const httplib::Request& req, httplib::Response& res) {
    std::unique_lock lock(mu_);
    Delay(lock);
    if (req.get_header_value("Metadata-Flavor") != "Google") {
      res.status = 403;  // as GCP does: the header proves a deliberate request
    } else {
      if (req.get_param_value("wait_for_change") == "true") {
        // Held until the ETag differs from last_etag (or, without one, the value changes).
        const std::string last = req.get_param_value("last_etag");
        const int version = s_.version;
        const std::string timeout = req.get_param_value("timeout_sec");
        ++s_.held;
        cv_.wait_for(lock, std::chrono::seconds(timeout.empty() ? 60 : std::stoi(timeout)), [&] {
          return closing_ || (last.empty() ? s_.version != version : Etag() != last);
        });
        --s_.held;
      }
      res.status = 200;
      res.set_header("ETag", Etag());
      if (s_.flavor) res.set_header("Metadata-Flavor", "Google");
      res.set_content(s_.preempted ? "TRUE" : "FALSE", "application/text");
    }
    s_.log.push_back("GET preempted " + std::to_string(res.status));
  }

  std::string Etag() const { return "etag-" + std::to_string(s_.version); }

  void Delay(std::unique_lock<std::mutex>& lock) {
    if (s_.delay.count() == 0) return;
    ++s_.delayed;
    cv_.wait_for(lock, s_.delay, [this] { return closing_; });
  }

  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Script s_;              // guarded by mu_
  bool closing_ = false;  // guarded by mu_
};

// A port on 127.0.0.1 where nothing listens: connecting is refused.
int DeadPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

// Polls `done` until it holds or `limit` passes; says whether it held.
bool Eventually(const std::function<bool()>& done, Millis limit = Millis(3000)) {
  const auto deadline = SteadyClock::now() + limit;
  while (SteadyClock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(Millis(5));
  }
  return done();
}

NoticeOptions Options(const std::string& url, const std::string& format) {
  NoticeOptions o;
  o.url = url;
  o.format = format;
  o.poll_interval = Millis(50);
  o.http_timeout = Millis(300);
  return o;
}

constexpr const char* kAwsPath = "/latest/meta-data/spot/instance-action";
constexpr const char* kGcpPath = "/computeMetadata/v1/instance/preempted";

TEST(NoticeWatcherTest, FileNoticeStandsWhileTheFileExists) {
  testing::TempDir dir("frugal-notice");
  const std::string file = dir.path() + "/notice";
  NoticeWatcher w(NoticeOptions{file, "", "aws"});
  EXPECT_FALSE(w.Check());
  std::ofstream(file) << "terminate\n";
  EXPECT_TRUE(w.Check());
  EXPECT_EQ(w.source(), "file " + file);
  std::filesystem::remove(file);
  EXPECT_FALSE(w.Check());
  EXPECT_EQ(w.source(), "");
}

TEST(NoticeWatcherTest, UnusableUrlOrFormatIsRefused) {
  for (const std::string url : {"https://169.254.169.254/x", "http:///x", "http://:80/x",
                                "http://h:99999/x", "http://h:/x", "http://[::1/x"}) {
    NoticeWatcher w(Options(url, "aws"));
    EXPECT_EQ(w.url_status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_FALSE(w.Check());
  }
  EXPECT_EQ(NoticeWatcher(Options("http://h/x", "azure")).url_status().field(), "notice_format");
  EXPECT_TRUE(NoticeWatcher(Options("http://[::1]:1/x", "gcp")).url_status().ok());
}

TEST(NoticeWatcherTest, Aws404IsNoNoticeAndEveryReadCarriesAToken) {
  FakeMetadata fake;
  NoticeWatcher w(Options(fake.url(kAwsPath), "aws"));
  ASSERT_TRUE(w.url_status().ok()) << w.url_status().ToString();
  // The token comes from the URL's host and port; both paths are read each poll.
  ASSERT_TRUE(Eventually([&] { return fake.Get().Count("GET rebalance 404") >= 2; }));
  EXPECT_FALSE(w.Check());
  EXPECT_EQ(w.source(), "");
  EXPECT_FALSE(w.hint());
  const Script s = fake.Get();
  EXPECT_EQ(s.tokens_issued, 1);  // kept across polls
  EXPECT_EQ(s.Count("GET instance-action 401"), 0);
}

TEST(NoticeWatcherTest, AwsNoticeIsSeenAndWithdrawnBy404Again) {
  FakeMetadata fake;
  NoticeWatcher w(Options(fake.url(kAwsPath), "aws"));
  // a. 200 with an action: a notice.
  fake.Set([](Script& s) { s.action = kTerminate; });
  ASSERT_TRUE(Eventually([&] { return w.Check(); }));
  EXPECT_EQ(w.source(), "metadata " + fake.url(kAwsPath));
  // b. 404 again: withdrawn.
  fake.Set([](Script& s) { s.action.clear(); });
  ASSERT_TRUE(Eventually([&] { return !w.Check(); }));
  EXPECT_EQ(w.source(), "");
}

TEST(NoticeWatcherTest, AwsReadAnswered401IsRetriedAtOnceWithANewToken) {
  FakeMetadata fake;
  fake.Set([](Script& s) {
    s.action = kTerminate;
    s.tokens_to_expire = 1;  // the first token has expired by the time it is used
  });
  NoticeOptions o = Options(fake.url(kAwsPath), "aws");
  o.poll_interval = Millis(5000);  // the next poll is too late: only the retry sees it in time
  NoticeWatcher w(o);
  ASSERT_TRUE(Eventually([&] { return w.Check(); }, Millis(2000)));
  const Script s = fake.Get();
  ASSERT_GE(s.log.size(), 4u);
  EXPECT_EQ(std::vector<std::string>(s.log.begin(), s.log.begin() + 4),
            (std::vector<std::string>{"PUT token 200", "GET instance-action 401", "PUT token 200",
                                      "GET instance-action 200"}));
}

TEST(NoticeWatcherTest, AwsTokenThatExpiresLaterIsReplaced) {
  FakeMetadata fake;
  NoticeWatcher w(Options(fake.url(kAwsPath), "aws"));
  ASSERT_TRUE(Eventually([&] { return fake.Get().Count("GET instance-action 404") >= 1; }));
  // The token expires as the notice appears: the old token gets 401, a new one the notice.
  fake.Set([](Script& s) {
    s.valid_token.clear();
    s.action = kTerminate;
  });
  ASSERT_TRUE(Eventually([&] { return w.Check(); }));
  const Script s = fake.Get();
  EXPECT_EQ(s.tokens_issued, 2);
  // Refused once, on whichever read came first: the rebalance read may have.
  EXPECT_EQ(s.Count("GET instance-action 401") + s.Count("GET rebalance 401"), 1);
}

TEST(NoticeWatcherTest, AwsFallsBackToImdsV1WhenTheTokenRequestIsRefused) {
  FakeMetadata fake;
  fake.Set([](Script& s) {
    s.imdsv2 = false;  // PUT answers 405
    s.action = kTerminate;
  });
  NoticeWatcher w(Options(fake.url(kAwsPath), "aws"));
  ASSERT_TRUE(Eventually([&] { return w.Check(); }));
  EXPECT_EQ(fake.Get().tokens_issued, 0);
}

TEST(NoticeWatcherTest, AwsRebalanceRecommendationIsAHintNotANotice) {
  FakeMetadata fake;
  NoticeWatcher w(Options(fake.url(kAwsPath), "aws"));
  fake.Set([](Script& s) { s.rebalance = kRebalance; });
  // a. The hint appears: changed on that Check() only; no notice.
  ASSERT_TRUE(Eventually([&] { return !w.Check() && w.hint(); }));
  EXPECT_TRUE(w.hint_changed());
  EXPECT_NE(w.hint_source().find("2026-11-26T00:58:00Z"), std::string::npos) << w.hint_source();
  EXPECT_FALSE(w.Check());
  EXPECT_TRUE(w.hint());
  EXPECT_FALSE(w.hint_changed());
  // b. 404 again: gone, and that is a change too.
  fake.Set([](Script& s) { s.rebalance.clear(); });
  ASSERT_TRUE(Eventually([&] { return !w.Check() && !w.hint(); }));
  EXPECT_TRUE(w.hint_changed());
  EXPECT_EQ(w.hint_source(), "");
}

TEST(NoticeWatcherTest, GcpFalseIsNoNoticeAndReadsWaitForChange) {
  FakeMetadata fake;
  NoticeWatcher w(Options(fake.url(kGcpPath), "gcp"));
  // After the first plain read, the watcher's read hangs on the server.
  ASSERT_TRUE(Eventually([&] { return fake.Get().held == 1; }));
  EXPECT_FALSE(w.Check());
  // Every read said Metadata-Flavor: Google (the fake answers 403 otherwise).
  EXPECT_EQ(fake.Get().Count("GET preempted 403"), 0);
}

TEST(NoticeWatcherTest, GcpNoticeArrivesThroughTheHangingReadAndIsWithdrawn) {
  FakeMetadata fake;
  NoticeOptions o = Options(fake.url(kGcpPath), "gcp");
  o.poll_interval = Millis(5000);  // timeout_sec=5: only the held read can answer sooner
  auto w = std::make_unique<NoticeWatcher>(o);
  ASSERT_TRUE(Eventually([&] { return fake.Get().held == 1; }));
  // a. TRUE: the held read answers at once; a notice.
  fake.Set([](Script& s) { s.preempted = true; });
  ASSERT_TRUE(Eventually([&] { return w->Check(); }, Millis(2000)));
  EXPECT_EQ(w->source(), "metadata " + fake.url(kGcpPath));
  // b. FALSE again: withdrawn, through the next held read.
  ASSERT_TRUE(Eventually([&] { return fake.Get().held == 1; }));
  fake.Set([](Script& s) { s.preempted = false; });
  ASSERT_TRUE(Eventually([&] { return !w->Check(); }, Millis(2000)));
  EXPECT_EQ(fake.Get().Count("GET preempted 403"), 0);
  // c. Shutdown cuts off the held read instead of waiting out its 5 s.
  ASSERT_TRUE(Eventually([&] { return fake.Get().held == 1; }));
  const auto stopping = SteadyClock::now();
  w.reset();
  EXPECT_LT(SteadyClock::now() - stopping, Millis(2000));
}

TEST(NoticeWatcherTest, GcpAnswerWithoutMetadataFlavorIsIgnored) {
  FakeMetadata fake;
  fake.Set([](Script& s) {
    s.preempted = true;
    s.flavor = false;  // not the metadata server: a proxy's page, say
  });
  NoticeWatcher w(Options(fake.url(kGcpPath), "gcp"));
  ASSERT_TRUE(Eventually([&] { return fake.Get().Count("GET preempted 200") >= 3; }));
  EXPECT_FALSE(w.Check());
}

TEST(NoticeWatcherTest, SlowEndpointNeverBlocksCheckAndTheLastAnswerStands) {
  FakeMetadata fake;
  NoticeWatcher w(Options(fake.url(kAwsPath), "aws"));
  fake.Set([](Script& s) { s.action = kTerminate; });
  ASSERT_TRUE(Eventually([&] { return w.Check(); }));
  // a. Answers take 1 s, the watcher waits 300 ms: two polls go unanswered. Check() does not
  //    wait for them (one that did would take 300 ms or more) and the notice stands.
  fake.Set([](Script& s) { s.delay = Millis(1000); });
  SteadyClock::duration slowest{};
  bool always = true;
  ASSERT_TRUE(Eventually([&] {
    const auto before = SteadyClock::now();
    always = w.Check() && always;
    slowest = std::max(slowest, SteadyClock::now() - before);
    return fake.Get().delayed >= 2;
  }));
  EXPECT_TRUE(always);
  EXPECT_LT(slowest, Millis(300));
  // b. Answering again, 404: withdrawn.
  fake.Set([](Script& s) {
    s.delay = Millis(0);
    s.action.clear();
  });
  ASSERT_TRUE(Eventually([&] { return !w.Check(); }));
}

TEST(NoticeWatcherTest, AbsentEndpointIsNoNoticeAndOtherSourcesStillWork) {
  testing::TempDir dir("frugal-notice");
  const std::string file = dir.path() + "/notice";
  const std::string url = "http://127.0.0.1:" + std::to_string(DeadPort()) + kAwsPath;
  for (const std::string format : {"aws", "gcp"}) {
    NoticeOptions o = Options(url, format);
    o.file = file;
    NoticeWatcher w(o);
    ASSERT_TRUE(w.url_status().ok());
    std::this_thread::sleep_for(Millis(200));  // a few refused polls
    EXPECT_FALSE(w.Check()) << format;
    std::ofstream(file) << "terminate\n";
    EXPECT_TRUE(w.Check()) << format;
    EXPECT_EQ(w.source(), "file " + file);
    std::filesystem::remove(file);
  }
}

}  // namespace
}  // namespace frugal::worker
