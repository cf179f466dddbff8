/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Host stand-in for libbpf's bpf_helpers.h: the macros and the four BPF
 * helpers bbr3.bpf.c uses, so that its logic compiles natively for the
 * tests in bpf/test (logic.c defines the helpers). Never in the object.
 */
#ifndef BBR3_TEST_BPF_HELPERS_H
#define BBR3_TEST_BPF_HELPERS_H

#define SEC(name)
#define __uint(name, val) int (*name)[val]
#define __type(name, val) __typeof__(val) *name
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

void *bpf_sk_storage_get(void *map, void *sk, void *value, u64 flags);
long bpf_sk_storage_delete(void *map, void *sk);
void *bpf_map_lookup_elem(void *map, const void *key);
u32 bpf_get_prandom_u32(void);

#endif
