/* test_tval.c - temporal-domain values: dom_eq, hashing, records, lookups,
 * copies and the JSON forms. */
#include <errno.h>
#include <stdint.h>

#include <jansson.h>

#include "test.h"
#include "tval.h"
#include "value.h"

#define S(lit) DW_STR_LIT(lit)

static struct dw_tval tv_null(void)
{
	struct dw_tval v = { .kind = DW_TV_NULL };
	return v;
}

static struct dw_tval tv_bool(bool b)
{
	struct dw_tval v = { .kind = DW_TV_BOOL, .b = b };
	return v;
}

static struct dw_tval tv_dec(const char *text)
{
	return dw_tv_decimal(dw_str_c(text));
}

static struct dw_tval tv_str(const char *s)
{
	return dw_tv_string(dw_str_c(s));
}

static struct dw_tval tv_ent(const char *type, const char *id)
{
	struct dw_tval v = { .kind = DW_TV_ENTITY, .type = dw_str_c(type), .s = dw_str_c(id) };
	return v;
}

static struct dw_tval tv_arr(struct dw_arena *a, const struct dw_tval *items, uint32_t n)
{
	struct dw_tval v = { .kind = DW_TV_ARRAY, .n = n };
	struct dw_tval *p = DW_NEWN(a, struct dw_tval, n ? n : 1);

	if (n != 0)
		memcpy(p, items, n * sizeof *p);
	v.items = p;
	return v;
}

/* A record from alternating key / value arguments; CHECKs it builds. */
static struct dw_tval tv_rec(struct dw_arena *a, uint32_t n, const char *const *keys,
			     const struct dw_tval *vals)
{
	struct dw_tfv f[64];
	struct dw_tval out;
	struct dw_str dup;

	for (uint32_t i = 0; i < n; i++) {
		f[i].key = dw_str_c(keys[i]);
		f[i].val = vals[i];
	}
	CHECK_EQ_INT(dw_tval_record(a, f, n, &out, &dup), 0);
	return out;
}

static bool eq(struct dw_tval a, struct dw_tval b)
{
	return dw_tval_eq(&a, &b);
}

static bool heq(struct dw_tval a, struct dw_tval b)
{
	return dw_tval_hash(&a, 7) == dw_tval_hash(&b, 7);
}

/* --- decimals ---------------------------------------------------------------- */

static void test_decimal_canon(void)
{
	struct dw_tval d;

	d = tv_dec("1.5");
	CHECK(d.kind == DW_TV_DECIMAL && d.dec_ok && d.i == 15000);
	CHECK(dw_str_eq_c(d.s, "1.5"));
	d = tv_dec("1.50");
	CHECK(d.dec_ok && d.i == 15000);
	d = tv_dec("01.5");
	CHECK(d.dec_ok && d.i == 15000);
	d = tv_dec("-0.0001");
	CHECK(d.dec_ok && d.i == -1);
	d = tv_dec("922337203685477.5807");
	CHECK(d.dec_ok && d.i == INT64_MAX);
	d = tv_dec("-922337203685477.5808");
	CHECK(d.dec_ok && d.i == INT64_MIN);
	/* spellings Cedar refuses stay text */
	const char *bad[] = { "1", "1.", ".5", "+1.5", "1.5e3", "1.23456", "922337203685477.5808",
			      "", "abc", "1..5", "- 1.5", "1.5 " };
	for (size_t i = 0; i < DW_N_ELEMENTS(bad); i++) {
		d = tv_dec(bad[i]);
		CHECK(d.kind == DW_TV_DECIMAL && !d.dec_ok);
		CHECK(dw_str_eq_c(d.s, bad[i]));
	}
}

static void test_decimal_eq(void)
{
	/* numerically when both are valid */
	CHECK(eq(tv_dec("1.5"), tv_dec("1.50")));
	CHECK(eq(tv_dec("1.5"), tv_dec("01.5")));
	CHECK(eq(tv_dec("1.50"), tv_dec("001.5000")));
	CHECK(eq(tv_dec("0.0"), tv_dec("-0.0")));
	CHECK(eq(tv_dec("-2.10"), tv_dec("-2.1")));
	CHECK(!eq(tv_dec("1.5"), tv_dec("1.51")));
	CHECK(!eq(tv_dec("1.5"), tv_dec("-1.5")));
	CHECK(heq(tv_dec("1.5"), tv_dec("1.50")));
	CHECK(heq(tv_dec("1.5"), tv_dec("01.5")));
	CHECK(heq(tv_dec("0.0"), tv_dec("-0.0000")));
	/* otherwise by identical text */
	CHECK(eq(tv_dec("1"), tv_dec("1")));
	CHECK(heq(tv_dec("1"), tv_dec("1")));
	CHECK(!eq(tv_dec("1"), tv_dec("1.0")));
	CHECK(!eq(tv_dec("1.0"), tv_dec("1")));
	CHECK(!eq(tv_dec("1"), tv_dec("01")));
	CHECK(!eq(tv_dec("1.5e0"), tv_dec("1.5")));
	CHECK(!eq(tv_dec("1.23456"), tv_dec("1.2345")));
	CHECK(eq(tv_dec("1.23456"), tv_dec("1.23456")));
	CHECK(!eq(tv_dec(".5"), tv_dec("0.5")));
	/* no coercion across kinds */
	CHECK(!eq(tv_dec("1.0"), dw_tv_int(1)));
	CHECK(!eq(dw_tv_int(1), tv_dec("1.0")));
	CHECK(!eq(tv_dec("1"), tv_str("1")));
	CHECK(!eq(tv_dec("1.5"), tv_str("1.5")));
	CHECK(!eq(dw_tv_int(1), tv_str("1")));
}

/* --- eq / hash over every kind ------------------------------------------------ */

static void test_eq_kinds(void)
{
	struct dw_arena a;

	dw_arena_init(&a);
	CHECK(eq(tv_null(), tv_null()));
	CHECK(eq(tv_bool(true), tv_bool(true)));
	CHECK(!eq(tv_bool(true), tv_bool(false)));
	CHECK(!eq(tv_bool(false), tv_null()));
	CHECK(!eq(tv_bool(false), dw_tv_int(0)));
	CHECK(eq(dw_tv_int(INT64_MIN), dw_tv_int(INT64_MIN)));
	CHECK(!eq(dw_tv_int(0), dw_tv_int(-1)));
	CHECK(eq(tv_str(""), tv_str("")));
	CHECK(!eq(tv_str(""), tv_null()));
	CHECK(!eq(tv_str("a"), tv_str("A")));
	/* strings compare bytes, NUL included */
	CHECK(eq(dw_tv_string(dw_str_make("a\0b", 3)), dw_tv_string(dw_str_make("a\0b", 3))));
	CHECK(!eq(dw_tv_string(dw_str_make("a\0b", 3)), dw_tv_string(dw_str_make("a\0c", 3))));
	CHECK(!eq(dw_tv_string(dw_str_make("a\0", 2)), tv_str("a")));
	/* entities: type and id */
	CHECK(eq(tv_ent("Box::Agent", "self"), tv_ent("Box::Agent", "self")));
	CHECK(!eq(tv_ent("Box::Agent", "self"), tv_ent("Box::User", "self")));
	CHECK(!eq(tv_ent("Box::Agent", "self"), tv_ent("Box::Agent", "other")));
	CHECK(!eq(tv_ent("Box::Agent", "self"), tv_str("self")));
	CHECK(!eq(tv_ent("A", "B::C"), tv_ent("A::B", "C")));
	CHECK(!heq(tv_ent("A", "B::C"), tv_ent("A::B", "C")));
	CHECK(!heq(tv_ent("ab", "c"), tv_ent("a", "bc")));

	/* arrays in order */
	struct dw_tval i12[] = { dw_tv_int(1), dw_tv_int(2) };
	struct dw_tval i21[] = { dw_tv_int(2), dw_tv_int(1) };
	struct dw_tval d12[] = { tv_dec("1.0"), tv_dec("2.0") };
	struct dw_tval d12b[] = { tv_dec("1.00"), tv_dec("02.0") };
	CHECK(eq(tv_arr(&a, i12, 2), tv_arr(&a, i12, 2)));
	CHECK(!eq(tv_arr(&a, i12, 2), tv_arr(&a, i21, 2)));
	CHECK(!eq(tv_arr(&a, i12, 2), tv_arr(&a, i12, 1)));
	CHECK(!eq(tv_arr(&a, i12, 2), tv_arr(&a, d12, 2)));
	CHECK(eq(tv_arr(&a, d12, 2), tv_arr(&a, d12b, 2)));
	CHECK(heq(tv_arr(&a, d12, 2), tv_arr(&a, d12b, 2)));
	CHECK(eq(tv_arr(&a, NULL, 0), tv_arr(&a, NULL, 0)));
	CHECK(!eq(tv_arr(&a, NULL, 0), tv_null()));

	/* records: canonical, so key order of construction does not matter */
	const char *kab[] = { "a", "b" }, *kba[] = { "b", "a" };
	struct dw_tval v12[] = { dw_tv_int(1), tv_dec("2.5") };
	struct dw_tval v21[] = { tv_dec("2.50"), dw_tv_int(1) };
	struct dw_tval r1 = tv_rec(&a, 2, kab, v12), r2 = tv_rec(&a, 2, kba, v21);
	CHECK(eq(r1, r2));
	CHECK(heq(r1, r2));
	struct dw_tval v13[] = { dw_tv_int(1), tv_dec("2.51") };
	CHECK(!eq(r1, tv_rec(&a, 2, kab, v13)));
	const char *kac[] = { "a", "c" };
	CHECK(!eq(r1, tv_rec(&a, 2, kac, v12)));
	CHECK(!eq(r1, tv_rec(&a, 1, kab, v12)));
	CHECK(!eq(tv_rec(&a, 0, NULL, NULL), tv_arr(&a, NULL, 0)));
	CHECK(eq(tv_rec(&a, 0, NULL, NULL), tv_rec(&a, 0, NULL, NULL)));
	dw_arena_fini(&a);
}

/* Every pair of a varied set: eq is an equivalence and equal values hash the
 * same; unequal values rarely collide. */
static void test_eq_hash_matrix(void)
{
	struct dw_arena a;
	struct dw_tval v[64];
	size_t n = 0, collisions = 0, unequal = 0;
	bool ok_refl = true, ok_sym = true, ok_hash = true;

	dw_arena_init(&a);
	v[n++] = tv_null();
	v[n++] = tv_bool(true);
	v[n++] = tv_bool(false);
	v[n++] = dw_tv_int(0);
	v[n++] = dw_tv_int(1);
	v[n++] = dw_tv_int(-1);
	v[n++] = dw_tv_int(15000);
	v[n++] = tv_dec("1.5");
	v[n++] = tv_dec("1.50");
	v[n++] = tv_dec("01.5");
	v[n++] = tv_dec("1");
	v[n++] = tv_dec("1.0");
	v[n++] = tv_dec("1.5e0");
	v[n++] = tv_dec("0.0");
	v[n++] = tv_dec("-0.0");
	v[n++] = tv_str("1");
	v[n++] = tv_str("1.5");
	v[n++] = tv_str("");
	v[n++] = dw_tv_string(dw_str_make("\0", 1));
	v[n++] = tv_ent("T", "1");
	v[n++] = tv_ent("T", "1.5");
	v[n++] = tv_ent("U", "1");
	struct dw_tval i1[] = { dw_tv_int(1) }, d1[] = { tv_dec("1.5") }, d2[] = { tv_dec("1.50") };
	v[n++] = tv_arr(&a, NULL, 0);
	v[n++] = tv_arr(&a, i1, 1);
	v[n++] = tv_arr(&a, d1, 1);
	v[n++] = tv_arr(&a, d2, 1);
	const char *k1[] = { "x" }, *k2[] = { "y" };
	v[n++] = tv_rec(&a, 0, NULL, NULL);
	v[n++] = tv_rec(&a, 1, k1, i1);
	v[n++] = tv_rec(&a, 1, k2, i1);
	v[n++] = tv_rec(&a, 1, k1, d1);
	v[n++] = tv_rec(&a, 1, k1, d2);
	struct dw_tval nested[] = { v[n - 1] };
	v[n++] = tv_rec(&a, 1, k1, nested);
	v[n++] = tv_arr(&a, nested, 1);

	for (size_t i = 0; i < n; i++) {
		if (!dw_tval_eq(&v[i], &v[i]))
			ok_refl = false;
		for (size_t j = 0; j < n; j++) {
			bool e = dw_tval_eq(&v[i], &v[j]);

			if (e != dw_tval_eq(&v[j], &v[i]))
				ok_sym = false;
			if (e && dw_tval_hash(&v[i], 99) != dw_tval_hash(&v[j], 99))
				ok_hash = false;
			if (!e && i < j) {
				unequal++;
				if (dw_tval_hash(&v[i], 99) == dw_tval_hash(&v[j], 99))
					collisions++;
			}
		}
	}
	CHECK(ok_refl);
	CHECK(ok_sym);
	CHECK(ok_hash);
	CHECK(collisions == 0);
	CHECK(unequal > 400);
	/* the expected equal pairs */
	CHECK(eq(v[7], v[8]) && eq(v[8], v[9]) && eq(v[13], v[14]));
	CHECK(eq(v[24], v[25]) && eq(v[29], v[30]));
	/* the seed matters */
	CHECK(dw_tval_hash(&v[4], 1) != dw_tval_hash(&v[4], 2));
	dw_arena_fini(&a);
}

/* --- records, lookups --------------------------------------------------------- */

static void test_record_build(void)
{
	struct dw_arena a;
	struct dw_tfv f[5];
	struct dw_tval r;
	struct dw_str dup = { 0 };
	const char *keys[] = { "zeta", "alpha", "", "mid", "Alpha" };

	dw_arena_init(&a);
	for (int i = 0; i < 5; i++) {
		f[i].key = dw_str_c(keys[i]);
		f[i].val = dw_tv_int(i);
	}
	CHECK_EQ_INT(dw_tval_record(&a, f, 5, &r, &dup), 0);
	CHECK(r.kind == DW_TV_RECORD && r.n == 5);
	/* sorted by bytes: "" < "Alpha" < "alpha" < "mid" < "zeta" */
	CHECK(dw_str_eq_c(r.fields[0].key, "") && r.fields[0].val.i == 2);
	CHECK(dw_str_eq_c(r.fields[1].key, "Alpha") && r.fields[1].val.i == 4);
	CHECK(dw_str_eq_c(r.fields[2].key, "alpha") && r.fields[2].val.i == 1);
	CHECK(dw_str_eq_c(r.fields[3].key, "mid") && r.fields[3].val.i == 3);
	CHECK(dw_str_eq_c(r.fields[4].key, "zeta") && r.fields[4].val.i == 0);
	/* the record is a copy: scribbling on the input changes nothing */
	f[0].val = dw_tv_int(100);
	CHECK(r.fields[0].val.i == 2);

	/* duplicates, sorted or not, adjacent or not */
	const char *d1[] = { "a", "b", "a" }, *d2[] = { "a", "a" }, *d3[] = { "x", "b", "c", "b" };
	const char **ds[] = { d1, d2, d3 };
	uint32_t dn[] = { 3, 2, 4 };
	const char *dk[] = { "a", "a", "b" };
	for (int t = 0; t < 3; t++) {
		for (uint32_t i = 0; i < dn[t]; i++) {
			f[i].key = dw_str_c(ds[t][i]);
			f[i].val = tv_null();
		}
		memset(&r, 0x5a, sizeof r);
		dup = (struct dw_str){ 0 };
		CHECK_EQ_INT(dw_tval_record(&a, f, dn[t], &r, &dup), -EEXIST);
		CHECK(dw_str_eq_c(dup, dk[t]));
	}
	/* keys with NUL bytes are distinct from their prefixes */
	f[0].key = dw_str_make("k\0", 2);
	f[1].key = dw_str_make("k", 1);
	f[0].val = dw_tv_int(1);
	f[1].val = dw_tv_int(2);
	CHECK_EQ_INT(dw_tval_record(&a, f, 2, &r, &dup), 0);
	CHECK(r.n == 2 && r.fields[0].key.n == 1 && r.fields[1].key.n == 2);
	/* empty */
	CHECK_EQ_INT(dw_tval_record(&a, NULL, 0, &r, NULL), 0);
	CHECK(r.kind == DW_TV_RECORD && r.n == 0);
	/* -ENOMEM through an arena limit */
	struct dw_arena small;
	dw_arena_init(&small);
	small.limit = 1;
	f[0].key = S("a");
	f[1].key = S("b");
	CHECK_EQ_INT(dw_tval_record(&small, f, 2, &r, &dup), -ENOMEM);
	dw_arena_fini(&small);
	dw_arena_fini(&a);
}

static void test_lookup(void)
{
	struct dw_arena a;
	struct dw_tfv f[200];
	char keys[200][16];
	struct dw_tval big, inner, outer, deep;
	const struct dw_tval *p;

	dw_arena_init(&a);
	/* a big record, built in reverse, exercises the bisection */
	for (int i = 0; i < 200; i++) {
		snprintf(keys[i], sizeof keys[i], "k%03d", 199 - i);
		f[i].key = dw_str_c(keys[i]);
		f[i].val = dw_tv_int(199 - i);
	}
	CHECK_EQ_INT(dw_tval_record(&a, f, 200, &big, NULL), 0);
	bool all = true;
	for (int i = 0; i < 200; i++) {
		char k[16];
		snprintf(k, sizeof k, "k%03d", i);
		p = dw_tval_field(&big, dw_str_c(k));
		if (p == NULL || p->kind != DW_TV_INT || p->i != i)
			all = false;
	}
	CHECK(all);
	CHECK(dw_tval_field(&big, S("k200")) == NULL);
	CHECK(dw_tval_field(&big, S("k")) == NULL);
	CHECK(dw_tval_field(&big, S("")) == NULL);
	CHECK(dw_tval_field(&big, S("k0000")) == NULL);
	CHECK(dw_tval_field(NULL, S("k000")) == NULL);
	struct dw_tval i5 = dw_tv_int(5);
	CHECK(dw_tval_field(&i5, S("k000")) == NULL);

	/* {input: {path: "/etc", meta: {size: 3}}, requestId: "r1", n: 5} */
	const char *mk[] = { "size" };
	struct dw_tval mv[] = { dw_tv_int(3) };
	struct dw_tval meta = tv_rec(&a, 1, mk, mv);
	const char *ik[] = { "path", "meta" };
	struct dw_tval iv[] = { tv_str("/etc"), meta };
	inner = tv_rec(&a, 2, ik, iv);
	const char *ok[] = { "input", "requestId", "n" };
	struct dw_tval ov[] = { inner, tv_str("r1"), dw_tv_int(5) };
	outer = tv_rec(&a, 3, ok, ov);

	p = dw_tval_path(&outer, S("input.path"));
	CHECK(p != NULL && p->kind == DW_TV_STRING && dw_str_eq_c(p->s, "/etc"));
	p = dw_tval_path(&outer, S("input.meta.size"));
	CHECK(p != NULL && p->kind == DW_TV_INT && p->i == 3);
	p = dw_tval_path(&outer, S("input.meta"));
	CHECK(p != NULL && p->kind == DW_TV_RECORD && p->n == 1);
	p = dw_tval_path(&outer, S("requestId"));
	CHECK(p != NULL && dw_str_eq_c(p->s, "r1"));
	p = dw_tval_path(&outer, S("input"));
	CHECK(p != NULL && p->kind == DW_TV_RECORD && p->n == 2);
	CHECK(dw_tval_path(&outer, S("input.missing")) == NULL);
	CHECK(dw_tval_path(&outer, S("missing.path")) == NULL);
	CHECK(dw_tval_path(&outer, S("n.x")) == NULL);              /* not a record */
	CHECK(dw_tval_path(&outer, S("input.path.x")) == NULL);
	CHECK(dw_tval_path(&outer, S("input.")) == NULL);           /* empty segment */
	CHECK(dw_tval_path(&outer, S(".input")) == NULL);
	CHECK(dw_tval_path(&outer, S("input..path")) == NULL);
	CHECK(dw_tval_path(&outer, S("")) == NULL);
	CHECK(dw_tval_path(&i5, S("x")) == NULL);
	CHECK(dw_tval_field(&outer, S("input.path")) == NULL);      /* field is not a path */

	/* a key with a dot is a field, not a path */
	const char *dk[] = { "a.b" };
	deep = tv_rec(&a, 1, dk, mv);
	CHECK(dw_tval_field(&deep, S("a.b")) != NULL);
	CHECK(dw_tval_path(&deep, S("a.b")) == NULL);
	dw_arena_fini(&a);
}

/* --- copies ------------------------------------------------------------------- */

/* A value exercising every kind, with NUL bytes and nesting. */
static struct dw_tval sample(struct dw_arena *a)
{
	struct dw_tval items[] = { tv_null(), tv_bool(true), dw_tv_int(-7), tv_dec("2.50"),
				   tv_dec("bad"), dw_tv_string(dw_str_make("n\0l", 3)),
				   tv_ent("Box::Agent", "self"), tv_str("") };
	struct dw_tval arr = tv_arr(a, items, DW_N_ELEMENTS(items));
	const char *ik[] = { "deep", "e" };
	struct dw_tval iv[] = { arr, tv_arr(a, NULL, 0) };
	struct dw_tval inner = tv_rec(a, 2, ik, iv);
	const char *ok[] = { "input", "x", "", "empty" };
	struct dw_tval ov[] = { inner, dw_tv_int(1), tv_str("blank key"), tv_rec(a, 0, NULL, NULL) };

	return tv_rec(a, 4, ok, ov);
}

/* Does any pointer of v point into [lo, hi)? */
static bool points_into(const struct dw_tval *v, const char *lo, const char *hi)
{
#define IN(p) ((const char *)(p) >= lo && (const char *)(p) < hi)
	switch (v->kind) {
	case DW_TV_DECIMAL:
	case DW_TV_STRING:
		return v->s.n && IN(v->s.p);
	case DW_TV_ENTITY:
		return (v->s.n && IN(v->s.p)) || (v->type.n && IN(v->type.p));
	case DW_TV_ARRAY:
		if (v->n && IN(v->items))
			return true;
		for (uint32_t i = 0; i < v->n; i++)
			if (points_into(&v->items[i], lo, hi))
				return true;
		return false;
	case DW_TV_RECORD:
		if (v->n && IN(v->fields))
			return true;
		for (uint32_t i = 0; i < v->n; i++)
			if ((v->fields[i].key.n && IN(v->fields[i].key.p)) ||
			    points_into(&v->fields[i].val, lo, hi))
				return true;
		return false;
	}
	return false;
#undef IN
}

static void test_copy(void)
{
	struct dw_arena a, b;
	struct dw_tval v, c, d;
	char *block, *cur;
	size_t need;

	dw_arena_init(&a);
	dw_arena_init(&b);
	v = sample(&a);
	CHECK_EQ_INT(dw_tval_copy(&b, &v, &c), 0);
	CHECK(eq(v, c));
	CHECK(heq(v, c));

	need = dw_tval_deep_size(&v);
	CHECK(need > 0 && need % 8 == 0);
	block = malloc(need);
	cur = block;
	dw_tval_deep_copy(&v, &d, &cur);
	CHECK(cur == block + need);            /* exactly the size promised */
	CHECK(eq(v, d));
	CHECK(!points_into(&d, (const char *)a.head, (const char *)a.head + 1));
	/* drop the original: ASan catches any pointer the copies kept into it */
	dw_arena_fini(&a);
	CHECK(dw_tval_field(&c, S("x"))->i == 1);
	CHECK(eq(c, d));
	const struct dw_tval *deep = dw_tval_path(&d, S("input.deep"));
	CHECK(deep != NULL && deep->n == 8);
	CHECK(deep->items[5].s.n == 3 && memcmp(deep->items[5].s.p, "n\0l", 3) == 0);
	CHECK(deep->items[3].dec_ok && deep->items[3].i == 25000);
	CHECK(deep->items[7].s.n == 0 && deep->items[7].s.p != NULL);
	/* arrays and records inside the block are 8-aligned */
	CHECK(((uintptr_t)d.fields & 7) == 0 && ((uintptr_t)deep->items & 7) == 0);
	CHECK(points_into(&d, block, block + need));
	free(block);

	/* scalars need nothing */
	struct dw_tval s = dw_tv_int(5), t;
	CHECK(dw_tval_deep_size(&s) == 0);
	cur = NULL;
	dw_tval_deep_copy(&s, &t, &cur);
	CHECK(cur == NULL && eq(s, t));
	s = tv_null();
	CHECK(dw_tval_deep_size(&s) == 0);
	CHECK(dw_tval_deep_size(&(struct dw_tval){ .kind = DW_TV_STRING, .s = S("") }) == 0);
	CHECK(dw_tval_deep_size(&(struct dw_tval){ .kind = DW_TV_STRING, .s = S("1234567") }) == 8);
	CHECK(dw_tval_deep_size(&(struct dw_tval){ .kind = DW_TV_STRING, .s = S("12345678") }) == 16);
	CHECK_EQ_INT(dw_tval_copy(&b, &s, &t), 0);
	CHECK(eq(s, t));

	/* -ENOMEM from a limited arena */
	struct dw_arena lim;
	dw_arena_init(&lim);
	dw_arena_init(&a);
	v = sample(&a);
	lim.limit = 1;
	CHECK_EQ_INT(dw_tval_copy(&lim, &v, &c), -ENOMEM);
	dw_arena_fini(&lim);
	dw_arena_fini(&a);
	dw_arena_fini(&b);
}

/* --- JSON out ----------------------------------------------------------------- */

static void check_json(struct dw_tval v, const char *want)
{
	struct dw_buf b = { 0 };

	CHECK_EQ_INT(dw_tval_to_json(&b, &v), 0);
	CHECK_EQ_STR(b.p, want);
	dw_buf_free(&b);
}

static void test_to_json(void)
{
	struct dw_arena a;

	dw_arena_init(&a);
	check_json(tv_null(), "null");
	check_json(tv_bool(true), "true");
	check_json(tv_bool(false), "false");
	check_json(dw_tv_int(0), "0");
	check_json(dw_tv_int(INT64_MIN), "-9223372036854775808");
	check_json(dw_tv_int(INT64_MAX), "9223372036854775807");
	check_json(tv_dec("1.50"), "{\"__extn\":{\"fn\":\"decimal\",\"arg\":\"1.50\"}}");
	check_json(tv_dec("1"), "{\"__extn\":{\"fn\":\"decimal\",\"arg\":\"1\"}}");
	check_json(tv_str("plain"), "\"plain\"");
	check_json(tv_str(""), "\"\"");
	check_json(tv_str("q\"b\\s/"), "\"q\\\"b\\\\s/\"");
	check_json(tv_str("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
	check_json(tv_str("\x01\x1f\x7f"), "\"\\u0001\\u001f\x7f\"");
	check_json(dw_tv_string(dw_str_make("a\0b", 3)), "\"a\\u0000b\"");
	check_json(tv_str("caf\xc3\xa9 \xf0\x9f\x98\x80"), "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"");
	/* bytes that are not UTF-8 render as U+FFFD */
	check_json(tv_str("a\xff" "b\xc3"), "\"a\\ufffdb\\ufffd\"");
	check_json(tv_str("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");   /* a surrogate */
	check_json(tv_ent("Box::Agent", "se\"lf"),
		   "{\"__entity\":{\"type\":\"Box::Agent\",\"id\":\"se\\\"lf\"}}");
	check_json(tv_arr(&a, NULL, 0), "[]");
	check_json(tv_rec(&a, 0, NULL, NULL), "{}");
	struct dw_tval items[] = { dw_tv_int(1), tv_null(), tv_str("x") };
	check_json(tv_arr(&a, items, 3), "[1,null,\"x\"]");
	const char *k[] = { "b", "a\n" };
	struct dw_tval vals[] = { tv_arr(&a, items, 1), tv_bool(false) };
	check_json(tv_rec(&a, 2, k, vals), "{\"a\\n\":false,\"b\":[1]}");
	check_json(sample(&a),
		   "{\"\":\"blank key\",\"empty\":{},\"input\":{\"deep\":[null,true,-7,"
		   "{\"__extn\":{\"fn\":\"decimal\",\"arg\":\"2.50\"}},"
		   "{\"__extn\":{\"fn\":\"decimal\",\"arg\":\"bad\"}},\"n\\u0000l\","
		   "{\"__entity\":{\"type\":\"Box::Agent\",\"id\":\"self\"}},\"\"],\"e\":[]},\"x\":1}");
	/* not a value */
	struct dw_buf b = { 0 };
	struct dw_tval zero = { 0 };
	CHECK_EQ_INT(dw_tval_to_json(&b, &zero), -EINVAL);
	dw_buf_free(&b);
	dw_arena_fini(&a);
}

/* --- JSON in ------------------------------------------------------------------ */

/* Parse text with jansson, convert; returns the dw_tval_from_json result. */
static int from_json(struct dw_arena *a, const char *text, struct dw_tval *out, char *err,
		     size_t errlen)
{
	json_error_t je;
	json_t *j = json_loadb(text, strlen(text), JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	int r;

	if (j == NULL) {
		fprintf(stderr, "jansson: %s: %s\n", text, je.text);
		return -999;
	}
	r = dw_tval_from_json(a, j, out, err, errlen);
	json_decref(j);
	return r;
}

static void check_from_json_fails(const char *text, const char *want_err)
{
	struct dw_arena a;
	struct dw_tval v;
	char err[512];

	dw_arena_init(&a);
	CHECK_EQ_INT(from_json(&a, text, &v, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, want_err);
	dw_arena_fini(&a);
}

static void test_from_json(void)
{
	struct dw_arena a;
	struct dw_tval v;
	char err[512];
	const struct dw_tval *p;

	dw_arena_init(&a);
	CHECK_EQ_INT(from_json(&a, "null", &v, err, sizeof err), 0);
	CHECK(v.kind == DW_TV_NULL);
	CHECK_EQ_INT(from_json(&a, "true", &v, err, sizeof err), 0);
	CHECK(v.kind == DW_TV_BOOL && v.b);
	CHECK_EQ_INT(from_json(&a, "false", &v, err, sizeof err), 0);
	CHECK(v.kind == DW_TV_BOOL && !v.b);
	CHECK_EQ_INT(from_json(&a, "-9223372036854775808", &v, err, sizeof err), 0);
	CHECK(v.kind == DW_TV_INT && v.i == INT64_MIN);
	CHECK_EQ_INT(from_json(&a, "\"a\\u0000b\"", &v, err, sizeof err), 0);
	CHECK(v.kind == DW_TV_STRING && v.s.n == 3 && memcmp(v.s.p, "a\0b", 3) == 0);
	CHECK_EQ_INT(from_json(&a, "{\"__entity\":{\"type\":\"Box::Agent\",\"id\":\"self\"}}",
			       &v, err, sizeof err), 0);
	CHECK(eq(v, tv_ent("Box::Agent", "self")));
	CHECK_EQ_INT(from_json(&a, "{\"__extn\":{\"fn\":\"decimal\",\"arg\":\"1.50\"}}",
			       &v, err, sizeof err), 0);
	CHECK(v.kind == DW_TV_DECIMAL && v.dec_ok && v.i == 15000 && dw_str_eq_c(v.s, "1.50"));
	CHECK_EQ_INT(from_json(&a, "{\"__extn\":{\"arg\":\"1e3\",\"fn\":\"decimal\"}}",
			       &v, err, sizeof err), 0);
	CHECK(v.kind == DW_TV_DECIMAL && !v.dec_ok && dw_str_eq_c(v.s, "1e3"));
	CHECK_EQ_INT(from_json(&a, "{\"z\":1,\"a\":[1,\"x\",null],\"m\":{\"k\":true}}",
			       &v, err, sizeof err), 0);
	CHECK(v.kind == DW_TV_RECORD && v.n == 3);
	CHECK(dw_str_eq_c(v.fields[0].key, "a") && dw_str_eq_c(v.fields[2].key, "z"));
	p = dw_tval_path(&v, S("m.k"));
	CHECK(p != NULL && p->kind == DW_TV_BOOL && p->b);
	p = dw_tval_field(&v, S("a"));
	CHECK(p != NULL && p->kind == DW_TV_ARRAY && p->n == 3 && p->items[1].kind == DW_TV_STRING);
	/* keys with NUL bytes survive (jansson cannot parse them, but can hold them) */
	json_t *obj = json_object();
	json_object_setn_new(obj, "k\0x", 3, json_integer(1));
	json_object_setn_new(obj, "k", 1, json_integer(2));
	CHECK_EQ_INT(dw_tval_from_json(&a, obj, &v, err, sizeof err), 0);
	json_decref(obj);
	CHECK(v.n == 2 && v.fields[0].key.n == 1 && v.fields[1].key.n == 3);
	CHECK(v.fields[1].key.n == 3 && memcmp(v.fields[1].key.p, "k\0x", 3) == 0);
	obj = json_object();
	json_object_setn_new_nocheck(obj, "k\xff", 2, json_integer(1));
	CHECK_EQ_INT(dw_tval_from_json(&a, obj, &v, err, sizeof err), -EINVAL);
	CHECK_EQ_STR(err, "key is not UTF-8");
	json_decref(obj);
	/* an empty object is a record, an empty array an array */
	CHECK_EQ_INT(from_json(&a, "{}", &v, err, sizeof err), 0);
	CHECK(v.kind == DW_TV_RECORD && v.n == 0);
	CHECK_EQ_INT(from_json(&a, "[]", &v, err, sizeof err), 0);
	CHECK(v.kind == DW_TV_ARRAY && v.n == 0);

	/* refusals, with where and why */
	check_from_json_fails("1.5", "number 1.5 is not an integer; write a decimal as "
			      "{\"__extn\":{\"fn\":\"decimal\",\"arg\":\"...\"}}");
	check_from_json_fails("{\"input\":{\"size\":[1,2.0]}}",
			      "at .input.size[1]: number 2 is not an integer; write a decimal as "
			      "{\"__extn\":{\"fn\":\"decimal\",\"arg\":\"...\"}}");
	check_from_json_fails("{\"__entity\":{\"type\":\"T\",\"id\":\"x\"},\"b\":1}",
			      "an object with \"__entity\" must have no other keys");
	check_from_json_fails("{\"__entity\":\"T::x\"}",
			      "\"__entity\" must hold an object, got a string");
	check_from_json_fails("{\"__entity\":{\"type\":\"T\"}}",
			      "an __entity object has exactly \"type\" and \"id\"");
	check_from_json_fails("{\"__entity\":{\"type\":\"T\",\"id\":\"x\",\"z\":1}}",
			      "an __entity object has exactly \"type\" and \"id\"");
	check_from_json_fails("{\"__entity\":{\"type\":\"T\",\"id\":5}}",
			      "\"id\" of an __entity must be a string, got an integer");
	check_from_json_fails("{\"__extn\":{\"fn\":\"ip\",\"arg\":\"1.2.3.4\"}}",
			      "extension function `ip` has no temporal value (only decimal does)");
	check_from_json_fails("[{\"__extn\":{\"fn\":\"decimal\",\"arg\":1}}]",
			      "at [0]: \"arg\" of an __extn must be a string, got an integer");
	check_from_json_fails("{\"__extn\":{\"fn\":\"decimal\"}}",
			      "an __extn object has exactly \"fn\" and \"arg\"");

	/* depth: 128 levels below the top are fine, 129 are not */
	char deep[400];
	for (int n = 128; n <= 129; n++) {
		memset(deep, '[', (size_t)n + 1);
		memset(deep + n + 1, ']', (size_t)n + 1);
		deep[2 * (n + 1)] = '\0';
		int r = from_json(&a, deep, &v, err, sizeof err);
		if (n == 128) {
			CHECK_EQ_INT(r, 0);
		} else {
			CHECK_EQ_INT(r, -EINVAL);
			CHECK(strstr(err, "value nested deeper than the limit of 128") != NULL);
		}
	}
	/* a failure leaves the arena as it was */
	struct dw_arena_mark m = dw_arena_mark(&a);
	CHECK_EQ_INT(from_json(&a, "{\"a\":\"long string to allocate\",\"b\":1.5}", &v, err,
			       sizeof err), -EINVAL);
	CHECK(a.cur == m.cur && a.head == m.head);
	/* NULL input */
	CHECK_EQ_INT(dw_tval_from_json(&a, NULL, &v, err, sizeof err), -EINVAL);
	/* errlen 0 is allowed */
	CHECK_EQ_INT(from_json(&a, "2.5", &v, NULL, 0), -EINVAL);
	dw_arena_fini(&a);
}

/* --- random values: copies, JSON round trips --------------------------------- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static struct dw_str rnd_str(struct dw_arena *a)
{
	static const char *pool[] = { "", "a", "b", "x.y", "\"q\"", "a\\b", "caf\xc3\xa9",
				      "\xf0\x9f\x98\x80", "line\nfeed", "tab\t", "(paren)", "1.5",
				      "Box::Agent::\"x\"", "null", "true", "-3", " sp " };
	if (rnd(5) == 0) {             /* arbitrary bytes, NUL included */
		uint32_t n = rnd(6);
		char *p = dw_arena_alloc(a, n + 1, 1);
		for (uint32_t i = 0; i < n; i++)
			p[i] = (char)rnd(128);
		return dw_str_make(p, n);
	}
	return dw_str_c(pool[rnd(DW_N_ELEMENTS(pool))]);
}

static struct dw_tval rnd_val(struct dw_arena *a, int depth)
{
	static const char *decs[] = { "1.5", "1.50", "01.5", "-0.0", "1", "1.5e3", ".5", "2.0001" };
	uint32_t k = rnd(depth > 3 ? 6 : 8);
	struct dw_tval v = { 0 };

	switch (k) {
	case 0: return tv_null();
	case 1: return tv_bool(rnd(2));
	case 2: return dw_tv_int((int64_t)rnd(2000) - 1000);
	case 3: return tv_dec(decs[rnd(DW_N_ELEMENTS(decs))]);
	case 4: return dw_tv_string(rnd_str(a));
	case 5:
		v.kind = DW_TV_ENTITY;
		v.type = rnd(2) ? S("Box::Agent") : S("T");
		v.s = rnd_str(a);
		return v;
	case 6: {
		uint32_t n = rnd(4);
		struct dw_tval *it = DW_NEWN(a, struct dw_tval, n ? n : 1);
		for (uint32_t i = 0; i < n; i++)
			it[i] = rnd_val(a, depth + 1);
		v.kind = DW_TV_ARRAY;
		v.n = n;
		v.items = it;
		return v;
	}
	default: {
		uint32_t n = rnd(5);
		struct dw_tfv f[5];
		for (uint32_t i = 0; i < n; i++) {
			f[i].key = rnd_str(a);
			f[i].val = rnd_val(a, depth + 1);
		}
		if (dw_tval_record(a, f, n, &v, NULL) != 0)
			return tv_null();      /* a repeated random key: fine */
		return v;
	}
	}
}

static bool utf8_everywhere(const struct dw_tval *v)
{
	size_t bad;

	switch (v->kind) {
	case DW_TV_STRING:
	case DW_TV_DECIMAL:
		return dw_utf8_valid(v->s.p, v->s.n, &bad);
	case DW_TV_ENTITY:
		return dw_utf8_valid(v->s.p, v->s.n, &bad);
	case DW_TV_ARRAY:
		for (uint32_t i = 0; i < v->n; i++)
			if (!utf8_everywhere(&v->items[i]))
				return false;
		return true;
	case DW_TV_RECORD:
		/* jansson cannot parse a key holding NUL */
		for (uint32_t i = 0; i < v->n; i++)
			if (!dw_utf8_valid(v->fields[i].key.p, v->fields[i].key.n, &bad) ||
			    memchr(v->fields[i].key.p, 0, v->fields[i].key.n) != NULL ||
			    !utf8_everywhere(&v->fields[i].val))
				return false;
		return true;
	}
	return true;
}

static void test_random(void)
{
	int copies_ok = 0, json_ok = 0, json_tried = 0;

	for (int iter = 0; iter < 2000; iter++) {
		struct dw_arena a, b;
		struct dw_tval v, c, back;
		struct dw_buf buf = { 0 };
		char err[256];

		dw_arena_init(&a);
		dw_arena_init(&b);
		v = rnd_val(&a, 0);
		if (dw_tval_copy(&b, &v, &c) == 0 && dw_tval_eq(&v, &c) &&
		    dw_tval_hash(&v, 3) == dw_tval_hash(&c, 3))
			copies_ok++;
		if (utf8_everywhere(&v)) {
			json_tried++;
			json_error_t je;
			json_t *j = NULL;
			if (dw_tval_to_json(&buf, &v) == 0)
				j = json_loadb(buf.p, buf.n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
			if (j != NULL && dw_tval_from_json(&b, j, &back, err, sizeof err) == 0 &&
			    dw_tval_eq(&v, &back))
				json_ok++;
			else
				fprintf(stderr, "json round trip failed: %s\n", buf.p ? buf.p : "");
			json_decref(j);
		}
		dw_buf_free(&buf);
		dw_arena_fini(&a);
		dw_arena_fini(&b);
	}
	CHECK_EQ_INT(copies_ok, 2000);
	CHECK(json_tried > 500);
	CHECK_EQ_INT(json_ok, json_tried);
}

static const struct test_case tests[] = {
	{ "decimal_canon", test_decimal_canon },
	{ "decimal_eq", test_decimal_eq },
	{ "eq_kinds", test_eq_kinds },
	{ "eq_hash_matrix", test_eq_hash_matrix },
	{ "record_build", test_record_build },
	{ "lookup", test_lookup },
	{ "copy", test_copy },
	{ "to_json", test_to_json },
	{ "from_json", test_from_json },
	{ "random", test_random },
};

TEST_MAIN(tests)
