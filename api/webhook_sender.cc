#include "api/webhook_sender.h"

#include <httplib.h>

#include <regex>

namespace frugal::api {

namespace {

struct Url {
  std::string origin;  // scheme://host[:port]
  std::string path;
};

StatusOr<Url> SplitUrl(const std::string& url) {
  static const std::regex kUrl(R"(^(https?)://([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:.]+\])(:[0-9]{1,5})?(/[^\s]*)?$)");
  std::smatch m;
  if (url.size() > 2048 || !std::regex_match(url, m, kUrl))
    return InvalidArgument("webhook_url: must be http://HOST[:PORT][/PATH], at most 2048 characters",
                           "webhook_url");
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
  if (m[1] == "https")
    return InvalidArgument("webhook_url: this build has no TLS; use an http:// URL", "webhook_url");
#endif
  if (m[3].matched && std::stoi(m[3].str().substr(1)) > 65535)
    return InvalidArgument("webhook_url: port must be 1..65535", "webhook_url");
  return Url{m[1].str() + "://" + m[2].str() + m[3].str(), m[4].matched ? m[4].str() : "/"};
}

}  // namespace

Status CheckWebhookUrl(const std::string& url) {
  for (unsigned char ch : url)
    if (ch < 0x20 || ch == 0x7f)
      return InvalidArgument("webhook_url: no control characters", "webhook_url");
  return SplitUrl(url).status();
}

Status HttpWebhookSender::Post(const std::string& url, const std::string& json_body) {
  ASSIGN_OR_RETURN(Url u, SplitUrl(url));
  httplib::Client client(u.origin);
  client.set_connection_timeout(5);
  client.set_read_timeout(10);
  client.set_write_timeout(10);
  auto res = client.Post(u.path, json_body, "application/json");
  if (!res) return Unavailable("webhook " + u.origin + ": " + httplib::to_string(res.error()));
  if (res->status < 200 || res->status > 299)
    return Unavailable("webhook " + u.origin + " answered " + std::to_string(res->status));
  return Status::Ok();
}

}  // namespace frugal::api
