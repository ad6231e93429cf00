/*
 * descriptor.h - memflow's own descriptors, out of the program's way: the
 * log (runtime/log_writer.c) and the staging file (cli/stage_drain.c) sit
 * at high numbers, so that a program that uses low numbers, or closes and
 * reuses them, meets none of memflow's.
 */
#ifndef MEMFLOW_DESCRIPTOR_H
#define MEMFLOW_DESCRIPTOR_H

/* Move fd to a high number (close-on-exec) below the descriptor limit;
 * returns the new number, or fd itself if none is free. */
int mf_descriptor_move_high(int fd);

#endif /* MEMFLOW_DESCRIPTOR_H */
