/*
 * device.h - device names of the log format: "cpu/0", "gpu/N" (MXNet's
 * names) and the 16-bit device of records (MF_DEVICE in log_format.h).
 */
#ifndef MEMFLOW_DEVICE_H
#define MEMFLOW_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/* Format a device as "cpu/0" / "gpu/3" into buf (at least 16 bytes); returns buf. */
MF_EXPORT const char *mf_device_name(uint16_t device, char *buf, size_t len);

/*
 * Parse "cpu/0" or "gpu/N" (N < 256) into *device.  Returns 0, or -1 if the
 * text is not a device name.
 */
MF_EXPORT int mf_device_parse(const char *text, uint16_t *device);

#endif /* MEMFLOW_DEVICE_H */
