/*
 * nvtx.h - what the two halves of the NVTX injection library share:
 * nvtx.c (ranges, marks, domains, registered strings: the core modules) and
 * nvtx_mem.c (the memory extension: heaps and regions as sub-blocks).
 * Internal to libmemflow-nvtx.so; nothing here is exported.
 */
#ifndef MEMFLOW_GPU_NVTX_H
#define MEMFLOW_GPU_NVTX_H

#include <stddef.h>
#include <stdint.h>

#include <nvtx3/nvToolsExt.h>

#define NAME_MAX_BYTES 4096   /* UTF-8 bytes of a name converted from wide text */

/*
 * The text of an NVTX message as UTF-8: ASCII as it is, wide text converted
 * into buf (cap bytes, truncated), a registered string's text (its handle is
 * a string id); "" for NULL text or a type NVTX does not define.
 */
const char *mf_nvtx_message(int32_t type, const nvtxMessageValue_t *value, char *buf,
                            size_t cap);

/* The string id of a domain (its handle is one; 0: the default domain). */
uint32_t mf_nvtx_domain_id(nvtxDomainHandle_t domain);

#endif /* MEMFLOW_GPU_NVTX_H */
