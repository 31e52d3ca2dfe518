/* cred.c - phantoms, routes, injection, AWS profiles, scrubbing (contract:
 * cred.h).
 *
 * Divisions, in file order (each opens with a "---- name" rule):
 *   helpers         gw_fail(), base64 codecs (the wiping buffer and %XX: secbuf.h)
 *   header lists    gw_hdrs_*
 *   (phantoms and the route table: cred_table.c)
 *   matching        destination patterns, specificity, canonical_path()
 *   scoping         gw_cred_scope_new, the foreign-phantom scan
 *   injection       observe/strip/set per placement, SigV4, gw_cred_apply
 *   AWS profiles    the two INI files, refused shapes
 *   scrubbing       the streaming window, headers, the encoding check
 * Every buffer that may hold a secret is wiped before it is freed; keep it
 * so when adding one. */
#include "cred.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "cred_table.h"
#include "http.h"
#include "secbuf.h"
#include "sigv4.h"
#include "gwerr.h"

/* ---- helpers ------------------------------------------------------------- */

static void wipe_free_n(void *p, size_t n)
{
	if (p == NULL)
		return;
	OPENSSL_cleanse(p, n);
	free(p);
}

static int buf_emit(void *ctx, const void *p, size_t n)
{
	struct gw_sb *b = ctx;

	gw_sb_addn(b, p, n);
	return b->oom ? -ENOMEM : 0;
}

static const char b64chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void buf_b64_encode(struct gw_sb *b, const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		char q[4] = { b64chars[v >> 18 & 63], b64chars[v >> 12 & 63],
			      i + 1 < n ? b64chars[v >> 6 & 63] : '=', i + 2 < n ? b64chars[v & 63] : '=' };

		gw_sb_addn(b, q, 4);
	}
}

/* Standard base64, padding optional; false on any other byte. */
static bool buf_b64_decode(struct gw_sb *b, const char *s, size_t n)
{
	unsigned acc = 0;
	int bits = 0;
	size_t pad = 0;

	for (size_t i = 0; i < n; i++) {
		const char *c;

		if (s[i] == '=') {
			pad++;
			continue;
		}
		if (pad > 0 || (c = memchr(b64chars, s[i], 64)) == NULL || s[i] == '\0')
			return false;
		acc = (acc << 6 | (unsigned)(c - b64chars)) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			char o = (char)(acc >> (bits - 8) & 0xff);

			bits -= 8;
			gw_sb_addn(b, &o, 1);
		}
	}
	return pad <= 2 && !b->oom;
}

/* s[0, n) without surrounding spaces and tabs. */
static void trim(const char **s, size_t *n)
{
	while (*n > 0 && (**s == ' ' || **s == '\t'))
		(*s)++, (*n)--;
	while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

static bool ieq_n(const char *a, size_t an, const char *b)
{
	return an == strlen(b) && strncasecmp(a, b, an) == 0;
}

/* ---- header lists ------------------------------------------------------- */

void gw_hdrs_init(struct gw_hdrs *h)
{
	h->n = h->cap = 0;
	h->v = NULL;
}

static void hdr_free(struct gw_hdr *f)
{
	free(f->name);
	/* A value may be a credential this module set. */
	wipe_free_n(f->value, f->vlen);
}

void gw_hdrs_clear(struct gw_hdrs *h)
{
	for (size_t i = 0; i < h->n; i++)
		hdr_free(&h->v[i]);
	free(h->v);
	gw_hdrs_init(h);
}

static bool field_ok(const char *s, size_t n)
{
	return memchr(s, '\0', n) == NULL && memchr(s, '\r', n) == NULL &&
	       memchr(s, '\n', n) == NULL;
}

static char *dupn(const char *s, size_t n)
{
	char *p = malloc(n + 1);

	if (p != NULL) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

int gw_hdrs_add(struct gw_hdrs *h, const char *name, size_t nlen, const char *value, size_t vlen)
{
	struct gw_hdr f;

	if (name == NULL || nlen == 0 || (value == NULL && vlen > 0) || !field_ok(name, nlen) ||
	    (vlen > 0 && !field_ok(value, vlen)) || memchr(name, ':', nlen) != NULL)
		return -EINVAL;
	if (h->n >= GW_HDRS_MAX)
		return -E2BIG;
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 16;
		struct gw_hdr *v = realloc(h->v, cap * sizeof *v);

		if (v == NULL)
			return -ENOMEM;
		h->v = v, h->cap = cap;
	}
	f.name = dupn(name, nlen), f.nlen = nlen;
	f.value = dupn(vlen ? value : "", vlen), f.vlen = vlen;
	if (f.name == NULL || f.value == NULL) {
		hdr_free(&f);
		return -ENOMEM;
	}
	h->v[h->n++] = f;
	return 0;
}

long gw_hdrs_find(const struct gw_hdrs *h, const char *name, size_t from)
{
	for (size_t i = from; i < h->n; i++)
		if (strcasecmp(h->v[i].name, name) == 0)
			return (long)i;
	return -1;
}

const char *gw_hdrs_get(const struct gw_hdrs *h, const char *name)
{
	long i = gw_hdrs_find(h, name, 0);

	return i < 0 ? NULL : h->v[i].value;
}

size_t gw_hdrs_remove(struct gw_hdrs *h, const char *name)
{
	size_t k = 0, removed = 0;

	for (size_t i = 0; i < h->n; i++) {
		if (strcasecmp(h->v[i].name, name) == 0) {
			hdr_free(&h->v[i]);
			removed++;
		} else {
			h->v[k++] = h->v[i];
		}
	}
	h->n = k;
	return removed;
}

/* The first field keeps its place (and its spelling of the name) with the
 * new value; later ones go; absent, the field is appended. */
int gw_hdrs_set(struct gw_hdrs *h, const char *name, const char *value)
{
	size_t vlen = strlen(value);
	long i = gw_hdrs_find(h, name, 0);
	char *v;

	if (i < 0)
		return gw_hdrs_add(h, name, strlen(name), value, vlen);
	if (!field_ok(value, vlen))
		return -EINVAL;
	if ((v = dupn(value, vlen)) == NULL)
		return -ENOMEM;
	wipe_free_n(h->v[i].value, h->v[i].vlen);
	h->v[i].value = v, h->v[i].vlen = vlen;
	{
		size_t k = (size_t)i + 1;

		for (size_t j = (size_t)i + 1; j < h->n; j++) {
			if (strcasecmp(h->v[j].name, name) == 0)
				hdr_free(&h->v[j]);
			else
				h->v[k++] = h->v[j];
		}
		h->n = k;
	}
	return 0;
}

int gw_hdrs_copy(struct gw_hdrs *dst, const struct gw_hdrs *src)
{
	gw_hdrs_init(dst);
	for (size_t i = 0; i < src->n; i++) {
		int rc = gw_hdrs_add(dst, src->v[i].name, src->v[i].nlen, src->v[i].value,
				     src->v[i].vlen);

		if (rc != 0) {
			gw_hdrs_clear(dst);
			return rc;
		}
	}
	return 0;
}

/* ---- matching ------------------------------------------------------------ */

/* How specific a matching destination is; compared field by field. */
struct spec {
	int exact;              /* exact host over wildcard */
	size_t host_len;        /* a longer wildcard suffix is narrower */
	int port;               /* an explicit port over the default pair */
	size_t path_len;        /* a longer path pattern is narrower */
};

static int spec_cmp(const struct spec *a, const struct spec *b)
{
	if (a->exact != b->exact)
		return a->exact - b->exact;
	if (a->host_len != b->host_len)
		return a->host_len < b->host_len ? -1 : 1;
	if (a->port != b->port)
		return a->port - b->port;
	if (a->path_len != b->path_len)
		return a->path_len < b->path_len ? -1 : 1;
	return 0;
}

static bool path_matches(const char *pat, const char *path)
{
	size_t pl, n;

	if (pat == NULL || *pat == '\0')
		return true;
	if (strncmp(pat, "/*", 2) == 0) {
		const char *suffix = pat + 2;   /* Box: a plain ends_with */

		n = strlen(path), pl = strlen(suffix);
		return n >= pl && memcmp(path + n - pl, suffix, pl) == 0;
	}
	pl = strlen(pat);
	if (strncmp(path, pat, pl) != 0)
		return false;
	return pat[pl - 1] == '/' || path[pl] == '\0' || path[pl] == '/';
}

static bool dest_matches(const struct box_dest *d, const char *host, size_t hl, unsigned port,
			 const char *path, struct spec *sp)
{
	size_t dl = strlen(d->host);

	if (d->wildcard) {
		const char *suffix = d->host + 1;       /* ".example.com" */
		size_t sl = dl - 1;

		if (hl <= sl || strncasecmp(host + hl - sl, suffix, sl) != 0)
			return false;
	} else if (hl != dl || strncasecmp(host, d->host, hl) != 0) {
		return false;
	}
	if (d->port != 0 ? port != d->port : (port != 443 && port != 80))
		return false;
	if (!path_matches(d->path, path))
		return false;
	sp->exact = !d->wildcard;
	sp->host_len = dl;
	sp->port = d->port != 0;
	sp->path_len = d->path ? strlen(d->path) : 0;
	return true;
}

static bool route_match(const struct route *r, const char *host, unsigned port, const char *path,
			struct spec *best)
{
	size_t hl;
	bool any = false;

	if (host == NULL)
		return false;
	hl = strlen(host);
	if (hl > 0 && host[hl - 1] == '.')
		hl--;
	if (path == NULL || *path == '\0')
		path = "/";
	for (size_t i = 0; i < r->dests->n; i++) {
		struct spec sp;

		if (dest_matches(&r->dests->v[i], host, hl, port, path, &sp) &&
		    (!any || spec_cmp(&sp, best) > 0)) {
			*best = sp;
			any = true;
		}
	}
	return any;
}

bool gw_cred_route_matches(const struct gw_cred_table *t, size_t i, const char *host,
			   unsigned port, const char *path)
{
	struct spec sp;

	return i < t->n && route_match(&t->v[i], host, port, path, &sp);
}

long gw_cred_route_for(const struct gw_cred_table *t, const char *host, unsigned port,
		       const char *path)
{
	long best = -1;
	bool best_signed = false;
	struct spec bs = { 0 };

	for (size_t i = 0; i < t->n; i++) {
		struct spec sp;
		bool sg = route_signed(&t->v[i]);

		if (!route_match(&t->v[i], host, port, path, &sp))
			continue;
		if (best < 0 || (sg && !best_signed) || (sg == best_signed && spec_cmp(&sp, &bs) > 0)) {
			best = (long)i, best_signed = sg, bs = sp;
		}
	}
	return best;
}

/* The path as http:request sees it (docs/egress.md "Decisions, in Box's
 * order"; http.h's gw_path_canonical):
 * routes match on this form, so "/v1/../admin" is not under a "/v1" route.
 * NULL with errno ENOMEM, or EINVAL for a path the HTTP layer refuses. */
static char *canonical_path(const char *wire)
{
	struct gw_str w;
	size_t n;
	char *out;

	if (wire == NULL || *wire == '\0')
		wire = "/";
	w.p = wire;
	w.n = strlen(wire);
	if ((out = malloc(GW_PATH_CANON_MAX(w.n))) == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (gw_path_canonical(w, out, GW_PATH_CANON_MAX(w.n), &n) != 0) {
		free(out);
		errno = EINVAL;
		return NULL;
	}
	return out;
}

/* ---- scoping ------------------------------------------------------------- */

int gw_cred_scope_new(const struct gw_cred_table *t, const struct box_process *proc,
		      unsigned char **out, char *err, size_t errlen)
{
	unsigned char *f;

	if (proc == NULL || !proc->has_egress_routes) {
		*out = NULL;
		return 0;
	}
	if ((f = calloc(t->n ? t->n : 1, 1)) == NULL)
		return gw_fail(err, errlen, -ENOMEM, "out of memory");
	for (size_t k = 0; k < proc->egress_routes.n; k++) {
		const char *name = proc->egress_routes.v[k];
		bool found = false;

		for (size_t i = 0; i < t->n; i++)
			if (t->v[i].egress && strcmp(t->v[i].name, name) == 0)
				f[i] = 1, found = true;
		if (!found) {
			free(f);
			return gw_fail(err, errlen, -EINVAL, "egress route \"%s\" is not declared", name);
		}
	}
	*out = f;
	return 0;
}

int gw_cred_scope_agent(const struct gw_cred_table *t, const struct box_config *cfg,
			unsigned char **out, char *err, size_t errlen)
{
	unsigned char *f = NULL;

	*out = NULL;
	for (size_t j = 0; cfg != NULL && j < cfg->n_tools; j++) {
		const struct box_process *tp = &cfg->tools[j].proc;

		for (size_t k = 0; tp->has_egress_routes && k < tp->egress_routes.n; k++)
			for (size_t i = 0; i < t->n; i++) {
				if (!t->v[i].egress || strcmp(t->v[i].name, tp->egress_routes.v[k]) != 0)
					continue;
				if (f == NULL) {
					if ((f = malloc(t->n)) == NULL)
						return gw_fail(err, errlen, -ENOMEM, "out of memory");
					memset(f, 1, t->n);
				}
				f[i] = 0;       /* the tool's alone */
			}
	}
	*out = f;
	return 0;
}

static bool in_scope(const unsigned char *scope, size_t i)
{
	return scope == NULL || scope[i];
}

/* Does text[0, n), or its form-decoded reading, hold phantom? */
static int holds(const char *text, size_t n, const char *phantom, bool *found)
{
	struct gw_sb d = { 0 };

	*found = memmem(text, n, phantom, strlen(phantom)) != NULL;
	if (*found || memchr(text, '%', n) == NULL)
		return 0;
	gw_sb_pct_decode(&d, text, n, true);
	if (d.oom) {
		gw_sb_free(&d);
		return -ENOMEM;
	}
	*found = d.p != NULL && memmem(d.p, d.len, phantom, strlen(phantom)) != NULL;
	gw_sb_free(&d);
	return 0;
}

/* The phantom of a route outside the sandbox's scope, anywhere in the
 * request head: header values (and the base64 payload of a Basic value),
 * the path and the query, raw and percent-decoded.  Returns its route or -1;
 * -ENOMEM as a negative below -1. */
/* Route i's phantom is also an in-scope route's (routes reading one
 * variable share it): not foreign. */
static bool shared_in_scope(const struct gw_cred_table *t, const unsigned char *scope, size_t i)
{
	for (size_t k = 0; k < t->n; k++)
		if (k != i && in_scope(scope, k) && strcmp(t->v[k].phantom, t->v[i].phantom) == 0)
			return true;
	return false;
}

static long foreign_phantom(const struct gw_cred_table *t, const struct gw_cred_req *req)
{
	const char *path = req->path ? req->path : "", *query = req->query ? req->query : "";

	if (req->scope == NULL)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		const char *ph = t->v[i].phantom;
		bool found = false;

		if (in_scope(req->scope, i) || ph[0] == '\0' || shared_in_scope(t, req->scope, i))
			continue;
		if (holds(path, strlen(path), ph, &found) != 0 ||
		    (!found && holds(query, strlen(query), ph, &found) != 0))
			return -ENOMEM;
		for (size_t k = 0; !found && k < req->hdrs->n; k++) {
			const struct gw_hdr *f = &req->hdrs->v[k];
			const char *v = f->value;
			size_t vn = f->vlen;

			found = memmem(v, vn, ph, strlen(ph)) != NULL;
			trim(&v, &vn);
			if (!found && vn > 6 && strncasecmp(v, "Basic ", 6) == 0) {
				struct gw_sb d = { 0 };
				const char *b = v + 6;
				size_t bn = vn - 6;

				trim(&b, &bn);
				if (buf_b64_decode(&d, b, bn) && d.p != NULL)
					found = memmem(d.p, d.len, ph, strlen(ph)) != NULL;
				if (d.oom) {
					gw_sb_free(&d);
					return -ENOMEM;
				}
				gw_sb_free(&d);
			}
		}
		if (found)
			return (long)i;
	}
	return -1;
}

/* ---- injection ------------------------------------------------------------ */

void gw_cred_result_clear(struct gw_cred_result *r)
{
	if (r == NULL)
		return;
	gw_cred_wipe_free(r->query);
	memset(r, 0, sizeof *r);
	r->route = -1;
}

enum seen { SEEN_NONE, SEEN_MATCH, SEEN_OTHER };

static const char *seen_why(enum seen s)
{
	return s == SEEN_NONE ? "carries no placeholder" : "carries a value other than its placeholder";
}

/* Header placement: every field of the slot must be prefix + phantom. */
static enum seen observe_header(const struct gw_hdrs *h, const char *name, const char *prefix,
				const char *phantom)
{
	size_t pl = strlen(prefix);
	enum seen s = SEEN_NONE;

	for (long i = gw_hdrs_find(h, name, 0); i >= 0; i = gw_hdrs_find(h, name, (size_t)i + 1)) {
		const char *v = h->v[i].value;
		size_t n = h->v[i].vlen;

		trim(&v, &n);
		/* An auth scheme is case-insensitive (RFC 9110 11.1). */
		if (n < pl || strncasecmp(v, prefix, pl) != 0)
			return SEEN_OTHER;
		v += pl, n -= pl;
		trim(&v, &n);
		if (n != strlen(phantom) || memcmp(v, phantom, n) != 0)
			return SEEN_OTHER;
		s = SEEN_MATCH;
	}
	return s;
}

/* Basic placement: base64(any ":" phantom) in every field of the slot. */
static int observe_basic(const struct gw_hdrs *h, const char *name, const char *phantom,
			 enum seen *out)
{
	*out = SEEN_NONE;
	for (long i = gw_hdrs_find(h, name, 0); i >= 0; i = gw_hdrs_find(h, name, (size_t)i + 1)) {
		const char *v = h->v[i].value, *colon;
		size_t n = h->v[i].vlen;
		struct gw_sb d = { 0 };
		bool ok;

		trim(&v, &n);
		if (n < 6 || strncasecmp(v, "Basic ", 6) != 0) {
			*out = SEEN_OTHER;
			return 0;
		}
		v += 6, n -= 6;
		trim(&v, &n);
		ok = buf_b64_decode(&d, v, n) && d.p != NULL &&
		     (colon = memchr(d.p, ':', d.len)) != NULL &&
		     (size_t)(d.p + d.len - colon - 1) == strlen(phantom) &&
		     memcmp(colon + 1, phantom, strlen(phantom)) == 0;
		if (d.oom) {
			gw_sb_free(&d);
			return -ENOMEM;
		}
		gw_sb_free(&d);
		if (!ok) {
			*out = SEEN_OTHER;
			return 0;
		}
		*out = SEEN_MATCH;
	}
	return 0;
}

/* Query placement: strip every param (keys form-decoded) into *rest and
 * say what they held; the caller appends the secret. */
static int query_strip(const char *query, const char *param, const char *phantom,
		       enum seen *seen, struct gw_sb *rest)
{
	size_t len = strlen(query);

	*seen = SEEN_NONE;
	for (const char *s = query; s < query + len;) {
		const char *e = memchr(s, '&', (size_t)(query + len - s));
		size_t pn = e ? (size_t)(e - s) : (size_t)(query + len - s);
		const char *eq = memchr(s, '=', pn);
		size_t kn = eq ? (size_t)(eq - s) : pn;
		struct gw_sb k = { 0 }, v = { 0 };
		bool is_param;

		gw_sb_pct_decode(&k, s, kn, true);
		if (eq != NULL)
			gw_sb_pct_decode(&v, eq + 1, pn - kn - 1, true);
		if (k.oom || v.oom) {
			gw_sb_free(&k);
			gw_sb_free(&v);
			return -ENOMEM;
		}
		is_param = pn > 0 && k.len == strlen(param) && memcmp(k.p, param, k.len) == 0;
		if (is_param && phantom != NULL) {
			bool match = v.len == strlen(phantom) && v.p != NULL &&
				     memcmp(v.p, phantom, v.len) == 0;

			if (!match)
				*seen = SEEN_OTHER;
			else if (*seen == SEEN_NONE)
				*seen = SEEN_MATCH;
		}
		gw_sb_free(&k);
		gw_sb_free(&v);
		if (!is_param && pn > 0) {
			if (rest->len > 0)
				gw_sb_addn(rest, "&", 1);
			gw_sb_addn(rest, s, pn);
		}
		s += pn + (e != NULL);
	}
	return rest->oom ? -ENOMEM : 0;
}

static int apply_env(const struct route *r, const struct gw_cred_req *req, struct gw_hdrs *h,
		     struct gw_cred_result *res, char *err, size_t errlen)
{
	const struct box_secret *sec = r->sec;
	enum seen seen = SEEN_NONE;
	struct gw_sb val = { 0 }, q = { 0 };
	int rc;

	if (r->secret == NULL)
		return gw_fail(err, errlen, -EINVAL, "route %s has no resolved secret", r->name);
	switch (sec->placement) {
	case BOX_PLACE_HEADER:
		seen = observe_header(h, sec->header, sec->prefix ? sec->prefix : "", r->phantom);
		gw_sb_add(&val, sec->prefix ? sec->prefix : "");
		gw_sb_add(&val, r->secret);
		break;
	case BOX_PLACE_BASIC_AUTH:
		if ((rc = observe_basic(h, sec->header, r->phantom, &seen)) != 0)
			return gw_fail(err, errlen, rc, "out of memory");
		gw_sb_add(&val, "Basic ");
		buf_b64_encode(&val, (const unsigned char *)r->secret, strlen(r->secret));
		break;
	case BOX_PLACE_QUERY_PARAM:
		if ((rc = query_strip(req->query ? req->query : "", sec->param, r->phantom, &seen,
				      &q)) != 0) {
			gw_sb_free(&q);
			return gw_fail(err, errlen, rc, "out of memory");
		}
		if (q.len > 0)
			gw_sb_addn(&q, "&", 1);
		gw_sb_pct_encode(&q, sec->param, strlen(sec->param), false);
		gw_sb_addn(&q, "=", 1);
		gw_sb_pct_encode(&q, r->secret, strlen(r->secret), false);
		break;
	default:
		return gw_fail(err, errlen, -EINVAL, "route %s: unknown placement", r->name);
	}
	if (seen != SEEN_MATCH) {
		if (sec->inject != BOX_INJECT_ALWAYS) {
			gw_sb_free(&val);
			gw_sb_free(&q);
			return gw_fail(err, errlen, -EACCES,
				    "egress route %s: the request %s %s%s; refusing to attach the secret",
				    r->name, seen_why(seen),
				    sec->placement == BOX_PLACE_QUERY_PARAM ? "in query parameter "
									   : "in header ",
				    sec->placement == BOX_PLACE_QUERY_PARAM ? sec->param : sec->header);
		}
		res->advisory = true;
	}
	rc = 0;
	if (sec->placement == BOX_PLACE_QUERY_PARAM) {
		if ((res->query = gw_sb_take(&q)) == NULL)
			rc = -ENOMEM;
	} else if (val.oom) {
		rc = -ENOMEM;
	} else {
		rc = gw_hdrs_set(h, sec->header, val.p);
	}
	gw_sb_free(&val);
	gw_sb_free(&q);
	if (rc != 0)
		return gw_fail(err, errlen, rc, "route %s: cannot set the credential", r->name);
	res->scrub = true;
	return 0;
}

/* The signing artefacts a workload may have sent (signed with its
 * placeholder keys): gone before we sign, whatever their case. */
static const char *const aws_strip_headers[] = {
	"authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256",
	"x-amz-signature", NULL,
};

/* A presigned-URL form made with the placeholder keys. */
static bool aws_presign_param(const char *k, size_t n)
{
	static const char *const names[] = {
		"X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires",
		"X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token", NULL,
	};

	for (size_t i = 0; names[i] != NULL; i++)
		if (ieq_n(k, n, names[i]))
			return true;
	return false;
}

/* The query without presign parameters; *changed when any was dropped. */
static char *aws_query(const char *query, bool *changed)
{
	struct gw_sb out = { 0 };
	size_t len = strlen(query);

	*changed = false;
	gw_sb_add(&out, "");
	for (const char *s = query; s < query + len;) {
		const char *e = memchr(s, '&', (size_t)(query + len - s));
		size_t pn = e ? (size_t)(e - s) : (size_t)(query + len - s);
		const char *eq = memchr(s, '=', pn);
		struct gw_sb k = { 0 };
		bool drop;

		gw_sb_pct_decode(&k, s, eq ? (size_t)(eq - s) : pn, true);
		drop = pn > 0 && k.p != NULL && aws_presign_param(k.p, k.len);
		gw_sb_free(&k);
		if (drop) {
			*changed = true;
		} else if (pn > 0) {
			if (out.len > 0)
				gw_sb_addn(&out, "&", 1);
			gw_sb_addn(&out, s, pn);
		}
		s += pn + (e != NULL);
	}
	return gw_sb_take(&out);
}

static int apply_aws(const struct route *r, const struct gw_cred_req *req, struct gw_hdrs *h,
		     struct gw_cred_result *res, char *err, size_t errlen)
{
	char *service = NULL, *region = NULL, *query = NULL, date[17];
	const char *declared = gw_hdrs_get(h, "x-amz-content-sha256"), *payload = req->payload_hash;
	bool s3, query_changed = false, token;
	struct gw_sigv4_out sig = { 0 };
	struct gw_sigv4_req sr;
	int rc;

	if (strlen(req->host) > 253)
		return gw_fail(err, errlen, -EINVAL, "egress route %s: host name too long", r->name);
	if (gw_sigv4_service_region(req->host, &service, &region) != 0)
		return gw_fail(err, errlen, -EACCES,
			    "egress route %s: cannot derive an AWS service and region from host %s; "
			    "refusing to sign with a guessed scope", r->name, req->host);
	s3 = strcmp(service, "s3") == 0;
	if (declared != NULL && strncmp(declared, "STREAMING-", 10) == 0 &&
	    strcmp(declared, GW_SIGV4_STREAMING_UNSIGNED_TRAILER) != 0) {
		rc = gw_fail(err, errlen, -EACCES,
			  "egress route %s: the client streams a chunk-signed body (%s); its chunk "
			  "signatures chain on a signature the gateway replaces, so it cannot be "
			  "re-signed (configure the client for unsigned payloads)", r->name, declared);
		goto out;
	}
	if (s3 && declared != NULL && strcmp(declared, GW_SIGV4_STREAMING_UNSIGNED_TRAILER) == 0)
		payload = GW_SIGV4_STREAMING_UNSIGNED_TRAILER;
	else if (payload == NULL && s3)
		payload = GW_SIGV4_UNSIGNED_PAYLOAD;
	if (payload == NULL) {
		rc = gw_fail(err, errlen, -EINVAL,
			  "egress route %s: service %s needs the SHA-256 of the body to sign "
			  "(only s3 takes UNSIGNED-PAYLOAD)", r->name, service);
		goto out;
	}
	if (req->key_id == NULL || req->secret_key == NULL) {
		rc = gw_fail(err, errlen, -EINVAL, "egress route %s: no AWS credentials to sign with",
			  r->name);
		goto out;
	}
	if ((rc = gw_sigv4_amz_date(req->now, date)) != 0) {
		rc = gw_fail(err, errlen, rc, "egress route %s: the clock gives no signing date",
			  r->name);
		goto out;
	}
	if ((query = aws_query(req->query ? req->query : "", &query_changed)) == NULL) {
		rc = gw_fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}

	/* Strip, then set: what is signed is exactly what is sent. */
	for (size_t i = 0; aws_strip_headers[i] != NULL; i++)
		gw_hdrs_remove(h, aws_strip_headers[i]);
	token = req->session_token != NULL && req->session_token[0] != '\0';
	rc = gw_hdrs_set(h, "accept-encoding", "identity");
	if (rc == 0 && gw_hdrs_get(h, "host") == NULL) {
		char hostv[300];

		snprintf(hostv, sizeof hostv, req->port == 443 ? "%s" : "%s:%u", req->host, req->port);
		rc = gw_hdrs_set(h, "Host", hostv);
	}
	if (rc == 0)
		rc = gw_hdrs_set(h, "X-Amz-Date", date);
	if (rc == 0 && token)
		rc = gw_hdrs_set(h, "X-Amz-Security-Token", req->session_token);
	if (rc == 0 && s3)
		rc = gw_hdrs_set(h, "X-Amz-Content-Sha256", payload);
	if (rc != 0) {
		rc = gw_fail(err, errlen, rc, "egress route %s: cannot set the signing headers",
			  r->name);
		goto out;
	}
	sr = (struct gw_sigv4_req){
		.method = req->method, .path = req->path, .query = query, .hdrs = h,
		.payload_hash = payload, .service = service, .region = region, .amz_date = date,
		.key_id = req->key_id, .secret_key = req->secret_key,
	};
	if ((rc = gw_sigv4_sign(&sr, &sig)) != 0) {
		rc = gw_fail(err, errlen, rc == -EINVAL ? -EACCES : rc,
			  "egress route %s: the request cannot be signed (%s)", r->name,
			  rc == -EINVAL ? "malformed method, path, query or headers" : "internal error");
		goto out;
	}
	if ((rc = gw_hdrs_set(h, "Authorization", sig.authorization)) != 0) {
		rc = gw_fail(err, errlen, rc, "out of memory");
		goto out;
	}
	if (query_changed) {
		res->query = query;
		query = NULL;
	}
	res->signed_aws = true;
	rc = 0;
out:
	gw_sigv4_out_clear(&sig);
	gw_cred_wipe_free(query);
	free(service);
	free(region);
	return rc;
}

int gw_cred_apply(const struct gw_cred_table *t, const struct gw_cred_req *req,
		  struct gw_cred_result *out, char *err, size_t errlen)
{
	struct gw_cred_result res = { .route = -1 };
	struct gw_hdrs work;
	const struct route *r;
	long route, foreign;
	char *cpath;
	int rc;

	memset(out, 0, sizeof *out);
	out->route = -1;
	if (t == NULL || req == NULL || req->hdrs == NULL || req->host == NULL)
		return gw_fail(err, errlen, -EINVAL, "credential injection without a request");
	if ((foreign = foreign_phantom(t, req)) < -1)
		return gw_fail(err, errlen, -ENOMEM, "out of memory");
	if (foreign >= 0)
		return gw_fail(err, errlen, -EACCES,
			    "the request carries the placeholder of egress route %s, which this "
			    "sandbox does not receive", t->v[foreign].name);
	if ((cpath = canonical_path(req->path)) == NULL)
		return errno == ENOMEM ? gw_fail(err, errlen, -ENOMEM, "out of memory")
				       : gw_fail(err, errlen, -EACCES, "request path refused: it has "
						"an invalid or NUL escape");
	route = gw_cred_route_for(t, req->host, req->port, cpath);
	free(cpath);
	if (route < 0 || !in_scope(req->scope, (size_t)route))
		return 1;
	out->route = res.route = route;
	r = &t->v[route];
	if (!req->tls)
		return gw_fail(err, errlen, -EACCES,
			    "egress route %s: credentials are attached over TLS only; this request "
			    "is plain HTTP", r->name);
	if ((rc = gw_hdrs_copy(&work, req->hdrs)) != 0)
		return gw_fail(err, errlen, rc, "out of memory");
	if (route_signed(r)) {
		rc = apply_aws(r, req, &work, &res, err, errlen);
	} else {
		rc = apply_env(r, req, &work, &res, err, errlen);
		if (rc == 0 && (rc = gw_hdrs_set(&work, "accept-encoding", "identity")) != 0)
			rc = gw_fail(err, errlen, rc, "out of memory");
	}
	if (rc != 0) {
		gw_hdrs_clear(&work);
		gw_cred_wipe_free(res.query);
		return rc;
	}
	gw_hdrs_clear(req->hdrs);
	*req->hdrs = work;
	*out = res;
	return 0;
}

/* ---- AWS profiles ---------------------------------------------------------- */

#define PROFILE_FILE_MAX ((size_t)1 << 20)

/* The settings we read; everything else in a profile is ignored. */
enum pkey {
	PK_KEY_ID, PK_SECRET, PK_TOKEN, PK_PROCESS, PK_SSO_SESSION, PK_SSO_START_URL,
	PK_ROLE_ARN, PK_SOURCE_PROFILE, PK_WEB_IDENTITY, PK_N
};

static const char *const pkey_names[PK_N] = {
	"aws_access_key_id", "aws_secret_access_key", "aws_session_token", "credential_process",
	"sso_session", "sso_start_url", "role_arn", "source_profile", "web_identity_token_file",
};

struct pval {
	const char *p;          /* into a file buffer */
	size_t n;
	bool set;
};

/* The whole file, NUL-terminated, in *out (*cap bytes allocated, for the
 * wipe); -ENOENT when absent.  A file growing while we read is cut at the
 * size fstat gave. */
static int read_small_file(const char *path, char **out, size_t *len, size_t *cap, char *err,
			   size_t errlen)
{
	struct stat st;
	char *b;
	size_t n = 0, size;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return -ENOENT;
		return gw_fail(err, errlen, -EIO, "cannot open %s: %s", path, strerror(errno));
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return gw_fail(err, errlen, -EIO, "%s is not a regular file", path);
	}
	if (st.st_size < 0 || (uint64_t)st.st_size > PROFILE_FILE_MAX) {
		close(fd);
		return gw_fail(err, errlen, -EFBIG, "%s is larger than 1 MiB", path);
	}
	size = (size_t)st.st_size;
	if ((b = malloc(size + 1)) == NULL) {
		close(fd);
		return gw_fail(err, errlen, -ENOMEM, "out of memory");
	}
	while (n < size) {
		ssize_t r = read(fd, b + n, size - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;

			close(fd);
			wipe_free_n(b, size + 1);
			return gw_fail(err, errlen, -EIO, "cannot read %s: %s", path, strerror(e));
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	b[n] = '\0';
	*out = b, *len = n, *cap = size + 1;
	return 0;
}

/* "[ profile   x ]" -> "profile x"; compare with want. */
static bool section_is(const char *s, size_t n, const char *want)
{
	trim(&s, &n);
	if (n > 8 && strncmp(s, "profile", 7) == 0 && (s[7] == ' ' || s[7] == '\t')) {
		const char *rest = s + 7;
		size_t rn = n - 7;

		trim(&rest, &rn);
		return strncmp(want, "profile ", 8) == 0 && rn == strlen(want + 8) &&
		       memcmp(rest, want + 8, rn) == 0;
	}
	return n == strlen(want) && memcmp(s, want, n) == 0;
}

/* Settings of section want in text (merged when it appears twice, later
 * lines winning).  Indented lines under a key with an empty value are a
 * nested sub-section (the `s3 =` form) and are skipped, so a nested
 * setting cannot pass for the profile's own. */
static bool parse_section(const char *text, size_t len, const char *want, struct pval *v)
{
	bool inside = false, nested = false, found = false;

	for (const char *s = text; s < text + len;) {
		const char *e = memchr(s, '\n', (size_t)(text + len - s));
		size_t n = e ? (size_t)(e - s) : (size_t)(text + len - s);
		const char *line = s, *t = s, *eq;
		size_t tn = n;
		bool indented;

		s += n + (e != NULL);
		if (n > 0 && line[n - 1] == '\r')
			n--, tn--;
		indented = n > 0 && (line[0] == ' ' || line[0] == '\t');
		trim(&t, &tn);
		if (tn == 0 || t[0] == '#' || t[0] == ';')
			continue;
		if (t[0] == '[') {
			const char *close = memrchr(t, ']', tn);

			inside = close != NULL && section_is(t + 1, (size_t)(close - t - 1), want);
			found |= inside;
			nested = false;
			continue;
		}
		if (!inside)
			continue;
		if (indented && nested)
			continue;
		if ((eq = memchr(t, '=', tn)) == NULL)
			continue;
		{
			const char *k = t, *val = eq + 1;
			size_t kn = (size_t)(eq - t), vn = (size_t)(t + tn - val);

			trim(&k, &kn);
			trim(&val, &vn);
			nested = !indented && vn == 0;
			for (int i = 0; i < PK_N; i++)
				if (ieq_n(k, kn, pkey_names[i]))
					v[i] = (struct pval){ val, vn, true };
		}
	}
	return found;
}

static bool cred_text_ok(const char *s, size_t n, size_t max)
{
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

int gw_cred_aws_profile_files(const char *credentials_path, const char *config_path,
			      const char *profile, char **key_id, char **secret, char **token,
			      char *err, size_t errlen)
{
	const char *paths[2] = { config_path, credentials_path };
	char *text[2] = { NULL, NULL }, *want = NULL, *k = NULL, *s = NULL, *tk = NULL;
	size_t tlen[2] = { 0, 0 }, tcap[2] = { 0, 0 };
	struct pval v[PK_N] = { 0 };
	bool found = false;
	int rc = 0;

	if (profile == NULL || *profile == '\0' || strlen(profile) > 128 ||
	    strpbrk(profile, "[]\r\n") != NULL)
		return gw_fail(err, errlen, -EINVAL, "AWS profile name \"%s\" is not valid",
			    profile ? profile : "");
	/* config first, credentials over it: the credentials file wins. */
	for (int f = 0; f < 2; f++) {
		struct pval fv[PK_N] = { 0 };
		bool here;

		if (paths[f] == NULL)
			continue;
		rc = read_small_file(paths[f], &text[f], &tlen[f], &tcap[f], err, errlen);
		if (rc == -ENOENT) {
			rc = 0;
			continue;
		}
		if (rc != 0)
			goto out;
		if (f == 0) {
			if (asprintf(&want, "profile %s", profile) < 0) {
				want = NULL;
				rc = gw_fail(err, errlen, -ENOMEM, "out of memory");
				goto out;
			}
			here = parse_section(text[f], tlen[f], want, fv) ||
			       parse_section(text[f], tlen[f], profile, fv);
		} else {
			here = parse_section(text[f], tlen[f], profile, fv);
		}
		found |= here;
		for (int i = 0; i < PK_N; i++)
			if (fv[i].set)
				v[i] = fv[i];
	}
	if (!found) {
		rc = gw_fail(err, errlen, -ENOENT, "AWS profile \"%s\" is not declared in %s or %s",
			  profile, config_path ? config_path : "(no config)",
			  credentials_path ? credentials_path : "(no credentials)");
		goto out;
	}
	if (v[PK_PROCESS].set) {
		rc = gw_fail(err, errlen, -EACCES,
			  "AWS profile \"%s\" uses credential_process, which cairn does not run: it "
			  "would execute a program named by an operator file, outside containment. Use "
			  "a profile with static keys", profile);
		goto out;
	}
	for (int i = PK_SSO_SESSION; i <= PK_WEB_IDENTITY; i++)
		if (v[i].set) {
			rc = gw_fail(err, errlen, -EACCES,
				  "AWS profile \"%s\" declares %s, so it names an identity cairn "
				  "cannot assume without an STS or SSO call; its static keys (if any) "
				  "are not that identity and are not used", profile, pkey_names[i]);
			goto out;
		}
	if (!v[PK_KEY_ID].set) {
		rc = gw_fail(err, errlen, -EINVAL,
			  "AWS profile \"%s\" declares no static keys and no identity cairn can "
			  "resolve", profile);
		goto out;
	}
	if (!v[PK_SECRET].set) {
		rc = gw_fail(err, errlen, -EINVAL,
			  "AWS profile \"%s\" declares aws_access_key_id but not aws_secret_access_key",
			  profile);
		goto out;
	}
	if (!cred_text_ok(v[PK_KEY_ID].p, v[PK_KEY_ID].n, 128) ||
	    !cred_text_ok(v[PK_SECRET].p, v[PK_SECRET].n, 1024) ||
	    (v[PK_TOKEN].set && v[PK_TOKEN].n > 0 &&
	     !cred_text_ok(v[PK_TOKEN].p, v[PK_TOKEN].n, 16384))) {
		rc = gw_fail(err, errlen, -EINVAL,
			  "AWS profile \"%s\" has a malformed key (empty, too long, or holding "
			  "spaces or control characters)", profile);
		goto out;
	}
	k = dupn(v[PK_KEY_ID].p, v[PK_KEY_ID].n);
	s = dupn(v[PK_SECRET].p, v[PK_SECRET].n);
	if (v[PK_TOKEN].set && v[PK_TOKEN].n > 0)
		tk = dupn(v[PK_TOKEN].p, v[PK_TOKEN].n);
	if (k == NULL || s == NULL || (v[PK_TOKEN].set && v[PK_TOKEN].n > 0 && tk == NULL)) {
		gw_cred_wipe_free(k);
		gw_cred_wipe_free(s);
		gw_cred_wipe_free(tk);
		rc = gw_fail(err, errlen, -ENOMEM, "out of memory");
		goto out;
	}
	*key_id = k, *secret = s, *token = tk;
	rc = 0;
out:
	for (int f = 0; f < 2; f++)
		wipe_free_n(text[f], tcap[f]);
	free(want);
	return rc;
}

int gw_cred_aws_profile(const char *home, const char *profile, char **key_id, char **secret,
			char **token, char *err, size_t errlen)
{
	char *cp = NULL, *fp = NULL;
	int rc;

	if (home == NULL || *home == '\0')
		return gw_fail(err, errlen, -EINVAL,
			    "cannot locate the AWS configuration: no home directory");
	if (asprintf(&cp, "%s/.aws/credentials", home) < 0)
		return gw_fail(err, errlen, -ENOMEM, "out of memory");
	if (asprintf(&fp, "%s/.aws/config", home) < 0) {
		free(cp);
		return gw_fail(err, errlen, -ENOMEM, "out of memory");
	}
	rc = gw_cred_aws_profile_files(cp, fp, profile, key_id, secret, token, err, errlen);
	free(cp);
	free(fp);
	return rc;
}

/* ---- scrubbing -------------------------------------------------------------
 *
 * A window buf[0, len) of at most cap bytes.  A position is decided once
 * the longest needle fits after it (or at the end of the stream): the
 * longest needle matching there is replaced, otherwise the byte passes.
 * Undecided bytes - fewer than the longest needle - stay in the window. */

#define SCRUB_WINDOW 8192

struct gw_scrub {
	char *needle[GW_SCRUB_NEEDLES];
	size_t nlen[GW_SCRUB_NEEDLES];
	size_t n, maxlen;
	char *buf;
	size_t len, cap;
	uint64_t count;
};

int gw_scrub_new(const char *const *needles, size_t n, struct gw_scrub **out)
{
	struct gw_scrub *s;

	if (needles == NULL || n == 0 || n > GW_SCRUB_NEEDLES)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (needles[i] == NULL || needles[i][0] == '\0' || strlen(needles[i]) > 65536)
			return -EINVAL;
	if ((s = calloc(1, sizeof *s)) == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if ((s->needle[i] = strdup(needles[i])) == NULL) {
			gw_scrub_free(s);
			return -ENOMEM;
		}
		s->nlen[i] = strlen(needles[i]);
		s->n++;
		if (s->nlen[i] > s->maxlen)
			s->maxlen = s->nlen[i];
	}
	s->cap = s->maxlen * 2 > SCRUB_WINDOW ? s->maxlen * 2 : SCRUB_WINDOW;
	if ((s->buf = malloc(s->cap)) == NULL) {
		gw_scrub_free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void gw_scrub_free(struct gw_scrub *s)
{
	if (s == NULL)
		return;
	for (size_t i = 0; i < s->n; i++)
		gw_cred_wipe_free(s->needle[i]);
	wipe_free_n(s->buf, s->cap);
	free(s);
}

void gw_scrub_reset(struct gw_scrub *s)
{
	OPENSSL_cleanse(s->buf, s->len);
	s->len = 0;
}

uint64_t gw_scrub_count(const struct gw_scrub *s)
{
	return s->count;
}

/* Length of the longest needle matching at p (avail bytes), or 0. */
static size_t match_at(const struct gw_scrub *s, const char *p, size_t avail)
{
	size_t best = 0;

	for (size_t i = 0; i < s->n; i++)
		if (s->nlen[i] > best && s->nlen[i] <= avail && p[0] == s->needle[i][0] &&
		    memcmp(p, s->needle[i], s->nlen[i]) == 0)
			best = s->nlen[i];
	return best;
}

/* Decide what can be decided in p[0, n): every position when at_end,
 * else those the longest needle fits after.  Emits the decided bytes and
 * returns how many were consumed in *used. */
static int scrub_span(struct gw_scrub *s, const char *p, size_t n, bool at_end,
		      gw_scrub_emit_fn emit, void *ctx, size_t *used)
{
	size_t i = 0, run = 0;
	int rc;

	*used = 0;
	while (i < n) {
		size_t m;

		if (!at_end && n - i < s->maxlen)
			break;
		if ((m = match_at(s, p + i, n - i)) == 0) {
			i++;
			continue;
		}
		if (i > run && (rc = emit(ctx, p + run, i - run)) != 0)
			return rc;
		if ((rc = emit(ctx, GW_REDACTED, sizeof GW_REDACTED - 1)) != 0)
			return rc;
		s->count++;
		i += m;
		run = i;
	}
	if (i > run && (rc = emit(ctx, p + run, i - run)) != 0)
		return rc;
	*used = i;
	return 0;
}

/* The same over the window; undecided bytes move to its front. */
static int scrub_run(struct gw_scrub *s, gw_scrub_emit_fn emit, void *ctx, bool at_end)
{
	size_t i;
	int rc = scrub_span(s, s->buf, s->len, at_end, emit, ctx, &i);

	if (rc != 0)
		return rc;
	memmove(s->buf, s->buf + i, s->len - i);
	OPENSSL_cleanse(s->buf + (s->len - i), i);
	s->len -= i;
	return 0;
}

int gw_scrub_feed(struct gw_scrub *s, const void *p, size_t n, gw_scrub_emit_fn emit, void *ctx)
{
	const char *in = p;
	int rc;

	while (n > 0) {
		size_t k = s->cap - s->len < n ? s->cap - s->len : n;

		memcpy(s->buf + s->len, in, k);
		s->len += k, in += k, n -= k;
		if ((rc = scrub_run(s, emit, ctx, false)) != 0)
			return rc;
	}
	return 0;
}

int gw_scrub_finish(struct gw_scrub *s, gw_scrub_emit_fn emit, void *ctx)
{
	int rc = scrub_run(s, emit, ctx, true);

	gw_scrub_reset(s);
	return rc;
}

long gw_scrub_headers(struct gw_scrub *s, struct gw_hdrs *h)
{
	char **nv;
	size_t *nl;
	uint64_t before = s->count;
	long total;

	if (h->n == 0)
		return 0;
	if ((nv = calloc(h->n, sizeof *nv)) == NULL || (nl = calloc(h->n, sizeof *nl)) == NULL) {
		free(nv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < h->n; i++) {
		struct gw_sb b = { 0 };
		uint64_t c = s->count;
		size_t used;
		int rc;

		/* One value is one whole text: decided at once, outside the
		 * window, so a body stream in progress is not disturbed. */
		gw_sb_add(&b, "");
		rc = scrub_span(s, h->v[i].value, h->v[i].vlen, true, buf_emit, &b, &used);
		if (rc != 0 || b.oom) {
			gw_sb_free(&b);
			for (size_t j = 0; j < i; j++)
				wipe_free_n(nv[j], nl[j]);
			free(nv);
			free(nl);
			s->count = before;
			return -ENOMEM;
		}
		if (s->count != c) {
			nl[i] = b.len;
			nv[i] = gw_sb_take(&b);
		} else {
			gw_sb_free(&b);
		}
	}
	for (size_t i = 0; i < h->n; i++)
		if (nv[i] != NULL) {
			wipe_free_n(h->v[i].value, h->v[i].vlen);
			h->v[i].value = nv[i], h->v[i].vlen = nl[i];
		}
	free(nv);
	free(nl);
	total = (long)(s->count - before);
	return total;
}

int gw_cred_scrub_new(const struct gw_cred_table *t, size_t i, struct gw_scrub **out)
{
	const struct route *r;
	struct gw_sb enc = { 0 }, b64 = { 0 };
	const char *needles[GW_SCRUB_NEEDLES];
	size_t n = 0;
	int rc;

	if (i >= t->n || (r = &t->v[i])->secret == NULL)
		return -EINVAL;
	needles[n++] = r->secret;
	/* The forms the secret travelled in, should the upstream echo them. */
	gw_sb_pct_encode(&enc, r->secret, strlen(r->secret), false);
	if (r->sec->placement == BOX_PLACE_BASIC_AUTH)
		buf_b64_encode(&b64, (const unsigned char *)r->secret, strlen(r->secret));
	if (enc.oom || b64.oom) {
		rc = -ENOMEM;
		goto out;
	}
	if (enc.p != NULL && strcmp(enc.p, r->secret) != 0)
		needles[n++] = enc.p;
	if (b64.p != NULL)
		needles[n++] = b64.p;
	rc = gw_scrub_new(needles, n, out);
out:
	gw_sb_free(&enc);
	gw_sb_free(&b64);
	return rc;
}

bool gw_cred_response_encoding_ok(const struct gw_hdrs *h)
{
	for (long i = gw_hdrs_find(h, "content-encoding", 0); i >= 0;
	     i = gw_hdrs_find(h, "content-encoding", (size_t)i + 1)) {
		const char *v = h->v[i].value;
		size_t n = h->v[i].vlen;

		trim(&v, &n);
		if (n > 0 && !ieq_n(v, n, "identity"))
			return false;
	}
	return true;
}
