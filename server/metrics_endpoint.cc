#include "server/metrics_endpoint.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <iostream>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "prometheus/text_serializer.h"

namespace slackswap {
namespace {

constexpr size_t kMaxRequestHeadBytes = 8 << 10;

struct Connection {
  int fd = -1;
  std::string in;
  std::string out;
  size_t sent = 0;
  bool responding = false;
  absl::Time deadline;
};

// "HOST:PORT" or "[IPV6]:PORT" split into host and port.
absl::Status SplitAddress(const std::string& address, std::string& host,
                          std::string& port) {
  if (!address.empty() && address[0] == '[') {
    const size_t close = address.find(']');
    if (close == std::string::npos || close + 1 >= address.size() ||
        address[close + 1] != ':') {
      return absl::InvalidArgumentError(absl::StrCat(
          "metrics address '", address, "': expected [IPV6]:PORT"));
    }
    host = address.substr(1, close - 1);
    port = address.substr(close + 2);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos ||
        address.find(':') != colon) {  // a bare IPv6 address needs brackets
      return absl::InvalidArgumentError(
          absl::StrCat("metrics address '", address,
                       "': expected HOST:PORT or [IPV6]:PORT"));
    }
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
  }
  int number = 0;
  if (!absl::SimpleAtoi(port, &number) || number < 0 || number > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics address '", address, "': the port must be 0 to 65535"));
  }
  return absl::OkStatus();
}

void CloseFd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

std::string Response(const std::string& status, const std::string& type,
                     const std::string& body, bool head_only,
                     const std::string& extra_headers = "") {
  std::string r =
      absl::StrCat("HTTP/1.1 ", status, "\r\nContent-Type: ", type,
                   "\r\nContent-Length: ", body.size(),
                   "\r\nConnection: close\r\n", extra_headers, "\r\n");
  if (!head_only) r += body;
  return r;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& address, std::shared_ptr<prometheus::Registry> registry,
    const MetricsEndpointOptions& options) {
  std::string host, port;
  absl::Status split = SplitAddress(address, host, port);
  if (!split.ok()) return split;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int resolved = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                                   port.c_str(), &hints, &found);
  if (resolved != 0) {
    return absl::UnavailableError(absl::StrCat(
        "cannot serve metrics on ", address, ": ", gai_strerror(resolved)));
  }
  std::unique_ptr<MetricsEndpoint> e(new MetricsEndpoint());
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr && e->listen_fd_ < 0; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                    a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      error = std::strerror(errno);
      CloseFd(fd);
      continue;
    }
    e->listen_fd_ = fd;
  }
  freeaddrinfo(found);
  if (e->listen_fd_ < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot serve metrics on ", address, ": ", error));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  getsockname(e->listen_fd_, reinterpret_cast<sockaddr*>(&bound), &length);
  e->port_ = ntohs(bound.ss_family == AF_INET6
                       ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                       : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) {
    CloseFd(e->listen_fd_);
    return absl::InternalError("metrics endpoint: no pipe");
  }
  e->wake_read_fd_ = pipe_fds[0];
  e->wake_write_fd_ = pipe_fds[1];
  e->registry_ = std::move(registry);
  e->options_ = options;
  e->options_.max_connections = std::max(1, options.max_connections);
  e->thread_ = std::thread([endpoint = e.get()] { endpoint->Run(); });
  return e;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (thread_.joinable()) {
    const char byte = 0;
    while (write(wake_write_fd_, &byte, 1) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  CloseFd(listen_fd_);
  CloseFd(wake_read_fd_);
  CloseFd(wake_write_fd_);
}

namespace {

// The answer to the request head in `c.in`: /metrics, /healthz, /readyz,
// or an error status.
void Respond(Connection& c, const MetricsEndpointOptions& options,
             prometheus::Registry& registry) {
  const size_t line_end = c.in.find("\r\n");
  const std::string line = c.in.substr(0, line_end);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = line.find(' ', sp1 == std::string::npos ? 0 : sp1 + 1);
  c.responding = true;
  if (sp1 == std::string::npos || sp2 == std::string::npos) {
    c.out = Response("400 Bad Request", "text/plain", "bad request\n", false);
    return;
  }
  const std::string method = line.substr(0, sp1);
  std::string path = line.substr(sp1 + 1, sp2 - sp1 - 1);
  path = path.substr(0, path.find('?'));
  const bool head = method == "HEAD";
  if (method != "GET" && !head) {
    c.out = Response("405 Method Not Allowed", "text/plain",
                     "only GET /metrics\n", false, "Allow: GET, HEAD\r\n");
  } else if (path == "/healthz") {
    c.out = Response("200 OK", "text/plain", "ok\n", head);
  } else if (path == "/readyz") {
    c.out = !options.ready || options.ready()
                ? Response("200 OK", "text/plain", "serving\n", head)
                : Response("503 Service Unavailable", "text/plain",
                           "draining\n", head);
  } else if (path != "/metrics") {
    c.out = Response("404 Not Found", "text/plain",
                     "try /metrics, /healthz or /readyz\n", head);
  } else {
    if (options.before_scrape) options.before_scrape();
    c.out = Response("200 OK", "text/plain; version=0.0.4; charset=utf-8",
                     prometheus::TextSerializer().Serialize(registry.Collect()),
                     head);
  }
}

// One connection's turn: read its request head (and answer it once
// whole), then send what it has to send; a connection that is done, or
// failed, is closed (fd -1).
void Exchange(Connection& c, const MetricsEndpointOptions& options,
              prometheus::Registry& registry) {
  if (!c.responding) {
    char buffer[4096];
    const ssize_t n = recv(c.fd, buffer, sizeof(buffer), 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      CloseFd(c.fd);
      return;
    }
    if (n > 0) c.in.append(buffer, static_cast<size_t>(n));
    if (c.in.find("\r\n\r\n") != std::string::npos) {
      Respond(c, options, registry);
    } else if (c.in.size() > kMaxRequestHeadBytes) {
      c.responding = true;
      c.out = Response("431 Request Header Fields Too Large", "text/plain",
                       "request head over 8 KiB\n", false);
    }
  }
  if (c.responding && c.fd >= 0) {
    while (c.sent < c.out.size()) {
      const ssize_t n = send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent,
                             MSG_NOSIGNAL);
      if (n < 0) {
        if (errno != EAGAIN && errno != EINTR) CloseFd(c.fd);
        break;
      }
      c.sent += static_cast<size_t>(n);
    }
    if (c.fd >= 0 && c.sent == c.out.size()) {
      shutdown(c.fd, SHUT_WR);
      CloseFd(c.fd);
    }
  }
}

// Takes every pending connection (the oldest makes room past
// `max_connections`). Out of descriptors or memory, the listener rests
// until `listen_again`.
void AcceptAll(int listen_fd, const MetricsEndpointOptions& options,
               absl::Time now, std::deque<Connection>& connections,
               absl::Time& listen_again) {
  for (;;) {
    const int fd =
        accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
          errno == ENOMEM) {
        listen_again = now + absl::Milliseconds(100);
      }
      break;
    }
    if (static_cast<int>(connections.size()) >= options.max_connections) {
      CloseFd(connections.front().fd);  // the oldest makes room
      connections.pop_front();
    }
    Connection c;
    c.fd = fd;
    c.deadline = now + options.request_timeout;
    connections.push_back(std::move(c));
  }
}

}  // namespace

void MetricsEndpoint::Run() {
  std::deque<Connection> connections;  // oldest first
  std::vector<pollfd> fds;
  // Out of descriptors or memory, accept fails without taking the pending
  // connection: the listener rests a moment instead of waking poll at once,
  // forever.
  absl::Time listen_again = absl::InfinitePast();
  for (;;) {
    fds.clear();
    fds.push_back({wake_read_fd_, POLLIN, 0});
    const bool listening = absl::Now() >= listen_again;
    fds.push_back({listening ? listen_fd_ : -1, POLLIN, 0});
    absl::Time earliest = listening ? absl::InfiniteFuture() : listen_again;
    for (const Connection& c : connections) {
      fds.push_back(
          {c.fd, static_cast<short>(c.responding ? POLLOUT : POLLIN), 0});
      earliest = std::min(earliest, c.deadline);
    }
    int timeout_ms = -1;
    if (earliest != absl::InfiniteFuture()) {
      timeout_ms = static_cast<int>(std::clamp<int64_t>(
          absl::ToInt64Milliseconds(earliest - absl::Now()) + 1, 0, 60000));
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      std::cerr << "metrics endpoint: poll failed (" << std::strerror(errno)
                << "); no longer serving /metrics" << std::endl;
      break;
    }
    if (fds[0].revents != 0) break;
    const absl::Time now = absl::Now();
    // Existing connections first (their pollfds follow the two fixed ones).
    for (size_t i = 0; i < connections.size(); ++i) {
      if (fds[i + 2].revents != 0)
        Exchange(connections[i], options_, *registry_);
    }
    for (Connection& c : connections) {
      if (c.fd >= 0 && now >= c.deadline) CloseFd(c.fd);
    }
    connections.erase(
        std::remove_if(connections.begin(), connections.end(),
                       [](const Connection& c) { return c.fd < 0; }),
        connections.end());
    if (fds[1].revents != 0) {
      AcceptAll(listen_fd_, options_, now, connections, listen_again);
    }
  }
  for (Connection& c : connections) CloseFd(c.fd);
}

}  // namespace slackswap
