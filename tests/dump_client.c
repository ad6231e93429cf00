/*
 * dump_client.c - a program that links only libmemflow (with --as-needed)
 * and uses memflow_dump()/memflow_dumps(), for tests/boundary.sh:
 *
 *   dump_client DIR maps        dump, then print whether Cairo or the
 *                               analysis got loaded into this process
 *   dump_client DIR continuous  continuous_dump every 0.1 s; wait until
 *                               DIR/stats.txt shows the block
 *   dump_client DIR reuse       dumps, close every descriptor, open a file
 *                               until it takes the server's old number,
 *                               dumps again: the file must stay empty
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "memflow.h"

static int start(const char *dir, int continuous)
{
    const char *keys[] = { "path", "formats", "continuous_dump", "dump_period" };
    const char *vals[] = { dir, "stats.txt", continuous ? "1" : "0", "0.1" };
    if (memflow_set_config(4, keys, vals) < 0 || memflow_set_state(MEMFLOW_RUN) < 0) {
        fprintf(stderr, "dump_client: %s\n", memflow_last_error());
        return -1;
    }
    memflow_scope_push("boundary", 0);
    memflow_record_alloc("cpu/0", (void *)0x1000, 4096, 4096, "block", 0);
    memflow_scope_pop();
    return 0;
}

/* Whether a mapping of this process names text. */
static int mapped(const char *text)
{
    char line[4096];
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    while (f && fgets(line, sizeof line, f))
        found |= strstr(line, text) != NULL;
    if (f)
        fclose(f);
    return found;
}

static int check_maps(void)
{
    if (memflow_dump(0) < 0) {
        fprintf(stderr, "dump_client: %s\n", memflow_last_error());
        return 1;
    }
    printf("cairo %s\nrsvg %s\n", mapped("libcairo") ? "loaded" : "absent",
           mapped("librsvg") ? "loaded" : "absent");
    return 0;
}

static int wait_continuous(const char *dir)
{
    char path[4096], buf[65536];
    snprintf(path, sizeof path, "%s/stats.txt", dir);
    for (int i = 0; i < 300; i++) {
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = 0;
        if (strstr(buf, "boundary:")) {
            puts("continuous dump seen");
            return 0;
        }
        usleep(50000);
    }
    puts("no continuous dump");
    return 1;
}

/* The lowest socket descriptor >= 3 of this process, or -1. */
static int a_socket(void)
{
    int found = -1;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        int fd = atoi(e->d_name);
        struct stat st;
        if (fd >= 3 && fd != dirfd(d) && fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) &&
            (found < 0 || fd < found))
            found = fd;
    }
    if (d)
        closedir(d);
    return found;
}

static int reuse(const char *dir)
{
    if (!memflow_dumps(0, "table", "total", 0))
        return 1;
    int old = a_socket();
    if (old < 0) {
        puts("no server socket");
        return 1;
    }
    for (int fd = 3; fd < 1024; fd++)
        close(fd);
    char path[4096];
    snprintf(path, sizeof path, "%s/own-file", dir);
    int fd;
    while ((fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644)) >= 0 && fd < old)
        ;
    if (fd != old) {
        printf("could not take descriptor %d\n", old);
        return 1;
    }
    const char *text = memflow_dumps(0, "table", "total", 0);
    struct stat st;
    stat(path, &st);
    printf("dumps %s, own file %lld bytes\n", text && strstr(text, "boundary:") ? "ok" : "failed",
           (long long)st.st_size);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    const char *dir = argv[1], *mode = argv[2];
    if (start(dir, !strcmp(mode, "continuous")) < 0)
        return 1;
    if (!strcmp(mode, "maps"))
        return check_maps();
    if (!strcmp(mode, "continuous"))
        return wait_continuous(dir);
    if (!strcmp(mode, "reuse"))
        return reuse(dir);
    return 2;
}
