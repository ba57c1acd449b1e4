/* The io-ehh step written by hand as plain C: the limit contender of benchmarks/io_engines.py.

   The model of hwbench/plugins/kernels/io_ehh/model.py (De Gruijl et al. 2012; the equations of
   the study's spec), float32, forward Euler, written to be as fast as a plain C loop gets on one
   core, so that the benchmark can say how far hwbench's compiled step is from it:

   - one pass over the cells per step, every state row read once and written once, no temporaries
     in memory: the compiler keeps the whole cell in registers and vectorises the loop (GCC -O3
     -march=native: 16 cells per AVX-512 instruction), restrict pointers so it may;
   - exp as an inline range reduction and polynomial (Cephes' expf coefficients, about 1 ulp), not
     libm's expf: a call per exp would keep the loop scalar;
   - the gap junctions as hwbench stores them (pass-major lists, targets ranked by in-degree and
     numbered so): pass k gathers its sources' voltages (scalar loads), then adds every target's
     k-th junction current to a prefix of the targets in a vectorised loop, each target's terms
     summed in list order as hwbench sums them;
   - the spike rule (first upward crossing of 0 mV per sample window) and the probe (V_soma every
     window) recorded as hwbench's engines record them, so both do the same work.

   It computes the same model as hwbench's JAX engine, not the same bits: its exp is not XLA's,
   and GCC and XLA contract different a*b + c into fused multiply-adds (which round once where a
   multiply and an add round twice). Like XLA, it multiplies by a constant's reciprocal (rounded
   to float32 at compile time) where the model divides by the constant, which leaves 21 divisions
   per cell, as in XLA's optimised program. The trajectories agree to float32 tolerance
   (tests/engines/test_c_limit_step.py). */

#include <stdint.h>
#include <string.h>

enum {
    V_SOMA, SOMA_K, SOMA_L, SOMA_H, SOMA_N, SOMA_X, V_AXON, AXON_H, AXON_X,
    V_DEND, DEND_CA, DEND_R, DEND_S, DEND_Q, NROWS
};

/* Scalar parameters (hwbench's DEFAULT_PARAMS order of use), with the ratios hwbench computes
   in double precision before the float32 product precomputed the same way by the caller. */
typedef struct {
    float g_ls, g_la, g_ld, g_int_p1, g_int_1mp2, g_int_p2, g_int_1mp1;
    float g_CaL, g_Na_s, g_Kdr_s, g_K_s, g_Na_a, g_K_a, g_CaH, g_K_Ca, g_h, g_gj;
    float V_Na, V_K, V_Ca, V_h, V_l, S, dt;
} Params;

static inline float exp_f(float x) {
    /* exp(x) = 2^n exp(r), n = round(x / ln 2), r = x - n ln 2 (in two parts), exp(r) by a
       degree-6 polynomial; NaN passes through (its comparisons are false). */
    x = x > 88.3762626647949f ? 88.3762626647949f : x;
    x = x < -87.3365447504019f ? -87.3365447504019f : x;
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f; /* round to nearest: 1.5 * 2^23 */
    float r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    int32_t bits = ((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    return p * scale;
}

static inline float sig(float V, float a, float b) { return 1.0f / (1.0f + exp_f(-(V + a) * (1.0f / b))); }

/* x[index[i]] for i < count, with scalar loads: AVX-512 gathers are slower here (measured) */
__attribute__((optimize("no-tree-vectorize"))) static void gather(int count, const float *restrict x,
                                                                  const int32_t *restrict index,
                                                                  float *restrict out) {
    for (int i = 0; i < count; i++) out[i] = x[index[i]];
}

/* Sum of the gap-junction currents into each target (before g_gj), pass by pass: the sources'
   voltages gathered first, then one vectorised loop (gathering inside it was 2.4x slower). */
static void junctions(int n, const float *restrict Vd, int npass, const int32_t *restrict counts,
                      const int32_t *restrict src, float *restrict gj, float *restrict v_src) {
    for (int i = 0; i < n; i++) gj[i] = 0.0f;
    int offset = 0;
    for (int k = 0; k < npass; k++) {
        int count = counts[k];
        gather(count, Vd, src + offset, v_src);
        for (int i = 0; i < count; i++) {
            float dv = v_src[i] - Vd[i];
            gj[i] += dv * (0.2f + 0.8f * exp_f(-(dv * dv) * (1.0f / 100.0f)));
        }
        offset += count;
    }
}

static void step(int n, const float *restrict in, float *restrict out, const float *restrict I_app,
                 const float *restrict gj, const Params *restrict p, int32_t *restrict first, int32_t s) {
    /* every row through a pointer of its own, and ivdep: without it GCC 12 leaves this loop
       scalar ("no vectype"), restrict notwithstanding */
    const float *restrict i_v_soma = in + V_SOMA * n;
    const float *restrict i_soma_k = in + SOMA_K * n;
    const float *restrict i_soma_l = in + SOMA_L * n;
    const float *restrict i_soma_h = in + SOMA_H * n;
    const float *restrict i_soma_n = in + SOMA_N * n;
    const float *restrict i_soma_x = in + SOMA_X * n;
    const float *restrict i_v_axon = in + V_AXON * n;
    const float *restrict i_axon_h = in + AXON_H * n;
    const float *restrict i_axon_x = in + AXON_X * n;
    const float *restrict i_v_dend = in + V_DEND * n;
    const float *restrict i_dend_ca = in + DEND_CA * n;
    const float *restrict i_dend_r = in + DEND_R * n;
    const float *restrict i_dend_s = in + DEND_S * n;
    const float *restrict i_dend_q = in + DEND_Q * n;
    float *restrict o_v_soma = out + V_SOMA * n;
    float *restrict o_soma_k = out + SOMA_K * n;
    float *restrict o_soma_l = out + SOMA_L * n;
    float *restrict o_soma_h = out + SOMA_H * n;
    float *restrict o_soma_n = out + SOMA_N * n;
    float *restrict o_soma_x = out + SOMA_X * n;
    float *restrict o_v_axon = out + V_AXON * n;
    float *restrict o_axon_h = out + AXON_H * n;
    float *restrict o_axon_x = out + AXON_X * n;
    float *restrict o_v_dend = out + V_DEND * n;
    float *restrict o_dend_ca = out + DEND_CA * n;
    float *restrict o_dend_r = out + DEND_R * n;
    float *restrict o_dend_s = out + DEND_S * n;
    float *restrict o_dend_q = out + DEND_Q * n;
#pragma GCC ivdep
    for (int i = 0; i < n; i++) {
        /* soma */
        float V = i_v_soma[i], k = i_soma_k[i], l = i_soma_l[i], h = i_soma_h[i];
        float nn = i_soma_n[i], x = i_soma_x[i];
        float I_leak = p->g_ls * (V - p->V_l);
        float I_ds = p->g_int_p1 * (V - i_v_dend[i]);
        float I_as = p->g_int_1mp2 * (V - i_v_axon[i]);
        float I_CaL = p->g_CaL * (k * k * k) * l * (V - p->V_Ca);
        float dk = sig(V, 61.0f, 4.2f) - k;
        float l_inf = 1.0f / (1.0f + exp_f((V + 85.0f) * (1.0f / 8.5f)));
        float tau_l = 20.0f * exp_f((V + 160.0f) * (1.0f / 30.0f)) / (1.0f + exp_f((V + 84.0f) * (1.0f / 7.3f)))
                      + 35.0f;
        float dl = (l_inf - l) / tau_l;
        float m = sig(V, 30.0f, 5.5f);
        float h_inf = 1.0f / (1.0f + exp_f((V + 70.0f) * (1.0f / 5.8f)));
        float I_Na = p->g_Na_s * (m * m * m) * h * (V - p->V_Na);
        float dh = (h_inf - h) / (3.0f * exp_f(-(V + 40.0f) * (1.0f / 33.0f)));
        float n2 = nn * nn;
        float I_Kdr = p->g_Kdr_s * (n2 * n2) * (V - p->V_K);
        float dn = (sig(V, 3.0f, 10.0f) - nn) / (5.0f + 47.0f * exp_f((V + 50.0f) * (1.0f / 900.0f)));
        float x2 = x * x;
        float I_K = p->g_K_s * (x2 * x2) * (V - p->V_K);
        float ax = 0.13f * (V + 25.0f) / (1.0f - exp_f(-(V + 25.0f) * (1.0f / 10.0f)));
        float bx = 1.69f * exp_f(-(V + 35.0f) * (1.0f / 80.0f));
        float dx = (ax / (ax + bx) - x) * (ax + bx);
        float dVs = -p->S * (I_leak + I_ds + I_as + I_K + I_Kdr + I_Na + I_CaL);
        /* axon */
        float U = i_v_axon[i], ah = i_axon_h[i], axx = i_axon_x[i];
        float aI_leak = p->g_la * (U - p->V_l);
        float I_sa = p->g_int_p2 * (U - V);
        float am = sig(U, 30.0f, 5.5f);
        float ah_inf = 1.0f / (1.0f + exp_f((U + 60.0f) * (1.0f / 5.8f)));
        float aI_Na = p->g_Na_a * (am * am * am) * ah * (U - p->V_Na);
        float dah = (ah_inf - ah) / (1.5f * exp_f(-(U + 40.0f) * (1.0f / 33.0f)));
        float ax2 = axx * axx;
        float aI_K = p->g_K_a * (ax2 * ax2) * (U - p->V_K);
        float aax = 0.13f * (U + 25.0f) / (1.0f - exp_f(-(U + 25.0f) * (1.0f / 10.0f)));
        float abx = 1.69f * exp_f(-(U + 35.0f) * (1.0f / 80.0f));
        float dax = (aax / (aax + abx) - axx) * (aax + abx);
        float dVa = -p->S * (aI_leak + I_sa + aI_Na + aI_K);
        /* dendrite */
        float W = i_v_dend[i], Ca = i_dend_ca[i], r = i_dend_r[i];
        float sk = i_dend_s[i], q = i_dend_q[i];
        float dI_leak = p->g_ld * (W - p->V_l);
        float I_sd = p->g_int_1mp1 * (W - V);
        float I_CaH = p->g_CaH * (r * r) * (W - p->V_Ca);
        float ar = 1.7f / (1.0f + exp_f(-(W - 5.0f) * (1.0f / 13.9f)));
        float br = 0.02f * (W + 8.5f) / (exp_f((W + 8.5f) * (1.0f / 5.0f)) - 1.0f);
        float dr = 0.2f * (ar / (ar + br) - r) * (ar + br);
        float I_KCa = p->g_K_Ca * sk * (W - p->V_K);
        float drive = 2e-5f * Ca;
        float as = drive < 0.01f ? drive : 0.01f;
        float ds = (as / (as + 0.015f) - sk) * (as + 0.015f);
        float I_h = p->g_h * q * (W - p->V_h);
        float q_inf = 1.0f / (1.0f + exp_f((W + 80.0f) * (1.0f / 4.0f)));
        float dq = (q_inf - q) * (exp_f(-0.086f * W - 14.6f) + exp_f(0.070f * W - 1.87f));
        float dCa = -3.0f * I_CaH - 0.075f * Ca;
        float I_total = dI_leak + I_sd + I_CaH + I_KCa + I_h - I_app[i];
        I_total = I_total - p->g_gj * gj[i]; /* gj is all zeros without junctions: I_total unchanged */
        float dVd = -p->S * I_total;
        /* forward Euler, every row from the old state */
        float dt = p->dt, Vn = V + dt * dVs;
        o_v_soma[i] = Vn;
        o_soma_k[i] = k + dt * dk;
        o_soma_l[i] = l + dt * dl;
        o_soma_h[i] = h + dt * dh;
        o_soma_n[i] = nn + dt * dn;
        o_soma_x[i] = x + dt * dx;
        o_v_axon[i] = U + dt * dVa;
        o_axon_h[i] = ah + dt * dah;
        o_axon_x[i] = axx + dt * dax;
        o_v_dend[i] = W + dt * dVd;
        o_dend_ca[i] = Ca + dt * dCa;
        o_dend_r[i] = r + dt * dr;
        o_dend_s[i] = sk + dt * ds;
        o_dend_q[i] = q + dt * dq;
        /* spike rule: the first upward crossing of 0 mV in this window */
        first[i] = ((first[i] < 0) & (V < 0.0f) & (Vn >= 0.0f)) ? s : first[i];
    }
}

/* nsamples windows of `every` steps from `state` (14 x n, updated in place; `spare` is a second
   buffer of the same size, `gj` 2 x n floats of scratch); V_soma after each window into probes,
   the first crossing of each window (its step offset, or -1) into spikes. */
void io_ehh_run(int n, int nsamples, int every, float *restrict state, float *restrict spare,
                const float *restrict I_app, int npass, const int32_t *restrict counts, const int32_t *restrict src,
                const Params *restrict p, float *restrict gj, float *restrict probes, int32_t *restrict spikes) {
    float *a = state, *b = spare;
    for (int w = 0; w < nsamples; w++) {
        int32_t *restrict first = spikes + (int64_t)w * n;
        for (int i = 0; i < n; i++) first[i] = -1;
        for (int s = 0; s < every; s++) {
            if (npass > 0) junctions(n, a + V_DEND * n, npass, counts, src, gj, gj + n);
            step(n, a, b, I_app, gj, p, first, s);
            float *t = a;
            a = b;
            b = t;
        }
        memcpy(probes + (int64_t)w * n, a + V_SOMA * n, sizeof(float) * n);
    }
    if (a != state) memcpy(state, a, sizeof(float) * NROWS * n);
}

/* The machine's limit, measured: fp32 FLOP/s of one core running independent fused
   multiply-adds on 64-byte vectors (GCC's vector extension; the widest the target has, 16 lanes
   with AVX-512), 12 accumulators so that each FMA unit always has one ready. */
typedef float v16 __attribute__((vector_size(64)));

float fma_peak_kernel(long reps, float *out) {
    v16 acc[12];
    for (int j = 0; j < 12; j++)
        for (int i = 0; i < 16; i++) acc[j][i] = (float)(i + j) * 1e-3f;
    const v16 a = acc[0] * 0.0f + 0.999999f, c = acc[0] * 0.0f + 1e-7f;
    for (long r = 0; r < reps; r++) {
#pragma GCC unroll 12
        for (int j = 0; j < 12; j++) acc[j] = acc[j] * a + c;
    }
    float sum = 0.0f;
    for (int j = 0; j < 12; j++)
        for (int i = 0; i < 16; i++) sum += acc[j][i];
    *out = sum;
    return sum;
}

/* Copy bandwidth at a given size: `reps` copies of n floats from src to dst (read + write). */
void copy_kernel(long reps, int n, const float *restrict src, float *restrict dst) {
    for (long r = 0; r < reps; r++) {
        memcpy(dst, src, sizeof(float) * n);
        __asm__ volatile("" : : "r"(dst) : "memory"); /* each copy happens */
    }
}
