/* med_mem.c - med_mem.h. */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "med_mem.h"

#define PAGE 4096u

static int vm_errno(void)
{
	return errno == ESRCH ? -ESRCH : -EFAULT;
}

ssize_t med_read_str(pid_t pid, uint64_t addr, char *buf, size_t len)
{
	size_t got = 0;
	if (addr == 0)
		return -EFAULT;
	while (got + 1 < len) {
		/* up to the end of addr's page, so a fault names only later pages */
		size_t chunk = PAGE - (size_t)((addr + got) % PAGE);
		if (chunk > len - 1 - got)
			chunk = len - 1 - got;
		struct iovec l = { buf + got, chunk };
		struct iovec r = { (void *)(uintptr_t)(addr + got), chunk };
		ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
		if (n <= 0)
			return n < 0 ? vm_errno() : -EFAULT;
		char *nul = memchr(buf + got, '\0', (size_t)n);
		if (nul != NULL)
			return (ssize_t)(nul - buf);
		got += (size_t)n;
	}
	buf[len - 1] = '\0';
	return -ENAMETOOLONG;
}

int med_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len };
	struct iovec r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	if (n < 0)
		return vm_errno();
	return (size_t)n == len ? 0 : -EFAULT;
}

int med_write(pid_t pid, uint64_t addr, const void *buf, size_t len)
{
	struct iovec l = { (void *)buf, len };
	struct iovec r = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_writev(pid, &l, 1, &r, 1, 0);
	if (n < 0)
		return vm_errno();
	return (size_t)n == len ? 0 : -EFAULT;
}
