/*
 * descriptor.c - memflow's own descriptors at high numbers (descriptor.h).
 * Stateless; shared by the runtime and the memflow program.
 */
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "descriptor.h"

/* Where memflow's descriptors go: high, out of the way of the program's
 * own files, below its descriptor limit. */
static int high_descriptor_floor(void)
{
    struct rlimit rl;
    rlim_t floor = 1000;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        rl.rlim_cur - rl.rlim_cur / 8 < floor)
        floor = rl.rlim_cur - rl.rlim_cur / 8;
    return (int)floor;
}

int mf_descriptor_move_high(int fd)
{
    int high = fcntl(fd, F_DUPFD_CLOEXEC, high_descriptor_floor());
    if (high < 0)
        return fd;
    close(fd);
    return high;
}
