/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A hostile C++ name: hot(P<P<...P<int, int>...>>), 30 levels, where each level's two
 * arguments are the level below (a substitution, "S<n>_", names it the second time). g++
 * mangles it in 215 bytes; demangled, each level doubles: 2^30 copies of "P<int, int>", ~30 GB.
 * Made by g++ from
 *   template<class A, class B> struct P {};
 *   typedef P<int, int> T1; typedef P<T1, T1> T2; ... typedef P<T29, T29> T30;
 *   void hot(T30) {}
 */
#ifndef BPFSIGHT_DEMANGLE_BOMB_H
#define BPFSIGHT_DEMANGLE_BOMB_H

#define DEMANGLE_BOMB_30                                                                            \
	"_Z3hot1PIS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_IS_" \
	"IS_IS_IiiES0_ES1_ES2_ES3_ES4_ES5_ES6_ES7_ES8_ES9_ESA_ESB_ESC_ESD_ESE_ESF_ESG_ESH_ESI_ESJ_" \
	"ESK_ESL_ESM_ESN_ESO_ESP_ESQ_ESR_ESS_E"

#endif /* BPFSIGHT_DEMANGLE_BOMB_H */
