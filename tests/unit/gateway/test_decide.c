/* test_decide.c - the gateway's decisions: Box's order and words, history. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decide.h"
#include "dogwood.h"
#include "test.h"
#include "policy_engine.h"

/* the harness's counters: this file has its own main (shared set-up) */
unsigned long test_passed, test_failed;


/* http:request to api.bound.test:443, intercepted */
static int http(struct gw_decider *d, const char *method, const char *path, int64_t bytes,
		struct gw_verdict *v)
{
	const struct gw_http_input h = { "api.bound.test", 443, method, path, bytes, true, NULL };
	return gw_decide_http(d, &h, v);
}

int main(void)
{
	struct dw_engine *eng = policy_engine(GW_TEST_POLICY);
	struct dw_monitor *m = NULL;
	struct dw_monitor_config mc = { 0 };
	char err[256], body[9000];
	struct gw_verdict v;
	struct gw_decider dec, *d = &dec;

	CHECK(eng != NULL);
	if (!eng || dw_monitor_new(eng, &mc, &m, err, sizeof(err)) != 0) {
		printf("FAIL: monitor: %s\n%lu passed, %lu failed\n", err, test_passed, test_failed + 1);
		return 1;
	}
	gw_decider_local(d, m, eng, NULL);
	/* net:connect before DNS: no ip */
	CHECK(gw_decide_connect(d, "api.bound.test", 443, NULL, &v) == 0 && v.allow);
	gw_verdict_clear(&v);
	CHECK(gw_decide_connect(d, "other.test", 443, NULL, &v) == 0 && !v.allow);
	gw_denial_body(&v, false, body, sizeof(body));
	CHECK(strcmp(body, "policy denied this operation on 'other.test:443' [default-deny]: No "
			   "permit policy matched this request.") == 0);
	gw_verdict_clear(&v);
	/* per resolved address: a forbid on the ip */
	CHECK(gw_decide_connect(d, "api.bound.test", 443, "169.254.169.254", &v) == 0 &&
	      !v.allow);
	gw_denial_body(&v, false, body, sizeof(body));
	CHECK(strstr(body, "[policy: metadata_addresses]: No cloud metadata.") != NULL);
	gw_verdict_clear(&v);
	CHECK(gw_decide_connect(d, "api.bound.test", 443, "192.0.2.7", &v) == 0 && v.allow);
	CHECK(gw_record_response(d, &v, -1) == 0);
	gw_verdict_clear(&v);

	/* http:request: Box's exact 403 body */
	CHECK(http(d, "DELETE", "/v1/items/1", 0, &v) ==
		      0 && !v.allow);
	gw_denial_body(&v, true, body, sizeof(body));
	CHECK(strcmp(body, "http:request gate: policy denied this operation on "
			   "'api.bound.test:443/v1/items/1' [default-deny]: No permit policy "
			   "matched this request.") == 0);
	gw_verdict_clear(&v);

	/* a cap over responses: two GETs pass (one in flight counts), the third is refused */
	struct gw_verdict a, b, c;
	CHECK(http(d, "GET", "/a", 0, &a) == 0 && a.allow);
	CHECK(http(d, "GET", "/b", 0, &b) == 0 && b.allow);
	CHECK(http(d, "GET", "/c", 0, &c) == 0 &&
	      !c.allow);
	gw_denial_body(&c, true, body, sizeof(body));
	CHECK(strstr(body, "[policy: three_gets]: At most two GETs a minute.") != NULL);
	CHECK(gw_record_response(d, &a, 200) == 0);
	CHECK(gw_record_error(d, &b) == 0);
	CHECK(gw_record_response(d, &a, 200) != 0);     /* a ticket closes once */
	gw_verdict_clear(&a);
	gw_verdict_clear(&b);
	gw_verdict_clear(&c);
	/* b's ::error does not count: one more GET fits */
	CHECK(http(d, "GET", "/d", 12, &v) == 0 && v.allow);
	gw_verdict_clear(&v);

	/* the gateway process names causes without the engine: the same words */
	for (int c = DW_CAUSE_PERMITTED; c <= DW_CAUSE_INTERNAL_FAULT; c++) {
		struct gw_verdict cv = { .cause = (enum dw_cause)c };
		CHECK_EQ_STR(gw_verdict_cause(&cv), dw_cause_name((enum dw_cause)c));
	}

	/* the body is bounded */
	struct gw_verdict big = { .text = NULL };
	char small[16];
	CHECK(gw_denial_body(&big, true, small, sizeof(small)) == sizeof(small) - 1);

	struct dw_monitor_stats st;
	dw_monitor_stats(m, &st);
	CHECK(st.events >= 12);         /* every ::request, denied ones too, and outcomes */
	dw_monitor_free(m);
	dw_engine_free(eng);
	printf("%lu passed, %lu failed\n", test_passed, test_failed);
	return test_failed > 0;
}
