/* live.c - the operator's one-line form of a decision (live.h). */
#include <stdbool.h>
#include <string.h>

#include "live.h"

struct out {
	char *p;
	size_t n, cap;
};

static void put(struct out *o, const char *s, size_t k)
{
	for (size_t i = 0; i < k && o->n + 1 < o->cap; i++)
		o->p[o->n++] = s[i];
}

static void put_safe(struct out *o, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	for (size_t i = 0; p[i]; i++) {
		unsigned c = p[i];
		/* U+0080..U+009F is C2 80..C2 9F: a terminal may read it as CSI */
		bool c1 = c == 0xc2 && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f;
		if (c < 0x20 || c == 0x7f || c1) {
			char e[8] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
			put(o, e, 4);
			if (c1) {
				i++;
				char f[4] = { '\\', 'x', hex[p[i] >> 4], hex[p[i] & 15] };
				put(o, f, 4);
			}
			continue;
		}
		put(o, (const char *)&p[i], 1);
	}
}

size_t tm_live_format(char *buf, size_t cap, const char *verdict, const char *action,
		      const char *resource, const char *rule)
{
	struct out o = { buf, 0, cap };
	if (cap < 2)
		return 0;
	put(&o, "cairn: ", 7);
	put_safe(&o, verdict);
	put(&o, "  ", 2);
	put_safe(&o, action);
	put(&o, "  ", 2);
	put_safe(&o, resource);
	put(&o, "  [", 3);
	const char *r = rule ? rule : "";
	size_t len = strlen(r);
	if (len >= 2 && r[0] == '<' && r[len - 1] == '>') {
		char tmp[256];
		size_t k = len - 2 < sizeof(tmp) - 1 ? len - 2 : sizeof(tmp) - 1;
		memcpy(tmp, r + 1, k);
		tmp[k] = '\0';
		put_safe(&o, tmp);
	} else {
		put_safe(&o, r);
	}
	put(&o, "]", 1);
	/* the newline always fits: the line is cut before it */
	if (o.n + 1 >= cap)
		o.n = cap - 2;
	o.p[o.n++] = '\n';
	o.p[o.n] = '\0';
	return o.n;
}
