// `frugal`: the researcher's and admin's command line. Parsing is CLI11's; every
// subcommand is listed in cli/command_table.cc. Usage errors exit 2, other errors 1.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app;
  app.name("frugal");
  frugal::cli::Commands commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is a ParseError too, with exit code 0; every other one is a usage error.
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return commands.Run(std::cout, std::cerr);
  } catch (const std::exception& e) {
    // Commands report errors as Status values; this is a last resort against library throws.
    std::cerr << "frugal: error: internal: " << e.what() << "\n";
    return 1;
  }
}
