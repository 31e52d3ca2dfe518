/* main.c - the cairn binary: one entry point, a verb per concern. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void usage(FILE *f)
{
	fputs("usage: cairn <command> [args]\n"
	      "\n"
	      "commands:\n"
	      "  run --config FILE [--] [ARGS...]\n"
	      "        run the box's [agent] in its sandbox (ARGS appended to its command)\n"
	      "  policy check POLICY [--schema FILE]... [--event-schema FILE] [--format human|json]\n"
	      "        parse and validate a policy file (Box action schema by default)\n"
	      "  policy authorize --policies FILE [--entities FILE] [--schema FILE]...\n"
	      "                   --request FILE [--format human|json]\n"
	      "        decide one request and print the decision and its text\n"
	      "  policy replay POLICY --trace FILE [--schema FILE]... [--event-schema FILE]\n"
	      "                [--format human|json] [--engine incremental|reference]\n"
	      "                [--history DIR] [--text] [--strict-context]\n"
	      "        decide every event of a trace, with history (Dogwood's replay);\n"
	      "        --strict-context checks each request_context against the schema\n"
	      "  history show BOX_DIR [--since DURATION] [--action A]\n"
	      "        print the box's event history as JSON lines\n"
	      "  history verify BOX_DIR\n"
	      "        check every record's CRC and the hash chain\n"
	      "  records show BOX_DIR [--json] [--follow]\n"
	      "        print the box's decision records, one line per decision\n",
	      f);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "policy") == 0)
		return cmd_policy(argc - 1, argv + 1);
	if (strcmp(argv[1], "run") == 0)
		return cmd_run(argc - 1, argv + 1);
	if (strcmp(argv[1], "history") == 0)
		return cmd_history(argc - 1, argv + 1);
	if (strcmp(argv[1], "records") == 0)
		return cmd_records(argc - 1, argv + 1);
	fprintf(stderr, "cairn: error: unknown command `%s`\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
