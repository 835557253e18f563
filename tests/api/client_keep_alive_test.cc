// api::Client's keep_alive_gap against the real HTTP edge (api/http_server.h): requests in a
// burst share one connection, a slow cadence holds no server connection between requests,
// and a kept connection the server has closed is replaced without failing the request.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/client.h"
#include "api/http_server.h"

namespace frugal::api {
namespace {

using std::chrono::milliseconds;

// httplib sends without MSG_NOSIGNAL: a request written into a connection the server has
// just closed would end the test binary with SIGPIPE (the worker ignores it likewise).
const bool kSigpipeIgnored = [] {
  signal(SIGPIPE, SIG_IGN);
  return true;
}();

// The edge serving POST /x, noting each request's client port and Connection header.
class Edge {
 public:
  explicit Edge(EdgeLimits limits = {}) : server_(limits) {
    server_.Post("/x", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      ports_.push_back(req.remote_port);
      closes_.push_back(req.get_header_value("Connection") == "close");
      res.set_content(R"({"ok":true})", "application/json");
    });
    port_ = *server_.Bind("127.0.0.1", 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(milliseconds(5));
  }
  ~Edge() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<int> ports() {
    std::lock_guard<std::mutex> lock(mu_);
    return ports_;
  }
  std::vector<bool> closes() {
    std::lock_guard<std::mutex> lock(mu_);
    return closes_;
  }
  // Waits up to `limit` for the server's open connections to reach `n`.
  bool OpenConnectionsReach(int n, milliseconds limit = milliseconds(5000)) {
    for (int i = 0; i < limit.count() / 10 && server_.open_connections() != n; ++i) {
      std::this_thread::sleep_for(milliseconds(10));
    }
    return server_.open_connections() == n;
  }

 private:
  HttpServer server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<int> ports_;
  std::vector<bool> closes_;
};

TEST(ClientKeepAliveTest, RequestsInABurstShareOneConnection) {
  Edge edge;
  Client client(edge.url(), "", {std::chrono::seconds(5), milliseconds(5000)});
  for (int i = 0; i < 4; ++i) {
    auto r = client.Post("/x");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->status, 200);
  }
  const auto ports = edge.ports();
  ASSERT_EQ(ports.size(), 4u);
  // The first follows nothing, so it closes; the rest come within the gap and share one.
  EXPECT_EQ(edge.closes(), (std::vector<bool>{true, false, false, false}));
  EXPECT_NE(ports[0], ports[1]);
  EXPECT_EQ(ports[1], ports[2]);
  EXPECT_EQ(ports[2], ports[3]);
  EXPECT_TRUE(edge.OpenConnectionsReach(1)) << "the last request's connection is kept";
}

TEST(ClientKeepAliveTest, ASlowCadenceHoldsNoServerConnection) {
  Edge edge;
  Client client(edge.url(), "", {std::chrono::seconds(5), milliseconds(100)});
  ASSERT_TRUE(client.Post("/x").ok());
  std::this_thread::sleep_for(milliseconds(300));
  ASSERT_TRUE(client.Post("/x").ok());
  EXPECT_EQ(edge.closes(), (std::vector<bool>{true, true}));
  // Well before the edge's own idle limit (5 s): the server closed on the request's word.
  EXPECT_TRUE(edge.OpenConnectionsReach(0, milliseconds(1000)))
      << "the server still holds a connection";
}

TEST(ClientKeepAliveTest, WithoutAGapEveryRequestHasItsOwnConnection) {
  Edge edge;
  Client client(edge.url(), "", {std::chrono::seconds(5)});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(client.Post("/x").ok());
  const auto ports = edge.ports();
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_NE(ports[0], ports[1]);
  EXPECT_NE(ports[1], ports[2]);
  EXPECT_TRUE(edge.OpenConnectionsReach(0));
}

TEST(ClientKeepAliveTest, AConnectionIdleLongerThanTheGapIsNotReused) {
  Edge edge;  // the edge would keep it 5 s
  Client client(edge.url(), "", {std::chrono::seconds(5), milliseconds(200)});
  ASSERT_TRUE(client.Post("/x").ok());
  ASSERT_TRUE(client.Post("/x").ok());  // kept
  std::this_thread::sleep_for(milliseconds(500));
  ASSERT_TRUE(edge.OpenConnectionsReach(1)) << "the edge still holds the kept connection";
  ASSERT_TRUE(client.Post("/x").ok());
  const auto ports = edge.ports();
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_NE(ports[1], ports[2]) << "the stale connection was reused";
  EXPECT_EQ(edge.closes(), (std::vector<bool>{true, false, true}));
  EXPECT_TRUE(edge.OpenConnectionsReach(0, milliseconds(1000)));
}

TEST(ClientKeepAliveTest, AKeptConnectionTheServerClosedIsReplaced) {
  EdgeLimits limits;
  limits.keep_alive_idle = milliseconds(100);
  Edge edge(limits);
  Client client(edge.url(), "", {std::chrono::seconds(5), milliseconds(60000)});
  ASSERT_TRUE(client.Post("/x").ok());
  ASSERT_TRUE(client.Post("/x").ok());  // kept
  ASSERT_TRUE(edge.OpenConnectionsReach(0)) << "the edge closes an idle kept connection";
  auto r = client.Post("/x");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  const auto ports = edge.ports();
  ASSERT_EQ(ports.size(), 3u);
  EXPECT_EQ(edge.closes(), (std::vector<bool>{true, false, false})) << "all but the first kept";
  EXPECT_NE(ports[1], ports[2]) << "sent on a new connection";
}

}  // namespace
}  // namespace frugal::api
