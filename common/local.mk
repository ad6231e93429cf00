# common/ - what libmemflow and the memflow program both compile: the log
# format (log_format.h), its checksum (CRC-32C), device names, run ids,
# mkdir -p (paths), descriptors kept at high numbers, the staging file's
# layout and slot writing (stage_slots), the compiler macros, the
# monotonic clock in ns, and the
# configuration keys (config) with the one list of outputs (outputs_table.h).  Not a library of its own: each binary
# compiles these files into itself, so the memflow program never loads
# libmemflow.  Stateless but for config.c's live configuration, of which
# each binary has its own copy.
COMMON_SOURCES = \
	common/compiler.h common/log_format.h common/monotonic.h \
	common/checksum.c common/checksum.h \
	common/device.c common/device.h \
	common/paths.c common/paths.h \
	common/run_id.c common/run_id.h \
	common/descriptor.c common/descriptor.h \
	common/stage_slots.c common/stage_slots.h
# The configuration: libmemflow (memflow_set_config, MEMFLOW_<KEY>) and the
# memflow program (memflow run --set, memflow render --formats); not the
# analysis.
CONFIG_SOURCES = common/config.c common/config.h common/outputs_table.h
