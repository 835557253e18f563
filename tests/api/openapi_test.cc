// docs/openapi.yaml against the routes the server really registers: a route the document
// lacks, or an operation it describes that the server does not have, fails here.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "api/codec_jobs.h"
#include "api/server.h"
#include "scheduler/service/advisor.h"
#include "scheduler/engine/engine.h"
#include "scheduler/policy/policy.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/api/openapi_spec.h"

namespace frugal::api {
namespace {

using testing::LoadOpenApi;
using testing::NormalisePath;
using testing::SpecOperations;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A real ApiServer, never bound: building it registers every route. The store is never
// called, so it needs no database.
std::vector<RouteInfo> ServerRoutes() {
  store::PgStore store("host=/nonexistent dbname=none", 1);
  auto policy = policy::MakePolicy("placement/fifo");
  EXPECT_TRUE(policy.ok());
  engine::Engine engine(store, **policy, {});
  service::Advisor advisor(store, {});
  ApiServer server(store, store, store, engine, advisor, {});
  return server.Routes();
}

TEST(OpenApiTest, EveryRouteIsDescribedAndEveryOperationExists) {
  const auto spec = LoadOpenApi(OpenApiYaml());
  const auto described = SpecOperations(spec);
  std::set<std::pair<std::string, std::string>> registered;
  for (const auto& r : ServerRoutes()) registered.insert({r.method, NormalisePath(r.pattern)});
  ASSERT_GT(registered.size(), 20u);
  for (const auto& op : registered)
    EXPECT_TRUE(described.count(op)) << "docs/openapi.yaml lacks " << op.first << " " << op.second;
  for (const auto& op : described)
    EXPECT_TRUE(registered.count(op)) << "no route for " << op.first << " " << op.second
                                      << " described in docs/openapi.yaml";
}

TEST(OpenApiTest, RouteTemplatesNameTheirParameters) {
  // Latency metrics are labelled by these templates, so they must read like the document.
  EXPECT_EQ(PathTemplate(R"(/v1/jobs/([^/]+)/why)"), "/v1/jobs/{id}/why");
  EXPECT_EQ(PathTemplate(R"(/v1/admin/teams/([^/]+)/quota)"), "/v1/admin/teams/{team}/quota");
  EXPECT_EQ(PathTemplate(R"(/v1/admin/pools/([^/]+)/availability)"),
            "/v1/admin/pools/{pool}/availability");
  EXPECT_EQ(PathTemplate("/v1/jobs"), "/v1/jobs");
  const auto spec = LoadOpenApi(OpenApiYaml());
  std::set<std::string> paths;
  for (const auto& p : spec["paths"].items()) paths.insert(p.key());
  for (const auto& r : ServerRoutes())
    EXPECT_TRUE(paths.count(r.path)) << r.path << " is not a path of docs/openapi.yaml";
}

TEST(OpenApiTest, EmbeddedDocumentIsTheSourceFileAndWellFormed) {
  EXPECT_EQ(OpenApiYaml(), ReadFile(std::string(FRUGAL_SOURCE_DIR) + "/docs/openapi.yaml"))
      << "rebuild: the embedded copy is stale";
  const auto spec = LoadOpenApi(OpenApiYaml());
  EXPECT_EQ(spec["openapi"], "3.1.0");
  EXPECT_TRUE(testing::BrokenRefs(spec).empty()) << *testing::BrokenRefs(spec).begin();
  // Every operation answers something, and every JSON body has a schema.
  for (const auto& [path, item] : spec["paths"].items()) {
    for (const auto& [method, op] : item.items()) {
      if (method == "parameters") continue;
      EXPECT_FALSE(op["responses"].empty()) << method << " " << path;
    }
  }
}

TEST(OpenApiTest, JobSchemaMatchesTheCodecExactly) {
  // The validator the end-to-end test uses is strict both ways: an extra field and a
  // missing one each break the schema.
  const auto spec = LoadOpenApi(OpenApiYaml());
  const json ref = {{"$ref", "#/components/schemas/Job"}};
  json job = EncodeJob(model::Job{});
  EXPECT_EQ(testing::SchemaViolation(spec, ref, job), "");
  json extra = job;
  extra["surprise"] = 1;
  EXPECT_NE(testing::SchemaViolation(spec, ref, extra), "");
  json missing = job;
  missing.erase("state");
  EXPECT_NE(testing::SchemaViolation(spec, ref, missing), "");
}

}  // namespace
}  // namespace frugal::api
