// api::Client with several scheduler URLs (decision 0020): it fails over to the next URL
// when one cannot be reached or answers 503, and resends at once only what is safe to.
#include "api/client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>

namespace frugal::api {
namespace {

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

// A scheduler stand-in that answers every GET and POST with `status` and counts them.
class FakeScheduler {
 public:
  explicit FakeScheduler(int status) {
    auto answer = [this, status](const httplib::Request&, httplib::Response& res) {
      ++calls;
      res.status = status;
      res.set_content(status == 200 ? R"({"ok":true})" : R"({"error":{"code":"unavailable",)"
                                                          R"("message":"database down"}})",
                      "application/json");
    };
    server_.Get("/x", answer);
    server_.Post("/x", answer);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // This httplib has no wait_until_ready(); the port is bound already, so connections
    // queue until it runs.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~FakeScheduler() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::atomic<int> calls{0};

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(ClientFailoverTest, AnUnreachableSchedulerIsSkippedForEveryMethod) {
  FakeScheduler up(200);
  const std::string dead = "http://127.0.0.1:" + std::to_string(DeadPort());
  Client client(dead + ", " + up.url(), "", {std::chrono::seconds(2)});
  ASSERT_TRUE(client.url_status().ok()) << client.url_status().ToString();
  auto get = client.Get("/x");
  ASSERT_TRUE(get.ok()) << get.status().ToString();
  EXPECT_EQ(get->status, 200);
  // A refused connection sent nothing: a POST is resent to the next URL too.
  auto post = client.Post("/x");
  ASSERT_TRUE(post.ok()) << post.status().ToString();
  EXPECT_EQ(post->status, 200);
  EXPECT_EQ(up.calls, 2);
}

TEST(ClientFailoverTest, AllUnreachableNamesEveryUrl) {
  const std::string a = "http://127.0.0.1:" + std::to_string(DeadPort());
  const std::string b = "http://127.0.0.1:" + std::to_string(DeadPort());
  Client client(a + "," + b, "", {std::chrono::seconds(2)});
  auto r = client.Get("/x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find(a), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find(b), std::string::npos) << r.status().message();
}

// A 503 may come after the server acted: a GET is retried on the next URL at once, a POST
// goes back to its caller, whose retry goes to the next URL.
TEST(ClientFailoverTest, A503MovesOnButAPostIsNotResentAtOnce) {
  FakeScheduler down(503);
  FakeScheduler up(200);
  Client client(down.url() + "," + up.url(), "", {std::chrono::seconds(2)});
  auto post = client.Post("/x");
  ASSERT_TRUE(post.ok()) << post.status().ToString();
  EXPECT_EQ(post->status, 503);
  EXPECT_EQ(up.calls, 0);
  auto retry = client.Post("/x");
  ASSERT_TRUE(retry.ok());
  EXPECT_EQ(retry->status, 200);
  // The client now stays with the one that answered.
  EXPECT_EQ(client.Get("/x")->status, 200);
  EXPECT_EQ(down.calls, 1);
  EXPECT_EQ(up.calls, 2);

  Client get_first(down.url() + "," + up.url(), "", {std::chrono::seconds(2)});
  EXPECT_EQ(get_first.Get("/x")->status, 200);
}

TEST(ClientFailoverTest, AnEmptyUrlInTheListIsRefused) {
  Client client("http://a:1,,http://b:2", "");
  EXPECT_EQ(client.url_status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Client("http://a:1,ftp://b", "").url_status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Client("http://a:1,http://b:2/prefix", "").url_status().ok());
}

}  // namespace
}  // namespace frugal::api
