// The HTTP edge under hostile clients (issue 15): slow and half-sent connections must not
// stop /healthz or the worker protocol, and a second scheduler on a busy port must refuse
// to start. Real scheduler processes over real sockets.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/test_postgres.h"

namespace frugal::testing {
namespace {

using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

int PortOf(const std::string& url) { return std::stoi(url.substr(url.rfind(':') + 1)); }

// A raw TCP connection to 127.0.0.1:port; -1 when it cannot connect.
int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool Send(int fd, const std::string& text) {
  return send(fd, text.data(), text.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(text.size());
}

// True when the server has closed (or reset) the connection: a read returns 0 or fails.
// The attackers never get a full request in, so any byte read is a 4xx before closing.
bool ClosedByServer(int fd) {
  char buf[512];
  ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
  if (n == 0) return true;
  if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  return true;
}

// What the server sends within 5 s, up to the first 4 KiB (or its close).
std::string ReadSome(int fd) {
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char buf[4096];
  const ssize_t n = recv(fd, buf, sizeof buf, 0);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

enum class Kind { kSlowHeader, kIdle, kPartialBody };

struct Attacker {
  Kind kind;
  int fd = -1;
  bool cut = false;  // the server closed it
};

TEST(SlowClientE2eTest, SlowAndHalfSentConnectionsDoNotStopHealthOrHeartbeats) {
  SchedulerProcess sched;
  const int port = PortOf(sched.url());
  const std::string join = sched.NewToken("infra", "node-s", "worker");
  ASSERT_TRUE(CreatePool(sched, PoolBody("slow-pool", "on_demand", "1.00", 1)));
  auto r = sched.Call("POST", "/v1/workers/register", join,
                      R"({"node":"node-s","pool":"slow-pool","gpus":1,"gpu_type":"a100","gpu_mem_gb":80})");
  ASSERT_EQ(r.status, 200) << r.raw;
  const std::string worker = r.body["node_credential"].get<std::string>();  // the node's own
  const std::string heartbeat =
      json{{"node", "node-s"}, {"lease_epoch", r.body["lease_epoch"]}, {"running", json::array()}}
          .dump();

  // (a) 64 attackers, a third of each kind, all connected before the probes start.
  std::vector<Attacker> attackers;
  for (int i = 0; i < 64; ++i) {
    Attacker a{static_cast<Kind>(i % 3)};
    a.fd = Connect(port);
    ASSERT_GE(a.fd, 0) << "attacker " << i << " could not connect";
    if (a.kind == Kind::kSlowHeader) Send(a.fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ");
    if (a.kind == Kind::kPartialBody) {
      Send(a.fd, "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 "Content-Length: 1000\r\n\r\n{\"name\":");
    }
    attackers.push_back(a);
  }

  // (b) For 15 s the slow-header attackers trickle one byte every 2 s while two probe
  // threads call /healthz and heartbeat back to back. Each probe allows 10 s.
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::atomic<long> max_health_ms{0}, max_heartbeat_ms{0};
  std::atomic<int> health_calls{0}, heartbeat_calls{0};
  auto probe = [&](const std::string& method, const std::string& path, const std::string& token,
                   const std::string& body, std::atomic<long>& max_ms, std::atomic<int>& calls) {
    while (!stop) {
      const auto start = SteadyClock::now();
      auto res = sched.Call(method, path, token, body);
      const long ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                          SteadyClock::now() - start).count();
      if (res.status != 200) {
        ++failures;
        std::fprintf(stderr, "%s answered %d after %ld ms: %s\n", path.c_str(), res.status, ms,
                     res.raw.c_str());
      }
      long seen = max_ms;
      while (ms > seen && !max_ms.compare_exchange_weak(seen, ms)) {}
      ++calls;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  };
  std::thread health(probe, "GET", "/healthz", "", "", std::ref(max_health_ms),
                     std::ref(health_calls));
  std::thread beat(probe, "POST", "/v1/workers/heartbeat", worker, heartbeat,
                   std::ref(max_heartbeat_ms), std::ref(heartbeat_calls));

  // Open attackers by kind ({slow header, idle, partial body}) at 3 s and at 8 s: all
  // before the 5 s header deadline, only the partial bodies between it and the 10 s body one.
  auto held = [&] {
    std::array<int, 3> n{};
    for (const auto& a : attackers) n[static_cast<int>(a.kind)] += a.cut ? 0 : 1;
    return n;
  };
  std::array<int, 3> held_3s{}, held_8s{};
  const auto attack_start = SteadyClock::now();
  for (int tick = 0; tick < 15; ++tick) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    for (auto& a : attackers) {
      if (a.cut) continue;
      if (a.kind == Kind::kSlowHeader && tick % 2 == 0 && !Send(a.fd, "a")) a.cut = true;
      if (!a.cut && ClosedByServer(a.fd)) a.cut = true;
    }
    if (tick == 2) held_3s = held();
    if (tick == 7) held_8s = held();
  }
  stop = true;
  health.join();
  beat.join();
  const double attack_s =
      std::chrono::duration<double>(SteadyClock::now() - attack_start).count();

  int cut_slow = 0, slow = 0;
  for (auto& a : attackers) {
    if (a.kind == Kind::kSlowHeader) {
      ++slow;
      cut_slow += a.cut ? 1 : 0;
    }
    close(a.fd);
  }
  std::printf("slow-client attack: %zu connections opened; held open at 3 s: %d slow-header, "
              "%d idle, %d partial-body; at 8 s: %d, %d, %d; %d of %d header tricklers cut off "
              "by %.1f s; /healthz %d calls max %ld ms, heartbeat %d calls max %ld ms\n",
              attackers.size(), held_3s[0], held_3s[1], held_3s[2], held_8s[0], held_8s[1],
              held_8s[2], cut_slow, slow, attack_s, health_calls.load(), max_health_ms.load(),
              heartbeat_calls.load(), max_heartbeat_ms.load());

  // (c) Every probe answered 200 within its 10 s, at least a few times each; and the header
  // deadline (a total, not per read) cut off every client trickling a byte every 2 s.
  EXPECT_EQ(failures, 0);
  EXPECT_GE(health_calls, 5);
  EXPECT_GE(heartbeat_calls, 5);
  EXPECT_LT(max_health_ms, 5000);
  EXPECT_LT(max_heartbeat_ms, 5000);
  EXPECT_EQ(cut_slow, slow) << "a client trickling its header must be cut off";
}

// max_connections (decision 0055): that many connections are served, the next is answered
// 503 at once, and a connection freed makes room again.
TEST(SlowClientE2eTest, TheConnectionCapIsTheConfiguredOne) {
  SchedulerProcess::Options o;
  o.env = {{"FRUGAL_MAX_CONNECTIONS", "8"}};
  SchedulerProcess sched(o);
  const int port = PortOf(sched.url());
  std::vector<int> held;
  for (int i = 0; i < 8; ++i) {
    held.push_back(Connect(port));
    ASSERT_GE(held.back(), 0);
  }
  // Each is served: a request on the last one is answered.
  ASSERT_TRUE(Send(held.back(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string answer = ReadSome(held.back());
  EXPECT_NE(answer.find("HTTP/1.1 200"), std::string::npos) << answer;
  // The ninth is refused without a thread: a 503 and the close.
  const int ninth = Connect(port);
  ASSERT_GE(ninth, 0);
  answer = ReadSome(ninth);
  EXPECT_NE(answer.find("HTTP/1.1 503"), std::string::npos) << answer;
  close(ninth);
  for (int fd : held) close(fd);
  // Freed: a new client is served again (the server notices the closes within a poll).
  bool served = false;
  for (int i = 0; i < 50 && !served; ++i) {
    served = sched.Call("GET", "/healthz", "", "").status == 200;
    if (!served) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(served);
}

// The open-file limit must hold max_connections: under a hard limit too low the scheduler
// refuses to start and says what to change, before it opens anything.
TEST(SlowClientE2eTest, AConnectionCapBeyondTheOpenFileLimitIsRefusedAtStart) {
  TempDir dir("frugal-nofile");
  ChildProcess low({"/bin/sh", "-c",
                    "ulimit -n 600 && exec \"$0\" --listen 127.0.0.1:0"
                    " --state-dir \"$1\" --database-url \"$2\"",
                    FRUGAL_SCHEDULER_BIN, dir.path() + "/state", TestPostgres::Get().NewDatabase()},
                   {{"FRUGAL_HOME", ""}, {"FRUGAL_MAX_CONNECTIONS", "1024"}}, dir.path() + "/low");
  auto code = low.Wait(std::chrono::seconds(60));
  ASSERT_TRUE(code.has_value()) << low.Stdout() << low.Stderr();
  EXPECT_NE(*code, 0);
  const std::string out = low.Stdout() + low.Stderr();
  EXPECT_NE(out.find("max_connections 1024 needs 1288 open files"), std::string::npos) << out;
  EXPECT_NE(out.find("hard limit is 600"), std::string::npos) << out;
}

TEST(SlowClientE2eTest, SecondSchedulerOnABusyPortExitsWithAClearError) {
  // Both on one database, so the second reaches its bind within seconds (no initdb).
  SchedulerProcess::Options options;
  options.database_url = TestPostgres::Get().NewDatabase();
  SchedulerProcess first(options);
  const std::string address = "127.0.0.1:" + std::to_string(PortOf(first.url()));
  TempDir dir("frugal-busy-port");
  ChildProcess second({FRUGAL_SCHEDULER_BIN, "--listen", address, "--state-dir",
                       dir.path() + "/state", "--database-url", options.database_url},
                      {{"FRUGAL_HOME", ""}, {"FRUGAL_DATABASE_URL", ""}}, dir.path() + "/second");
  auto code = second.Wait(std::chrono::seconds(60));
  ASSERT_TRUE(code.has_value()) << "the second scheduler kept running on a busy port:\n"
                                << second.Stdout() << second.Stderr();
  EXPECT_NE(*code, 0);
  const std::string out = second.Stdout() + second.Stderr();
  EXPECT_NE(out.find(address), std::string::npos) << out;
  EXPECT_NE(out.find("in use"), std::string::npos) << out;
  // The first still answers.
  EXPECT_EQ(first.Call("GET", "/healthz", "").status, 200);
}

// Everything that arrives on `fd` within `wait` (SO_RCVTIMEO), until `enough` is in it.
std::string ReadUntil(int fd, const std::string& enough, std::chrono::seconds wait) {
  timeval tv{static_cast<time_t>(wait.count()), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string got;
  char buf[4096];
  while (got.find(enough) == std::string::npos) {
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return got;
}

// A POST with neither Content-Length nor Transfer-Encoding has no body (RFC 9112 6.3), as
// `curl -X POST` sends it (issue 17). The edge used to wait for a body until its 10 s
// deadline and then answer 400; now it is answered at once, and the kept-alive connection
// serves the next request.
TEST(SlowClientE2eTest, APostWithNoBodyAndNoContentLengthIsAnsweredAtOnce) {
  SchedulerProcess sched;
  const std::string token = sched.NewToken("vision", "alice");
  auto job = sched.Call("POST", "/v1/jobs", token, R"({"command":["sleep","1"]})");
  ASSERT_EQ(job.status, 201) << job.raw;
  const std::string id = std::to_string(job.body["id"].get<std::int64_t>());
  const int fd = Connect(PortOf(sched.url()));
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(Send(fd, "POST /v1/jobs/" + id + "/cancel HTTP/1.1\r\nHost: x\r\n"
                       "Authorization: Bearer " + token + "\r\n\r\n"));
  // Well inside the 10 s body deadline: the old edge sent nothing before it.
  const std::string reply = ReadUntil(fd, "\"cancelled\"", std::chrono::seconds(5));
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  EXPECT_NE(reply.find("\"state\":\"cancelled\""), std::string::npos) << reply;
  ASSERT_TRUE(Send(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  const std::string health = ReadUntil(fd, "\r\n\r\n", std::chrono::seconds(5));
  EXPECT_EQ(health.rfind("HTTP/1.1 200", 0), 0u) << health;
  close(fd);
  EXPECT_EQ(sched.Call("GET", "/v1/jobs/" + id, token).body["state"], "cancelled");
}

// Only the batch route takes bodies over 1 MiB, and no request gets around that: a
// Content-Length padded with zeros is read as its number, and chunked bodies (which httplib
// reads without its size limit) are refused before any byte of them is read.
TEST(SlowClientE2eTest, BodyLimitsHoldForPaddedLengthsAndChunkedBodies) {
  SchedulerProcess sched;
  const std::string token = sched.NewToken("vision", "alice");
  auto ask = [&](const std::string& head) {
    const int fd = Connect(PortOf(sched.url()));
    EXPECT_GE(fd, 0);
    EXPECT_TRUE(Send(fd, head));
    std::string reply = ReadUntil(fd, "}}", std::chrono::seconds(5));
    close(fd);
    return reply;
  };
  const std::string post = "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                           token + "\r\nContent-Type: application/json\r\n";
  // 2,000,000 bytes, spelled with 20 digits: over the limit all the same.
  const std::string padded = ask(post + "Content-Length: 00000000000002000000\r\n\r\n{");
  EXPECT_EQ(padded.rfind("HTTP/1.1 413", 0), 0u) << padded;
  EXPECT_NE(padded.find("1048576"), std::string::npos) << padded;
  EXPECT_NE(padded.find("Connection: close"), std::string::npos) << padded;
  const std::string chunked = ask(post + "Transfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n");
  EXPECT_EQ(chunked.rfind("HTTP/1.1 411", 0), 0u) << chunked;
  EXPECT_NE(chunked.find("Content-Length"), std::string::npos) << chunked;
  const std::string batch_chunked = ask(
      "POST /v1/jobs:batch HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n");
  EXPECT_EQ(batch_chunked.rfind("HTTP/1.1 411", 0), 0u) << batch_chunked;
  // The batch route's own limit: 16 MiB and one byte more is refused unread.
  const std::string huge = ask(
      "POST /v1/jobs:batch HTTP/1.1\r\nHost: x\r\nContent-Length: 16777217\r\n\r\n{");
  EXPECT_EQ(huge.rfind("HTTP/1.1 413", 0), 0u) << huge;
  EXPECT_NE(huge.find("16777216"), std::string::npos) << huge;
  // Nothing of any of it was stored, and the scheduler answers as before.
  auto jobs = sched.Call("GET", "/v1/jobs", token);
  EXPECT_EQ(jobs.status, 200);
  EXPECT_TRUE(jobs.body["jobs"].empty()) << jobs.raw;
}

}  // namespace
}  // namespace frugal::testing
