/* med_mem.h - reading and writing a notifying process's memory.
 *
 * process_vm_readv/writev with the caller's pid, page by page so that a
 * string ending just before an unmapped page is still read.  Nothing read
 * here is trusted until the notification is checked valid after the read
 * (SECCOMP_IOCTL_NOTIF_ID_VALID): the pid may have been reused. */
#ifndef CAIRN_MED_MEM_H
#define CAIRN_MED_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Read the NUL-terminated string at addr into buf[0, len).  Returns its
 * length (without the NUL), -ENAMETOOLONG when no NUL came within len - 1
 * bytes, -EFAULT when addr (or a page it spans) cannot be read, -ESRCH when
 * the process is gone. */
ssize_t med_read_str(pid_t pid, uint64_t addr, char *buf, size_t len);

/* Read exactly len bytes at addr: 0, -EFAULT, -ESRCH. */
int med_read(pid_t pid, uint64_t addr, void *buf, size_t len);

/* Write exactly len bytes at addr: 0, -EFAULT, -ESRCH. */
int med_write(pid_t pid, uint64_t addr, const void *buf, size_t len);

#endif
