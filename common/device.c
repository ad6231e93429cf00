/*
 * device.c - device names of the log format: "cpu/0", "gpu/3" <-> the 16-bit
 * device of records (log_format.h).  Shared by the public API (device names
 * given by programs) and the analysis (device names in every output).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "log_format.h"

const char *mf_device_name(uint16_t device, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%u", MF_DEVICE_KIND(device) == MF_DEVICE_GPU ? "gpu" : "cpu",
             MF_DEVICE_INDEX(device));
    return buf;
}

int mf_device_parse(const char *text, uint16_t *device)
{
    unsigned kind;
    if (strncmp(text, "cpu/", 4) == 0)
        kind = MF_DEVICE_CPU;
    else if (strncmp(text, "gpu/", 4) == 0)
        kind = MF_DEVICE_GPU;
    else
        return -1;
    const char *p = text + 4;
    if (*p < '0' || *p > '9')
        return -1;
    char *end;
    unsigned long index = strtoul(p, &end, 10);
    if (*end || index > 255 || (kind == MF_DEVICE_CPU && index != 0))
        return -1;
    *device = MF_DEVICE(kind, index);
    return 0;
}
