/* med_bpf.c - a classic BPF interpreter for seccomp programs (med_bpf.h).  The
 * instruction set is the one seccomp_check_filter admits: loads of 32-bit
 * words of seccomp_data, the scratch memory, ALU and jumps on K and X. */
#include <stdbool.h>
#include <string.h>

#include "med_bpf.h"

#define KILL SECCOMP_RET_KILL_PROCESS

uint32_t med_bpf_run(const struct sock_filter *prog, size_t len, const struct seccomp_data *data)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = { 0 };
	unsigned char raw[sizeof(*data)];
	memcpy(raw, data, sizeof(raw));

	for (size_t pc = 0; pc < len; pc++) {
		const struct sock_filter *f = &prog[pc];
		uint32_t k = f->k, src = BPF_SRC(f->code) == BPF_X ? x : k, w;
		switch (BPF_CLASS(f->code)) {
		case BPF_LD:
			switch (f->code) {
			case BPF_LD | BPF_W | BPF_ABS:
				if (k > sizeof(raw) - 4 || (k & 3))
					return KILL;
				memcpy(&w, raw + k, 4);
				a = w;
				break;
			case BPF_LD | BPF_W | BPF_LEN: a = sizeof(raw); break;
			case BPF_LD | BPF_IMM: a = k; break;
			case BPF_LD | BPF_MEM:
				if (k >= BPF_MEMWORDS)
					return KILL;
				a = mem[k];
				break;
			default: return KILL;
			}
			break;
		case BPF_LDX:
			switch (f->code) {
			case BPF_LDX | BPF_W | BPF_LEN: x = sizeof(raw); break;
			case BPF_LDX | BPF_IMM: x = k; break;
			case BPF_LDX | BPF_MEM:
				if (k >= BPF_MEMWORDS)
					return KILL;
				x = mem[k];
				break;
			default: return KILL;
			}
			break;
		case BPF_ST:
		case BPF_STX:
			if (k >= BPF_MEMWORDS)
				return KILL;
			mem[k] = BPF_CLASS(f->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(f->code)) {
			case BPF_ADD: a += src; break;
			case BPF_SUB: a -= src; break;
			case BPF_MUL: a *= src; break;
			case BPF_DIV:
				if (src == 0)
					return KILL;
				a /= src;
				break;
			case BPF_MOD:
				if (src == 0)
					return KILL;
				a %= src;
				break;
			case BPF_AND: a &= src; break;
			case BPF_OR: a |= src; break;
			case BPF_XOR: a ^= src; break;
			case BPF_LSH: a = src < 32 ? a << src : 0; break;
			case BPF_RSH: a = src < 32 ? a >> src : 0; break;
			case BPF_NEG: a = -a; break;
			default: return KILL;
			}
			break;
		case BPF_JMP: {
			size_t to;
			bool t;
			if (BPF_OP(f->code) == BPF_JA) {
				if (k >= len - pc - 1)
					return KILL;
				pc += k;
				break;
			}
			switch (BPF_OP(f->code)) {
			case BPF_JEQ: t = a == src; break;
			case BPF_JGT: t = a > src; break;
			case BPF_JGE: t = a >= src; break;
			case BPF_JSET: t = (a & src) != 0; break;
			default: return KILL;
			}
			to = t ? f->jt : f->jf;
			if (to >= len - pc - 1)
				return KILL;
			pc += to;
			break;
		}
		case BPF_RET:
			return BPF_RVAL(f->code) == BPF_A ? a : k;
		case BPF_MISC:
			if (BPF_MISCOP(f->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			return KILL;
		}
	}
	return KILL;      /* fell off the end: the kernel refuses such a program */
}
