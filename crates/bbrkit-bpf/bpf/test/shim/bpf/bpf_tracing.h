/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Host stand-in for libbpf's bpf_tracing.h: BPF_PROG(name, args...) is a
 * plain function the tests call with those arguments. */
#ifndef BBR3_TEST_BPF_TRACING_H
#define BBR3_TEST_BPF_TRACING_H
#define BPF_PROG(name, args...) name(args)
#endif
