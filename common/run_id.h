/*
 * run_id.h - the run id: 16 random bytes in every log header saying which
 * run the process belongs to.  `memflow run` makes one per run and hands it
 * to the program as MEMFLOW_RUN_ID (32 hex digits); a process that has none
 * makes its own, and forked children keep their parent's.  memflow run then
 * renders exactly the logs whose header carries its id.
 */
#ifndef MEMFLOW_RUN_ID_H
#define MEMFLOW_RUN_ID_H

#include <stdint.h>

#include "compiler.h"

#define MF_RUN_ID_BYTES 16
#define MF_RUN_ID_HEX (2 * MF_RUN_ID_BYTES + 1) /* with the NUL */

/* Fill id with fresh random bytes (getrandom; never all zero).  No malloc. */
MF_EXPORT void mf_run_id_fresh(uint8_t id[MF_RUN_ID_BYTES]);

/* Parse exactly 32 hex digits (either case).  Returns 0, or -1 and leaves
 * id unspecified.  No malloc. */
MF_EXPORT int mf_run_id_parse(const char *hex, uint8_t id[MF_RUN_ID_BYTES]);

/* id as 32 lower-case hex digits and a NUL. */
MF_EXPORT void mf_run_id_format(const uint8_t id[MF_RUN_ID_BYTES], char hex[MF_RUN_ID_HEX]);

#endif
