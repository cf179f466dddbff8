/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Host stand-in for libbpf's bpf_core_read.h: no relocation on a host, the
 * bitfield is read as the compiler lays it out. */
#ifndef BBR3_TEST_BPF_CORE_READ_H
#define BBR3_TEST_BPF_CORE_READ_H
#define BPF_CORE_READ_BITFIELD(s, field) ((s)->field)
#endif
