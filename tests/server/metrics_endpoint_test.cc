// The /metrics endpoint over real loopback sockets: scrapes, errors, idle and
// slow clients, IPv6.
#include "server/metrics_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"

namespace slackswap {
namespace {

// A TCP connection to the loopback address of `family`; -1 on failure.
int Connect(int family, int port) {
  const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int ok = -1;
  if (family == AF_INET6) {
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_loopback;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    ok = connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  }
  if (ok != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Everything the peer sends until it closes, waiting at most `timeout_ms`
// for each chunk. `closed` says whether the peer closed (rather than the
// wait running out).
std::string ReadAll(int fd, int timeout_ms, bool* closed = nullptr) {
  std::string out;
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) <= 0) {
      if (closed != nullptr) *closed = false;
      return out;
    }
    char buffer[4096];
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) {
      if (closed != nullptr) *closed = true;
      return out;
    }
    out.append(buffer, static_cast<size_t>(n));
  }
}

// Sends `request` on a new connection and returns the whole response.
std::string Exchange(int family, int port, const std::string& request) {
  const int fd = Connect(family, port);
  if (fd < 0) return "";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string response = ReadAll(fd, 10000);
  close(fd);
  return response;
}

std::string Get(int port, const std::string& path = "/metrics",
                int family = AF_INET) {
  return Exchange(family, port, "GET " + path + " HTTP/1.1\r\nHost: x\r\n\r\n");
}

class MetricsEndpointTest : public ::testing::Test {
 protected:
  MetricsEndpointTest() : registry_(std::make_shared<prometheus::Registry>()) {
    prometheus::BuildCounter()
        .Name("test_requests_total")
        .Help("test")
        .Register(*registry_)
        .Add({})
        .Increment(3);
  }

  std::unique_ptr<MetricsEndpoint> Start(
      const std::string& address,
      MetricsEndpointOptions options = MetricsEndpointOptions()) {
    auto endpoint = MetricsEndpoint::Start(address, registry_, options);
    EXPECT_TRUE(endpoint.ok()) << endpoint.status();
    return endpoint.ok() ? *std::move(endpoint) : nullptr;
  }

  std::shared_ptr<prometheus::Registry> registry_;
};

TEST_F(MetricsEndpointTest, ServesTheRegistryInTheTextFormat) {
  auto endpoint = Start("127.0.0.1:0");
  ASSERT_NE(endpoint, nullptr);
  ASSERT_GT(endpoint->port(), 0);
  const std::string response = Get(endpoint->port());
  EXPECT_TRUE(absl::StartsWith(response, "HTTP/1.1 200 OK\r\n")) << response;
  EXPECT_TRUE(absl::StrContains(response, "version=0.0.4")) << response;
  EXPECT_TRUE(absl::StrContains(response, "\ntest_requests_total 3"))
      << response;
  // The body is exactly Content-Length long.
  const size_t body = response.find("\r\n\r\n") + 4;
  const size_t at = response.find("Content-Length: ") + 16;
  EXPECT_EQ(std::stoul(response.substr(at)), response.size() - body);

  // A query string is ignored; HEAD gets the head only.
  EXPECT_TRUE(absl::StartsWith(Get(endpoint->port(), "/metrics?x=1"),
                               "HTTP/1.1 200 OK"));
  const std::string head =
      Exchange(AF_INET, endpoint->port(), "HEAD /metrics HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(absl::StartsWith(head, "HTTP/1.1 200 OK")) << head;
  EXPECT_TRUE(absl::EndsWith(head, "\r\n\r\n")) << head;
}

TEST_F(MetricsEndpointTest, AnswersProbesAndSamplesBeforeEachScrape) {
  std::atomic<bool> ready{true};
  std::atomic<int> scrapes{0};
  MetricsEndpointOptions options;
  options.ready = [&ready] { return ready.load(); };
  options.before_scrape = [&scrapes] { ++scrapes; };
  auto endpoint = Start("127.0.0.1:0", options);
  ASSERT_NE(endpoint, nullptr);
  EXPECT_TRUE(
      absl::StartsWith(Get(endpoint->port(), "/healthz"), "HTTP/1.1 200 OK"));
  EXPECT_TRUE(
      absl::StartsWith(Get(endpoint->port(), "/readyz"), "HTTP/1.1 200 OK"));
  ready = false;  // draining
  const std::string draining = Get(endpoint->port(), "/readyz");
  EXPECT_TRUE(absl::StartsWith(draining, "HTTP/1.1 503")) << draining;
  EXPECT_TRUE(
      absl::StartsWith(Get(endpoint->port(), "/healthz"), "HTTP/1.1 200 OK"));
  // Probes do not scrape; each /metrics does.
  EXPECT_EQ(scrapes.load(), 0);
  Get(endpoint->port());
  Get(endpoint->port());
  EXPECT_EQ(scrapes.load(), 2);
}

TEST_F(MetricsEndpointTest, AnswersOtherRequestsWithTheirHttpError) {
  auto endpoint = Start("127.0.0.1:0");
  ASSERT_NE(endpoint, nullptr);
  EXPECT_TRUE(
      absl::StartsWith(Get(endpoint->port(), "/"), "HTTP/1.1 404 Not Found"));
  EXPECT_TRUE(absl::StartsWith(
      Exchange(AF_INET, endpoint->port(), "POST /metrics HTTP/1.1\r\n\r\n"),
      "HTTP/1.1 405"));
  EXPECT_TRUE(absl::StartsWith(
      Exchange(AF_INET, endpoint->port(), "nonsense\r\n\r\n"), "HTTP/1.1 400"));
  EXPECT_TRUE(absl::StartsWith(
      Exchange(AF_INET, endpoint->port(),
               "GET /metrics HTTP/1.1\r\nX: " + std::string(9000, 'a')),
      "HTTP/1.1 431"));
}

// Two idle connections used to hold both of civetweb's threads: every scrape
// waited 30 s. Here idle clients hold only their own sockets, even when they
// may stay open for a minute.
TEST_F(MetricsEndpointTest, IdleConnectionsDoNotDelayAScrape) {
  MetricsEndpointOptions options;
  options.request_timeout = absl::Seconds(60);
  auto endpoint = Start("127.0.0.1:0", options);
  ASSERT_NE(endpoint, nullptr);
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i)
    idle.push_back(Connect(AF_INET, endpoint->port()));
  // One more that sends half a request and stalls.
  const int slow = Connect(AF_INET, endpoint->port());
  send(slow, "GET /met", 8, MSG_NOSIGNAL);
  const int fd = Connect(AF_INET, endpoint->port());
  ASSERT_GE(fd, 0);
  const std::string request = "GET /metrics HTTP/1.1\r\n\r\n";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  bool closed = false;
  // Far below the 60 s the idle connections may last.
  const std::string response = ReadAll(fd, 10000, &closed);
  EXPECT_TRUE(closed);
  EXPECT_TRUE(absl::StrContains(response, "test_requests_total 3"));
  close(fd);
  close(slow);
  for (int i : idle) close(i);
}

TEST_F(MetricsEndpointTest, ClosesAConnectionThatSendsNothingAtItsTimeout) {
  MetricsEndpointOptions options;
  options.request_timeout = absl::Milliseconds(200);
  auto endpoint = Start("127.0.0.1:0", options);
  ASSERT_NE(endpoint, nullptr);
  const int fd = Connect(AF_INET, endpoint->port());
  bool closed = false;
  EXPECT_EQ(ReadAll(fd, 20000, &closed), "");
  EXPECT_TRUE(closed) << "the endpoint should have closed the idle connection";
  close(fd);
}

TEST_F(MetricsEndpointTest, TheOldestConnectionMakesRoomAtTheLimit) {
  MetricsEndpointOptions options;
  options.max_connections = 2;
  options.request_timeout = absl::Seconds(60);
  auto endpoint = Start("127.0.0.1:0", options);
  ASSERT_NE(endpoint, nullptr);
  const int first = Connect(AF_INET, endpoint->port());
  const int second = Connect(AF_INET, endpoint->port());
  // A third connection (the scrape) closes the first.
  EXPECT_TRUE(absl::StrContains(Get(endpoint->port()), "200 OK"));
  bool closed = false;
  ReadAll(first, 10000, &closed);
  EXPECT_TRUE(closed);
  close(first);
  close(second);
}

// Out of file descriptors, accept fails and leaves the connection pending:
// the endpoint must rest rather than spin on a listener that stays readable,
// and serve again once descriptors are free.
TEST_F(MetricsEndpointTest, RestsWhenOutOfDescriptorsAndRecovers) {
  auto endpoint = Start("127.0.0.1:0");
  ASSERT_NE(endpoint, nullptr);
  // One answered request first: the endpoint's thread is running before the
  // limit tightens (the sanitizers' checks at a thread's start need
  // descriptors of their own).
  ASSERT_TRUE(absl::StrContains(Get(endpoint->port(), "/metrics"),
                                "test_requests_total 3"));
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
  const int fd = Connect(AF_INET, endpoint->port());
  ASSERT_GE(fd, 0);
  // No descriptor left for the endpoint's accept: the lowest free one is
  // the next, and the limit stops just below it.
  const int probe = dup(0);
  ASSERT_GE(probe, 0);
  close(probe);
  rlimit tight = saved;
  tight.rlim_cur = static_cast<rlim_t>(probe);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &tight), 0);
  const std::string request = "GET /metrics HTTP/1.1\r\n\r\n";
  send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  getrusage(RUSAGE_SELF, &after);
  auto seconds = [](const rusage& u) {
    return u.ru_utime.tv_sec + u.ru_stime.tv_sec +
           (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  };
  // A spinning poll loop would burn the whole half second.
  EXPECT_LT(seconds(after) - seconds(before), 0.2);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
  bool closed = false;
  EXPECT_TRUE(
      absl::StrContains(ReadAll(fd, 10000, &closed), "test_requests_total 3"));
  close(fd);
}

TEST_F(MetricsEndpointTest, ListensOnIpv6) {
  const int probe = socket(AF_INET6, SOCK_STREAM, 0);
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  a.sin6_addr = in6addr_loopback;
  const bool ipv6 = probe >= 0 && bind(probe, reinterpret_cast<sockaddr*>(&a),
                                       sizeof(a)) == 0;
  if (probe >= 0) close(probe);
  if (!ipv6) GTEST_SKIP() << "no IPv6 loopback on this machine";
  auto endpoint = Start("[::1]:0");
  ASSERT_NE(endpoint, nullptr);
  EXPECT_TRUE(absl::StrContains(Get(endpoint->port(), "/metrics", AF_INET6),
                                "test_requests_total 3"));
}

TEST_F(MetricsEndpointTest, RejectsAddressesItCannotUse) {
  for (const std::string address : {"::1:9464", "localhost", "[::1]9464",
                                    "127.0.0.1:99999", "127.0.0.1:x"}) {
    auto endpoint = MetricsEndpoint::Start(address, registry_);
    EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kInvalidArgument)
        << address << ": " << endpoint.status();
  }
  // Taken: UNAVAILABLE naming the address.
  auto first = Start("127.0.0.1:0");
  ASSERT_NE(first, nullptr);
  const std::string taken = "127.0.0.1:" + std::to_string(first->port());
  auto second = MetricsEndpoint::Start(taken, registry_);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(second.status().message(), taken));
}

}  // namespace
}  // namespace slackswap
