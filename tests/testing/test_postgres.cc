#include "tests/testing/test_postgres.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "scheduler/store/pg/migrations.h"
#include "scheduler/store/pg/pg_conn.h"

namespace frugal::testing {

namespace {
[[noreturn]] void Die(const std::string& what, const Status& st) {
  std::fprintf(stderr, "test PostgreSQL: %s: %s\n", what.c_str(), st.ToString().c_str());
  std::abort();
}
std::mutex g_mu;
}  // namespace

TestPostgres& TestPostgres::Get() {
  static TestPostgres instance;
  return instance;
}

TestPostgres::TestPostgres() : dir_(std::make_unique<TempDir>("frugal-pg")) {
  cluster_ = std::make_unique<store::PgServer>(
      store::PgServerOptions{dir_->path() + "/pg", 5432, /*fast_unsafe=*/true});
  if (Status st = cluster_->Start(); !st.ok()) Die("start", st);
  if (Status st = store::EnsureDatabase(cluster_->ConnString("postgres"), "frugal_template");
      !st.ok())
    Die("create template", st);
  auto conn = store::PgConn::Connect(cluster_->ConnString("frugal_template"));
  if (!conn.ok()) Die("connect template", conn.status());
  auto applied = store::Migrate(**conn);
  if (!applied.ok()) Die("migrate template", applied.status());
}

TestPostgres::~TestPostgres() {
  (void)cluster_->Stop();
  cluster_.reset();
}

std::string TestPostgres::CreateDatabase(const std::string& template_name) {
  std::lock_guard<std::mutex> lock(g_mu);
  const std::string name = "t" + std::to_string(getpid()) + "_" + std::to_string(next_++);
  auto conn = store::PgConn::Connect(cluster_->ConnString("postgres"));
  if (!conn.ok()) Die("connect", conn.status());
  auto r = (*conn)->ExecScript("CREATE DATABASE " + name + " TEMPLATE " + template_name);
  if (!r.ok()) Die("create database", r.status());
  return cluster_->ConnString(name);
}

std::string TestPostgres::NewDatabase() { return CreateDatabase("frugal_template"); }
std::string TestPostgres::NewEmptyDatabase() { return CreateDatabase("template0"); }

}  // namespace frugal::testing
