/* cred_table.c - the credential routes of a box: phantoms, the route
 * table, the secrets, and the variables every sandbox gets (cred.h).  No
 * TLS library here: the supervisor builds the table (docs/egress.md "Two
 * processes") and hands its phantoms and secrets to the gateway process. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "cred_table.h"
#include "secbuf.h"
#include "gwerr.h"

void gw_cred_wipe_free(char *s)
{
	if (s == NULL)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

/* ---- phantoms ------------------------------------------------------------ */

static bool phantom_prefix_ok(const char *p)
{
	size_t n;

	if (p == NULL || (n = strlen(p)) == 0 || n > GW_PHANTOM_PREFIX_MAX)
		return false;
	for (; *p; p++)
		if (!gw_unreserved((unsigned char)*p))
			return false;
	return true;
}

int gw_cred_phantom_new(const char *prefix, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char r[GW_PHANTOM_HEX / 2];
	size_t pl;

	if (!phantom_prefix_ok(prefix))
		return -EINVAL;
	pl = strlen(prefix);
	if (out == NULL || outlen < pl + GW_PHANTOM_HEX + 1)
		return -ENOSPC;
	/* From the kernel: the supervisor mints phantoms, and links no TLS
	 * library (docs/egress.md "Two processes"). */
	for (size_t got = 0; got < sizeof r;) {
		ssize_t k = getrandom(r + got, sizeof r - got, 0);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EIO;
		got += (size_t)k;
	}
	memcpy(out, prefix, pl);
	for (size_t i = 0; i < sizeof r; i++) {
		out[pl + 2 * i] = hex[r[i] >> 4];
		out[pl + 2 * i + 1] = hex[r[i] & 15];
	}
	out[pl + GW_PHANTOM_HEX] = '\0';
	explicit_bzero(r, sizeof r);
	return 0;
}

/* ---- the route table ----------------------------------------------------- */

/* The first env:// route that reads sec's variable, or NULL. */
static const struct route *same_variable(const struct gw_cred_table *t,
					 const struct box_secret *sec)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].sec->scheme == BOX_SECRET_ENV &&
		    strcmp(t->v[i].sec->ref_name, sec->ref_name) == 0)
			return &t->v[i];
	return NULL;
}

int gw_cred_table_new(struct gw_cred_table **out)
{
	if ((*out = calloc(1, sizeof **out)) == NULL)
		return -ENOMEM;
	return 0;
}

void gw_cred_table_free(struct gw_cred_table *t)
{
	if (t == NULL)
		return;
	for (size_t i = 0; i < t->n; i++)
		gw_cred_wipe_free(t->v[i].secret);
	free(t->v);
	free(t);
}

static int table_add(struct gw_cred_table *t, const char *name, const struct box_dests *dests,
		     const struct box_secret *sec, bool egress, char *err, size_t errlen)
{
	struct route r = { .name = name, .dests = dests, .sec = sec, .egress = egress };
	int rc;

	if (name == NULL || dests == NULL || sec == NULL || !sec->present)
		return gw_fail(err, errlen, -EINVAL, "credential route %s has no secret",
			    name ? name : "(unnamed)");
	if (dests->n == 0)
		return gw_fail(err, errlen, -EINVAL, "credential route %s names no destination", name);
	switch (sec->scheme) {
	case BOX_SECRET_AWS:
	case BOX_SECRET_CREDSD:
		break;
	case BOX_SECRET_ENV:
		if ((sec->placement == BOX_PLACE_QUERY_PARAM && (sec->param == NULL || !*sec->param)) ||
		    (sec->placement != BOX_PLACE_QUERY_PARAM && (sec->header == NULL || !*sec->header)))
			return gw_fail(err, errlen, -EINVAL,
				    "credential route %s has no slot for its secret", name);
		/* Routes that read one variable share its phantom: a sandbox
		 * variable holds one value, and the secret behind it is one. */
		{
			const struct route *same = same_variable(t, sec);
			if (same != NULL && strcmp(same->sec->phantom_prefix, sec->phantom_prefix) != 0)
				return gw_fail(err, errlen, -EINVAL, "credential routes %s and %s both read "
					    "env://%s but give different phantom_prefix values; the "
					    "sandbox's %s can hold only one phantom", same->name, name,
					    sec->ref_name, sec->ref_name);
			if (same != NULL) {
				memcpy(r.phantom, same->phantom, sizeof(r.phantom));
				break;
			}
		}
		for (int tries = 0;; tries++) {
			bool dup = false;

			if ((rc = gw_cred_phantom_new(sec->phantom_prefix, r.phantom,
						      sizeof r.phantom)) != 0)
				return gw_fail(err, errlen, rc,
					    "credential route %s: cannot mint a phantom (%s)", name,
					    rc == -EINVAL ? "bad phantom_prefix" : "no randomness");
			for (size_t i = 0; i < t->n; i++)
				dup |= strcmp(t->v[i].phantom, r.phantom) == 0;
			if (!dup)
				break;
			if (tries == 2)
				return gw_fail(err, errlen, -EIO,
					    "credential route %s: phantom collision; refusing to bind two "
					    "credentials to one placeholder", name);
		}
		break;
	default:
		return gw_fail(err, errlen, -EINVAL, "credential route %s: unknown secret scheme", name);
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 8;
		struct route *v = realloc(t->v, cap * sizeof *v);

		if (v == NULL)
			return gw_fail(err, errlen, -ENOMEM, "out of memory");
		t->v = v, t->cap = cap;
	}
	t->v[t->n] = r;
	return (int)t->n++;
}

int gw_cred_table_add(struct gw_cred_table *t, const char *name, const struct box_dests *dests,
		      const struct box_secret *sec, char *err, size_t errlen)
{
	return table_add(t, name, dests, sec, true, err, errlen);
}

int gw_cred_table_from_config(struct gw_cred_table *t, const struct box_config *cfg, char *err,
			      size_t errlen)
{
	int rc;

	for (size_t i = 0; i < cfg->n_egress; i++)
		if ((rc = table_add(t, cfg->egress[i].name, &cfg->egress[i].destinations,
				    &cfg->egress[i].secret, true, err, errlen)) < 0)
			return rc;
	for (size_t i = 0; i < cfg->n_mcp; i++)
		if (cfg->mcp[i].type == BOX_MCP_HTTP && cfg->mcp[i].secret.present &&
		    (rc = table_add(t, cfg->mcp[i].name, &cfg->mcp[i].destinations,
				    &cfg->mcp[i].secret, false, err, errlen)) < 0)
			return rc;
	return 0;
}

int gw_cred_table_set_secret(struct gw_cred_table *t, size_t i, const char *value, char *err,
			     size_t errlen)
{
	bool blank = true;
	char *s;

	if (i >= t->n || t->v[i].sec->scheme != BOX_SECRET_ENV)
		return gw_fail(err, errlen, -EINVAL, "route %zu takes no env:// secret", i);
	if (value == NULL || *value == '\0')
		return gw_fail(err, errlen, -EINVAL, "the secret of route %s is empty", t->v[i].name);
	for (const unsigned char *c = (const unsigned char *)value; *c; c++) {
		if (*c < 0x20 || *c == 0x7f)
			return gw_fail(err, errlen, -EINVAL,
				    "the secret of route %s holds a control character", t->v[i].name);
		blank &= *c == ' ';
	}
	if (blank)
		return gw_fail(err, errlen, -EINVAL, "the secret of route %s is blank", t->v[i].name);
	if ((s = strdup(value)) == NULL)
		return gw_fail(err, errlen, -ENOMEM, "out of memory");
	gw_cred_wipe_free(t->v[i].secret);
	t->v[i].secret = s;
	return 0;
}

size_t gw_cred_table_count(const struct gw_cred_table *t)
{
	return t->n;
}

const char *gw_cred_route_name(const struct gw_cred_table *t, size_t i)
{
	return i < t->n ? t->v[i].name : NULL;
}

const struct box_secret *gw_cred_route_secret(const struct gw_cred_table *t, size_t i)
{
	return i < t->n ? t->v[i].sec : NULL;
}

const char *gw_cred_route_phantom(const struct gw_cred_table *t, size_t i)
{
	return i < t->n && t->v[i].phantom[0] ? t->v[i].phantom : NULL;
}

const char *gw_cred_route_env_name(const struct gw_cred_table *t, size_t i)
{
	return i < t->n && t->v[i].sec->scheme == BOX_SECRET_ENV ? t->v[i].sec->ref_name : NULL;
}


int gw_cred_table_set_phantom(struct gw_cred_table *t, size_t i, const char *phantom, char *err,
			      size_t errlen)
{
	if (i >= t->n || t->v[i].sec->scheme != BOX_SECRET_ENV)
		return gw_fail(err, errlen, -EINVAL, "route %zu takes no phantom", i);
	const char *prefix = t->v[i].sec->phantom_prefix;
	size_t pl = strlen(prefix), n = phantom ? strlen(phantom) : 0;
	bool ok = n == pl + GW_PHANTOM_HEX && strncmp(phantom, prefix, pl) == 0;
	for (size_t k = pl; ok && k < n; k++)
		ok = (phantom[k] >= '0' && phantom[k] <= '9') || (phantom[k] >= 'a' && phantom[k] <= 'f');
	for (size_t k = 0; ok && k < t->n; k++)
		ok = k == i || strcmp(t->v[k].phantom, phantom) != 0 ||
		     strcmp(t->v[k].sec->ref_name, t->v[i].sec->ref_name) == 0;
	if (!ok)
		return gw_fail(err, errlen, -EINVAL, "credential route %s: not a phantom of its own",
			    t->v[i].name);
	memcpy(t->v[i].phantom, phantom, n + 1);
	return 0;
}

int gw_cred_table_read_secrets(struct gw_cred_table *t, char *err, size_t errlen)
{
	char why[256];
	for (size_t i = 0; i < t->n; i++) {
		const struct route *r = &t->v[i];
		if (r->sec->scheme == BOX_SECRET_CREDSD)
			return gw_fail(err, errlen, -EINVAL, "egress route %s: credsd:// needs the "
				    "credentials daemon, which this build does not talk to; use "
				    "env:// or aws://", r->name);
		if (r->sec->scheme != BOX_SECRET_ENV)
			continue;
		const char *val = getenv(r->sec->ref_name);
		if (val == NULL)
			return gw_fail(err, errlen, -EINVAL, "egress route %s: the environment "
				    "variable %s that holds its secret is not set", r->name,
				    r->sec->ref_name);
		int rc = gw_cred_table_set_secret(t, i, val, why, sizeof(why));
		if (rc != 0)
			return gw_fail(err, errlen, rc, "egress route %s: %s", r->name, why);
	}
	return 0;
}

const char *gw_cred_route_secret_value(const struct gw_cred_table *t, size_t i)
{
	return i < t->n ? t->v[i].secret : NULL;
}

int gw_cred_sandbox_env(const struct gw_cred_table *t, char **env, size_t max, size_t *n)
{
	bool aws = false;
	*n = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct route *r = &t->v[i];
		aws |= r->sec->scheme == BOX_SECRET_AWS;
		if (r->sec->scheme != BOX_SECRET_ENV || same_variable(t, r->sec) != r)
			continue;               /* a shared variable is given once */
		if (*n == max)
			return -ENOSPC;
		if (asprintf(&env[*n], "%s=%s", r->sec->ref_name, r->phantom) < 0)
			return -ENOMEM;
		(*n)++;
	}
	if (aws) {
		if (*n + 2 > max)
			return -ENOSPC;
		if ((env[*n] = strdup("AWS_ACCESS_KEY_ID=" GW_AWS_FAKE_KEY_ID)) == NULL)
			return -ENOMEM;
		(*n)++;
		if ((env[*n] = strdup("AWS_SECRET_ACCESS_KEY=" GW_AWS_FAKE_SECRET)) == NULL)
			return -ENOMEM;
		(*n)++;
	}
	return 0;
}
