// The only main() of the product; everything happens in quarry::cli::Main.
#include "quarry/cli/cli.h"

int main(int argc, char** argv) { return quarry::cli::Main(argc, argv); }
