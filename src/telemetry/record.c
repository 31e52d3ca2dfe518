/* record.c - decision and control records in Box's order (record.h;
 * docs/records.md "The records").
 *
 * A record is one block: the struct, its attributes, the string arrays they
 * point to, then the characters.  The block is sized before anything is
 * copied (every string takes at most its bounded length plus a little), so
 * building it cannot overrun and needs one malloc. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "record.h"

#define ATTRS_MAX 20
#define TRUNCATED "\xe2\x80\xa6 (truncated)"            /* "… (truncated)" */
#define REDACTED "<redacted>"
#define FLAG_NAME_MAX 32
#define SLACK 24                /* per string: "=<redacted>", "<n> more…" */

const char *tm_cause_name(enum tm_cause c)
{
	switch (c) {
	case TM_PERMITTED: return "permitted";
	case TM_FORBIDDEN: return "forbidden";
	case TM_NO_MATCH: return "no_match";
	case TM_POLICY_PENDING: return "policy_pending";
	case TM_INTERNAL_FAULT: return "internal_fault";
	case TM_ENFORCEMENT: break;
	}
	return "enforcement";
}

const char *tm_cause_reason(enum tm_cause c)
{
	switch (c) {
	case TM_FORBIDDEN: return "a forbid rule matched";
	case TM_NO_MATCH: return "no permit matched";
	case TM_POLICY_PENDING: return "the complete policy bundle is not installed";
	default: break;
	}
	return "the request could not be evaluated, so it was refused";
}

const char *tm_control_name(enum tm_control_op op)
{
	switch (op) {
	case TM_BOX_STARTED: return "box_started";
	case TM_POLICY_INSTALLED: return "policy_installed";
	case TM_POLICY_REFUSED: return "policy_refused";
	case TM_SCHEMA_INSTALLED: return "schema_installed";
	case TM_DISCOVERY_COMPLETE: return "discovery_complete";
	case TM_BOX_STOPPED: return "box_stopped";
	case TM_REFUSALS_UNOBSERVED: break;
	}
	return "refusals_unobserved";
}

const char *tm_scope_name(enum tm_scope s)
{
	switch (s) {
	case TM_SCOPE_POLICY: return "strands-box.policy";
	case TM_SCOPE_CONTROL: return "strands-box.control";
	case TM_SCOPE_CONTAINMENT: break;
	}
	return "strands-box.containment";
}

/* ---- ids ------------------------------------------------------------------------ */

/* xoshiro256** per thread, seeded from getrandom: ids must be unique and
 * unguessable enough to join traces, not secret, and a system call per
 * decision is what this avoids. */
static __thread uint64_t rng[4];
static __thread bool rng_seeded;

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(void)
{
	if (!rng_seeded) {
		size_t got = 0;
		while (got < sizeof(rng)) {
			ssize_t k = getrandom((char *)rng + got, sizeof(rng) - got, 0);
			if (k <= 0)
				break;
			got += (size_t)k;
		}
		/* getrandom cannot fail for 32 bytes after boot; if it did,
		 * the address of the state still differs per thread */
		if (got < sizeof(rng))
			rng[0] ^= (uint64_t)(uintptr_t)&rng_seeded;
		rng[3] |= 1;            /* the state must not be all zero */
		rng_seeded = true;
	}
	uint64_t r = rotl(rng[1] * 5, 7) * 9, t = rng[1] << 17;
	rng[2] ^= rng[0];
	rng[3] ^= rng[1];
	rng[1] ^= rng[2];
	rng[0] ^= rng[3];
	rng[2] ^= t;
	rng[3] = rotl(rng[3], 45);
	return r;
}

void tm_random_id(uint8_t *buf, size_t n)
{
	bool zero = true;
	while (zero) {
		for (size_t i = 0; i < n; i += 8) {
			uint64_t v = rng_next();
			for (size_t k = 0; k < 8 && i + k < n; k++)
				buf[i + k] = (uint8_t)(v >> (8 * k));
		}
		for (size_t i = 0; i < n && zero; i++)
			zero = buf[i] == 0;
	}
}

/* ---- W3C trace context ------------------------------------------------------------ */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;                      /* W3C: lowercase only */
}

static bool hex_bytes(const char *s, uint8_t *out, size_t n)
{
	bool nonzero = false;
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return false;
		out[i] = (uint8_t)(hi << 4 | lo);
		nonzero |= out[i] != 0;
	}
	return nonzero;
}

/* traceparent: version "-" trace-id "-" parent-id "-" flags, 55 characters
 * at version 00; a later version may append "-…" fields, read as 00 reads
 * its first four; version ff is invalid (W3C Trace Context §3.2). */
int tm_traceparent_parse(const char *v, size_t len, struct tm_trace *t)
{
	uint8_t tid[16], pid[8], flags;
	if (len < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-')
		return -EINVAL;
	int hi = hexval(v[0]), lo = hexval(v[1]);
	if (hi < 0 || lo < 0 || (hi == 15 && lo == 15))
		return -EINVAL;
	if (hi == 0 && lo == 0 ? len != 55 : len > 55 && v[55] != '-')
		return -EINVAL;
	if (!hex_bytes(v + 3, tid, 16) || !hex_bytes(v + 36, pid, 8))
		return -EINVAL;
	if (hexval(v[53]) < 0 || hexval(v[54]) < 0)
		return -EINVAL;
	flags = (uint8_t)(hexval(v[53]) << 4 | hexval(v[54]));
	memcpy(t->trace_id, tid, 16);
	memcpy(t->parent_id, pid, 8);
	t->has_parent = true;
	t->parent_flags = flags;
	return 0;
}

/* Box's request-id alphabet, [A-Za-z0-9-_.:/], as a table: the id is read
 * on every decision's thread. */
static const bool id_char[256] = {
	['0' ... '9'] = true, ['A' ... 'Z'] = true, ['a' ... 'z'] = true,
	['-'] = true, ['_'] = true, ['.'] = true, [':'] = true, ['/'] = true,
};

bool tm_request_id_ok(const char *id)
{
	if (id == NULL)
		return false;
	size_t n = 0;
	while (n < TM_REQUEST_ID_MAX && id_char[(unsigned char)id[n]])
		n++;
	return n > 0 && id[n] == '\0';
}

/* ---- bounded strings and arguments ---------------------------------------------- */

/* s bounded as tm_bounded bounds it, and the result's length in *len. */
static const char *bounded(const char *s, char out[TM_ATTR_MAX + 1], size_t *len)
{
	size_t n = strlen(s);
	if (n <= TM_ATTR_MAX) {
		*len = n;
		return s;
	}
	/* the last character start at or before MAX - len(TRUNCATED) */
	size_t keep = TM_ATTR_MAX - (sizeof(TRUNCATED) - 1);
	while (keep > 0 && ((unsigned char)s[keep] & 0xc0) == 0x80)
		keep--;
	memcpy(out, s, keep);
	memcpy(out + keep, TRUNCATED, sizeof(TRUNCATED));
	*len = keep + sizeof(TRUNCATED) - 1;
	return out;
}

const char *tm_bounded(const char *s, char out[TM_ATTR_MAX + 1])
{
	size_t n;
	return bounded(s, out, &n);
}

static bool plain_flag(const char *a, size_t len)
{
	if (len > 2 && a[0] == '-' && a[1] == '-') {
		if (len - 2 > FLAG_NAME_MAX || !(a[2] >= 'a' && a[2] <= 'z'))
			return false;
		for (size_t i = 2; i < len; i++)
			if (!((a[i] >= 'a' && a[i] <= 'z') || a[i] == '-'))
				return false;
		return true;
	}
	return len == 2 && a[0] == '-' &&
	       ((a[1] >= 'a' && a[1] <= 'z') || (a[1] >= 'A' && a[1] <= 'Z'));
}

const char *tm_reportable_arg(const char *arg, char out[TM_ATTR_MAX + 1])
{
	size_t len = strlen(arg);
	if (plain_flag(arg, len))
		return arg;
	const char *eq = arg[0] == '-' ? strchr(arg, '=') : NULL;
	if (eq != NULL && plain_flag(arg, (size_t)(eq - arg))) {
		size_t n = (size_t)(eq - arg);
		memcpy(out, arg, n);
		memcpy(out + n, "=" REDACTED, sizeof("=" REDACTED));
		return out;
	}
	return REDACTED;
}

/* ---- the block ------------------------------------------------------------------------ */

struct bld {
	struct tm_rec *r;
	const char **arr, **arr_end;
	char *p, *end;
};

static size_t room(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return (n < TM_ATTR_MAX ? n : TM_ATTR_MAX) + SLACK;
}

static int bld_new(struct bld *b, size_t n_arr, size_t chars)
{
	size_t head = sizeof(struct tm_rec) + ATTRS_MAX * sizeof(struct tm_attr);
	head = (head + 7) & ~(size_t)7;
	size_t arr = n_arr * sizeof(char *);
	/* only the struct is zeroed: the attributes and the characters are
	 * written before they are read, and zeroing the whole block was a
	 * fifth of building it */
	struct tm_rec *r = malloc(head + arr + chars);
	if (r == NULL)
		return -ENOMEM;
	memset(r, 0, sizeof(*r));
	b->r = r;
	b->arr = (const char **)((char *)r + head);
	b->arr_end = b->arr + n_arr;
	b->p = (char *)r + head + arr;
	b->end = b->p + chars;
	return 0;
}

/* The length of the valid UTF-8 sequence at p (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t k;
	unsigned min;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		k = 2, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		k = 3, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		k = 4, min = 0x10000;
	else
		return 0;
	if (k > n)
		return 0;
	unsigned v = c & (0x3fu >> (k - 1));
	for (size_t i = 1; i < k; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	return k;
}

/* Whether the eight bytes at p are all ASCII. */
static bool ascii8(const unsigned char *p)
{
	uint64_t w;
	memcpy(&w, p, sizeof(w));
	return (w & 0x8080808080808080ull) == 0;
}

/* A bounded copy of s in the block.  A byte that is not valid UTF-8
 * becomes '?': OTLP strings are UTF-8 and their decoders refuse others,
 * and a record must still say what it can.  The copy is made whole and
 * only what is not ASCII is looked at again, eight bytes at a time: a
 * record's strings are nearly always ASCII (docs/records.md "What records
 * cost"). */
static const char *bld_str(struct bld *b, const char *s)
{
	char tmp[TM_ATTR_MAX + 1];
	size_t n;
	const unsigned char *v = (const unsigned char *)bounded(s ? s : "", tmp, &n);
	char *d = b->p;
	if (n + 1 > (size_t)(b->end - b->p))
		abort();                /* sized in advance: cannot happen */
	memcpy(d, v, n + 1);
	for (size_t i = 0; i < n;) {
		if (n - i >= 8 && ascii8(v + i)) {
			i += 8;
			continue;
		}
		if (v[i] < 0x80) {
			i++;
			continue;
		}
		size_t k = utf8_len(v + i, n - i);
		if (k == 0)
			d[i++] = '?';
		else
			i += k;
	}
	b->p += n + 1;
	return d;
}

static void add_str(struct bld *b, const char *key, const char *s)
{
	struct tm_attr *a = &b->r->attrs[b->r->n_attrs++];
	*a = (struct tm_attr){ .key = key, .kind = TM_STR, .s = bld_str(b, s) };
}

/* A string that is already in the block, or static. */
static void add_kept(struct bld *b, const char *key, const char *s)
{
	struct tm_attr *a = &b->r->attrs[b->r->n_attrs++];
	*a = (struct tm_attr){ .key = key, .kind = TM_STR, .s = s };
}

static void add_int(struct bld *b, const char *key, int64_t i)
{
	struct tm_attr *a = &b->r->attrs[b->r->n_attrs++];
	*a = (struct tm_attr){ .key = key, .kind = TM_INT, .i = i };
}

static const char **add_strs(struct bld *b, const char *key, size_t n)
{
	struct tm_attr *a = &b->r->attrs[b->r->n_attrs++];
	const char **v = b->arr;
	if (n > (size_t)(b->arr_end - b->arr))
		abort();
	b->arr += n;
	*a = (struct tm_attr){ .key = key, .kind = TM_STRS, .n = n, .v = v };
	return v;
}

/* The category: for Box's own namespace the group before ':' of the term;
 * for any other the namespace, so a tool a server named `fs:read` cannot
 * pose as the filesystem lane. */
static const char *category(struct bld *b, const struct tm_decision *d)
{
	if (d->ns != NULL && strcmp(d->ns, "Box") != 0 && d->ns[0] != '\0')
		return bld_str(b, d->ns);
	const char *colon = strchr(d->action, ':');
	size_t n = colon ? (size_t)(colon - d->action) : strlen(d->action);
	char tmp[64];
	if (n >= sizeof(tmp))
		return bld_str(b, d->action);
	memcpy(tmp, d->action, n);
	tmp[n] = '\0';
	return bld_str(b, tmp);
}

struct tm_rec *tm_record_decision(const struct tm_decision *d)
{
	const bool box_ns = d->ns == NULL || strcmp(d->ns, "Box") == 0;
	const bool governs = (d->cause == TM_PERMITTED || d->cause == TM_FORBIDDEN) &&
			     d->n_rules > 0 && d->rules[0].id != NULL;
	size_t n_cmd = d->subject == TM_SUBJECT_PROCESS
		       ? 1 + (d->n_args < TM_ARGS_MAX ? d->n_args : TM_ARGS_MAX) + 1 : 0;
	size_t chars = 256 + room(d->action) * 3 + room(d->resource) * 2 + room(d->reason) +
		       room(d->rule) + room(d->ns) + room(d->path) + room(d->address) +
		       room(d->method) + room(d->program) * 2 + room(d->cwd) +
		       room(d->request_id) + room(d->jsonrpc_id);
	for (size_t i = 0; i < d->n_rules; i++)
		chars += room(d->rules[i].id) + (i == 0 ? room(d->rules[i].description) : 0);
	for (size_t i = 0; i < d->n_args && i < TM_ARGS_MAX; i++)
		chars += room(d->args[i]);
	struct bld b;
	if (bld_new(&b, d->n_rules + n_cmd, chars) != 0)
		return NULL;
	struct tm_rec *r = b.r;

	r->scope = TM_SCOPE_POLICY;
	r->signal = d->permit ? TM_SIG_PERMIT : TM_SIG_DENY;
	r->time_ns = d->time_ns;
	r->severity = d->permit ? 9 : 13;
	r->text = d->permit ? "permit" : "deny";
	r->event_name = "strands.box.policy.decision";
	r->trace = d->trace;
	/* sampled always; the parent's random bit (0x02) carried */
	r->flags = d->trace.has_parent ? 1u | (d->trace.parent_flags & 2u) : 3u;
	r->span = true;
	r->span_flags = r->flags | (d->trace.has_parent ? 0x300u : 0);
	r->status = d->cause == TM_INTERNAL_FAULT ? "policy evaluation failed" : NULL;

	/* Box's order (docs/records.md "Decision records") */
	if (tm_request_id_ok(d->request_id))
		add_str(&b, "strands.box.request.id", d->request_id);
	if (tm_request_id_ok(d->jsonrpc_id))
		add_str(&b, "jsonrpc.request.id", d->jsonrpc_id);
	add_kept(&b, "strands.box.policy.principal", "agent:self");
	r->action = bld_str(&b, d->action);
	add_kept(&b, "strands.box.policy.action", r->action);
	r->resource = bld_str(&b, d->resource);
	add_kept(&b, "strands.box.policy.resource", r->resource);
	add_kept(&b, "strands.box.policy.verdict", r->text);
	add_kept(&b, "strands.box.policy.cause", tm_cause_name(d->cause));
	if (d->cause == TM_INTERNAL_FAULT)
		add_kept(&b, "error.type", "strands.box.policy.evaluation_error");
	if (!d->permit)
		add_str(&b, "strands.box.policy.reason", d->reason ? d->reason : "");
	r->rule = bld_str(&b, governs ? d->rules[0].id : d->rule ? d->rule : "<default-deny>");
	add_kept(&b, "strands.box.policy.rule", r->rule);
	add_kept(&b, "strands.box.policy.category", category(&b, d));
	if (governs && d->rules[0].description != NULL && d->rules[0].description[0] != '\0')
		add_str(&b, "strands.box.policy.description", d->rules[0].description);
	switch (d->subject) {
	case TM_SUBJECT_FILE:
		add_str(&b, "file.path", d->path);
		break;
	case TM_SUBJECT_DEST:
		add_str(&b, "server.address", d->address);
		add_int(&b, "server.port", (int64_t)d->port);
		if (d->method != NULL && d->method[0] != '\0')
			add_str(&b, "http.request.method", d->method);
		break;
	case TM_SUBJECT_PROCESS: {
		const char *prog = bld_str(&b, d->program);
		add_kept(&b, "process.command", prog);
		const char **v = add_strs(&b, "process.command_args",
					  n_cmd - (d->n_args > TM_ARGS_MAX ? 0 : 1));
		size_t k = 0;
		v[k++] = prog;
		for (size_t i = 0; i < d->n_args && i < TM_ARGS_MAX; i++) {
			char tmp[TM_ATTR_MAX + 1];
			bool lit = d->literal != NULL && d->literal[i];
			v[k++] = bld_str(&b, lit ? d->args[i] : tm_reportable_arg(d->args[i], tmp));
		}
		if (d->n_args > TM_ARGS_MAX) {
			char more[64];
			snprintf(more, sizeof(more), "%zu more" TRUNCATED, d->n_args - TM_ARGS_MAX);
			v[k++] = bld_str(&b, more);
		}
		if (d->cwd != NULL && d->cwd[0] != '\0')
			add_str(&b, "process.working_directory", d->cwd);
		break;
	}
	case TM_SUBJECT_NONE:
		/* an fs:* resource is the path; only Box's own namespace says so */
		if (box_ns && strncmp(d->action, "fs:", 3) == 0)
			add_kept(&b, "file.path", r->resource);
		break;
	}
	if (d->n_rules > 0) {
		const char **v = add_strs(&b, "strands.box.policy.determining.ids", d->n_rules);
		for (size_t i = 0; i < d->n_rules; i++)
			v[i] = i == 0 && governs ? r->rule : bld_str(&b, d->rules[i].id);
	}
	/* "policy <action>", the action cut at 80 bytes (and mended by
	 * bld_str if that cut a character) */
	char name[96] = "policy ";
	size_t an = strnlen(r->action, 80);
	memcpy(name + 7, r->action, an);
	name[7 + an] = '\0';
	r->span_name = bld_str(&b, name);
	return r;
}

struct tm_rec *tm_record_control(enum tm_control_op op, const char *subject, const char *reason,
				 const char *detail, int64_t time_ns, const struct tm_trace *t)
{
	struct bld b;
	if (bld_new(&b, 0, 128 + room(subject) + room(reason) + room(detail)) != 0)
		return NULL;
	struct tm_rec *r = b.r;
	const char *opname = tm_control_name(op);
	r->scope = TM_SCOPE_CONTROL;
	r->signal = TM_SIG_TRACE;
	r->time_ns = time_ns;
	r->severity = 10;
	r->text = reason != NULL ? "refused" : "ok";
	r->trace = *t;
	r->flags = 3;                   /* never a remote parent: the run's own trace */
	r->span = true;
	r->span_flags = 3;
	r->status = reason != NULL ? "control-plane operation failed" : NULL;
	r->action = opname;
	add_kept(&b, "strands.box.control.operation", opname);
	add_kept(&b, "strands.box.control.outcome", r->text);
	if (subject != NULL)
		add_str(&b, "strands.box.control.subject", subject);
	if (reason != NULL)
		add_str(&b, "strands.box.control.reason", reason);
	if (detail != NULL)
		add_str(&b, "strands.box.control.detail", detail);
	char name[64];
	snprintf(name, sizeof(name), "control %s", opname);
	r->span_name = bld_str(&b, name);
	return r;
}

struct tm_rec *tm_record_kernel(const struct tm_kernel_refusal *k)
{
	bool proc = k->program != NULL && k->program[0] != '\0';
	size_t n = k->n_args < TM_ARGS_MAX ? k->n_args : TM_ARGS_MAX;
	size_t chars = 128 + room(k->syscall) + room(k->arguments) + room(k->program) +
		       room(k->cwd);
	for (size_t i = 0; proc && i < n; i++)
		chars += room(k->args[i]);
	struct bld b;
	if (bld_new(&b, proc ? n + 2 : 0, chars) != 0)
		return NULL;
	struct tm_rec *r = b.r;
	r->scope = TM_SCOPE_CONTAINMENT;
	r->signal = TM_SIG_KERNEL;
	r->time_ns = k->time_ns;
	r->severity = 14;
	r->text = "refused";
	r->event_name = "strands.box.containment.refusal";
	tm_random_id(r->trace.trace_id, sizeof(r->trace.trace_id));
	tm_random_id(r->trace.span_id, sizeof(r->trace.span_id));
	r->flags = 3;
	r->span = false;                /* Box derives no span from a kernel refusal */
	r->action = "seccomp";
	add_kept(&b, "strands.box.containment.mechanism", "seccomp");
	add_str(&b, "strands.box.containment.syscall", k->syscall);
	r->resource = r->attrs[r->n_attrs - 1].s;
	if (k->arguments != NULL && k->arguments[0] != '\0')
		add_str(&b, "strands.box.containment.arguments", k->arguments);
	add_kept(&b, "strands.box.containment.errno", "EPERM");
	add_int(&b, "strands.box.containment.suppressed", k->suppressed);
	add_int(&b, "process.pid", k->pid);
	if (proc) {
		const char *prog = bld_str(&b, k->program);
		add_kept(&b, "process.command", prog);
		const char **v = add_strs(&b, "process.command_args",
					  1 + n + (k->n_args > TM_ARGS_MAX));
		size_t j = 0;
		v[j++] = prog;
		for (size_t i = 0; i < n; i++) {
			char tmp[TM_ATTR_MAX + 1];
			v[j++] = bld_str(&b, tm_reportable_arg(k->args[i], tmp));
		}
		if (k->n_args > TM_ARGS_MAX) {
			char more[64];
			snprintf(more, sizeof(more), "%zu more" TRUNCATED, k->n_args - TM_ARGS_MAX);
			v[j++] = bld_str(&b, more);
		}
		if (k->cwd != NULL && k->cwd[0] != '\0')
			add_str(&b, "process.working_directory", k->cwd);
	}
	return r;
}

int tm_record_set_int(struct tm_rec *r, const char *key, int64_t v)
{
	for (size_t i = 0; i < r->n_attrs; i++)
		if (r->attrs[i].kind == TM_INT && strcmp(r->attrs[i].key, key) == 0) {
			r->attrs[i].i = v;
			return 0;
		}
	return -ENOENT;
}
