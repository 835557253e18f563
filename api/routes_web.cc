// The dashboard's static files: GET / (index.html) and GET /web/{file}. Public: they hold
// no data; the pages read the JSON API with the token the user types in (kept in the
// browser's sessionStorage), so every figure they show passes the API's own RBAC.
#include "api/routes.h"
#include "api/web_files.h"

namespace frugal::api {

namespace {

std::string ContentType(const std::string& name) {
  auto ends = [&](const std::string& ext) {
    return name.size() >= ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  return "text/plain; charset=utf-8";
}

const EmbeddedFile* Find(const std::string& name) {
  for (const auto& f : WebFiles())
    if (f.name == name) return &f;
  return nullptr;
}

}  // namespace

void RegisterWebRoutes(Router& s, Context& ctx) {
  s.Get("/", Route(ctx, Access::kPublic, [](auto&, auto&) -> StatusOr<Reply> {
          const auto* index = Find("index.html");
          if (index == nullptr) return NotFound("the dashboard was not built into this binary");
          return Reply::Text(ContentType(index->name), index->text);
        }));
  s.Get(R"(/web/([^/]+))", Route(ctx, Access::kPublic, [](const httplib::Request& req,
                                                          auto&) -> StatusOr<Reply> {
          const std::string name = req.matches[1];
          const auto* file = Find(name);
          if (file == nullptr) return NotFound("no dashboard file " + name);
          return Reply::Text(ContentType(file->name), file->text);
        }));
}

}  // namespace frugal::api
