/*
 * load.c - read the logs named on the command line into one model, for
 * `memflow stats`, `memflow render` and `memflow run`'s rendering at exit.
 * A damaged log still gives everything before the damage; the damage and
 * every other warning of the model are printed on stderr.
 */
#include <stdint.h>
#include <stdio.h>

#include "commands.h"
#include "escape.h"
#include "model.h"

struct mf_model *cli_load_model(int n, char **paths, unsigned long long until_ns)
{
    char err[1024];
    mf_model *m = mf_model_load((const char *const *)paths, n > 0 ? (size_t)n : 0,
                                until_ns == (unsigned long long)-1 ? UINT64_MAX : until_ns,
                                err, sizeof err);
    if (!m) {
        fprintf(stderr, "memflow: %s\n", err);
        return NULL;
    }
    mf_sink err_sink;
    mf_sink_fd(&err_sink, 2);
    for (size_t i = 0; i < m->n_warnings; i++) {
        mf_sink_puts(&err_sink, "memflow: warning: ");
        mf_escape_text(&err_sink, m->warnings[i], MF_ESCAPE_WHOLE);
        mf_sink_putc(&err_sink, '\n');
    }
    mf_sink_flush(&err_sink);
    mf_sink_free(&err_sink);
    return m;
}
