// The HTTP side of budget alert webhooks: the WebhookSender the scheduler binary gives the
// AlertDispatcher (scheduler/engine/alert_dispatcher.h), and the URL check the budget route
// applies, so a URL that is accepted is one the sender can POST to.
#pragma once

#include <string>

#include "common/status.h"
#include "scheduler/engine/alert_dispatcher.h"

namespace frugal::api {

// InvalidArgument (field "webhook_url") unless `url` is http://HOST[:PORT][/PATH] (or
// https:// when built with OpenSSL), at most 2048 characters, no spaces or controls.
Status CheckWebhookUrl(const std::string& url);

// POSTs with cpp-httplib: 5 s to connect, 10 s to answer; Ok only for 2xx.
class HttpWebhookSender final : public engine::WebhookSender {
 public:
  Status Post(const std::string& url, const std::string& json_body) override;
};

}  // namespace frugal::api
