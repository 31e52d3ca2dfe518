/* fuzz_link.c - libFuzzer target: the supervisor's end of the decision
 * channels (src/gateway/link.h, gw_link_answer), what a gateway process
 * - which parses what the workload sends, and so may be subverted - can put
 * in front of the engine and the history.
 *
 * Input: one request frame, as the gateway would send it.
 *
 * The promises this target checks (a broken one aborts):
 *   - every frame gets a reply of its kind: a u32 rc, <= 0 and >= -4095;
 *     a decision's reply is the rc, then allow (0/1), ticket, a cause no
 *     larger than the last one, a rule and a text, nothing after;
 *   - a reply never claims allow with a cause other than permitted;
 *   - a frame answered -EPROTO decided and recorded nothing: the monitor
 *     has the same number of events as before.
 * The monitor is in memory and made anew every 4096 inputs, so a long run
 * does not grow without bound.  Nothing is printed. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "dogwood.h"
#include "link.h"

static const char policy[] =
	"@id(\"api\")\n"
	"permit (principal, action == Box::Action::\"net:connect\", resource)\n"
	"when { context.input.host == \"api.test\" };\n"
	"@id(\"gets\")\n"
	"permit (principal, action == Box::Action::\"http:request\", resource)\n"
	"when { context.input.method == \"GET\" };\n"
	"@id(\"no_admin\")\n"
	"forbid (principal, action == Box::Action::\"http:request\", resource)\n"
	"when { context.input.path like \"/admin*\" };\n";

static struct dw_engine *eng;
static struct dw_monitor *mon;
static struct gw_decider dec;
static unsigned long inputs;
static unsigned char *buf;

static void fz_fail(const char *what)
{
	fprintf(stderr, "fuzz_link: %s\n", what);
	abort();
}

static void fz_teardown(void)
{
	dw_monitor_free(mon);
	dw_engine_free(eng);
	free(buf);
}

static void fz_setup(void)
{
	struct dw_input in = { "fuzz_link.dw", policy, strlen(policy), DW_FMT_DOGWOOD };
	struct dw_engine_config cfg = { .policies = &in, .n_policies = 1,
					.flags = DW_VALIDATE | DW_BOX_RULES };
	struct dw_diags *d = dw_diags_new();
	char err[256];

	if (d == NULL || dw_engine_new(&cfg, &eng, d) != 0)
		fz_fail("the policy did not load");
	dw_diags_free(d);
	if (dw_monitor_new(eng, NULL, &mon, err, sizeof err) != 0)
		fz_fail(err);
	if ((buf = malloc(GW_LINK_FRAME_MAX)) == NULL)
		fz_fail("out of memory");
	gw_decider_local(&dec, mon, eng, NULL);
	atexit(fz_teardown);
}

static uint64_t events(void)
{
	struct dw_monitor_stats st;
	dw_monitor_stats(mon, &st);
	return st.events;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];

	if (eng == NULL)
		fz_setup();
	if (++inputs % 4096 == 0) {
		dw_monitor_free(mon);
		if (dw_monitor_new(eng, NULL, &mon, err, sizeof err) != 0)
			fz_fail(err);
		gw_decider_local(&dec, mon, eng, NULL);
	}
	if (size > GW_LINK_FRAME_MAX)
		return 0;
	memcpy(buf, data, size);
	uint64_t before = events();
	size_t n = gw_link_answer(&dec, buf, size, GW_LINK_FRAME_MAX);

	struct gw_wire r;
	gw_wire_from(&r, buf, n);
	int32_t rc = (int32_t)gw_get_u32(&r);
	if (r.bad || rc > 0 || rc < -4095)
		fz_fail("a reply without its rc");
	if (rc == -EPROTO && r.n == 0 && events() != before)
		fz_fail("a refused frame changed the history");
	if (r.n != 0) {
		/* a verdict: allow, ticket, cause, rule, text */
		uint8_t allow = gw_get_u8(&r);
		(void)gw_get_u64(&r);
		uint32_t cause = gw_get_u32(&r);
		char *rule = NULL, *text = NULL;
		gw_get_str(&r, GW_LINK_FRAME_MAX, &rule);
		gw_get_str(&r, GW_LINK_FRAME_MAX, &text);
		if (r.bad || r.n != 0 || allow > 1 || cause > DW_CAUSE_INTERNAL_FAULT ||
		    (allow && cause != DW_CAUSE_PERMITTED))
			fz_fail("a malformed verdict");
		free(rule);
		free(text);
	}
	return 0;
}
