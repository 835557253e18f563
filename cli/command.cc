#include "cli/command.h"

#include <ostream>

#include "cli/format.h"

namespace frugal::cli {

StatusOr<api::ClientResponse> Checked(StatusOr<api::ClientResponse> response) {
  if (!response.ok()) return response.status();
  RETURN_IF_ERROR(api::ResponseStatus(*response));
  return response;
}

void Print(Session& s, const json& body, const std::function<std::string()>& table) {
  s.out << (s.output == OutputFormat::kJson ? PrettyJson(body) : table());
}

}  // namespace frugal::cli
