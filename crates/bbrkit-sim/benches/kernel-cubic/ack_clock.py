#!/usr/bin/env python3
"""Independent check of bbrkit-cc's CUBIC (docs/sim-validation.md, section 2).

A line-by-line transcription of Linux's `bictcp_update` (net/ipv4/tcp_cubic.c,
HZ = 1000, tcp_friendliness on, fast convergence irrelevant here) and
`tcp_cong_avoid_ai`, fed the same ideal ACK clock as
`bbrkit_sim::validation::ack_clock_growth`: after a loss at cwnd W
(ssthresh = W*717/1024, W_max = W), one ACK per 2 packets spread evenly over
a 20 ms RTT, min RTT 20 ms, always cwnd-limited. Prints cwnd growth per RTT
over 10 and 30 RTTs for CUBIC and over 10 RTTs for Reno.
usage: ack_clock.py
"""


def icbrt(a):
    x = round(a ** (1 / 3)) if a > 0 else 0
    while x ** 3 > a:
        x -= 1
    while (x + 1) ** 3 <= a:
        x += 1
    return x


def cong_avoid_ai(st, w, acked):
    w = max(w, 1)
    if st["cnt_acc"] >= w:
        st["cnt_acc"] = 0
        st["cwnd"] += 1
    st["cnt_acc"] += acked
    if st["cnt_acc"] >= w:
        d = st["cnt_acc"] // w
        st["cnt_acc"] -= d * w
        st["cwnd"] += d


def cubic_growth(w_loss, rtts, rtt_ms=20, hz=1000):
    cube_factor = (1 << 40) // 410
    wmax = w_loss
    st = {"cwnd": max(w_loss * 717 // 1024, 2), "cnt_acc": 0}
    start = st["cwnd"]
    ca = dict(cnt=0, last_cwnd=0, last_time=0, epoch=None, ack_cnt=0, tcp_cwnd=0, K=0, origin=0)
    delay_min_us = rtt_ms * 1000
    now_ns = 10**9
    for _ in range(rtts):
        acks = max(1, st["cwnd"] // 2)
        for _ in range(acks):
            now_ns += rtt_ms * 10**6 // acks
            now = now_ns * hz // 10**9
            cwnd, acked = st["cwnd"], 2
            ca["ack_cnt"] += acked
            if not (ca["last_cwnd"] == cwnd and now - ca["last_time"] <= hz // 32):
                if ca["epoch"] is None or now != ca["last_time"]:
                    ca["last_cwnd"], ca["last_time"] = cwnd, now
                    if ca["epoch"] is None:
                        ca["epoch"], ca["ack_cnt"], ca["tcp_cwnd"] = now, acked, cwnd
                        if wmax <= cwnd:
                            ca["K"], ca["origin"] = 0, cwnd
                        else:
                            ca["K"], ca["origin"] = icbrt(cube_factor * (wmax - cwnd)), wmax
                    t = now - ca["epoch"] + -(-delay_min_us * hz // 10**6)
                    t = (t << 10) // hz
                    offs = abs(t - ca["K"])
                    delta = (410 * offs ** 3) >> 40
                    target = ca["origin"] - delta if t < ca["K"] else ca["origin"] + delta
                    ca["cnt"] = cwnd // (target - cwnd) if target > cwnd else 100 * cwnd
                d = max(1, (cwnd * 15) >> 3)
                while ca["ack_cnt"] > d:
                    ca["ack_cnt"] -= d
                    ca["tcp_cwnd"] += 1
                if ca["tcp_cwnd"] > cwnd:
                    ca["cnt"] = min(ca["cnt"], cwnd // (ca["tcp_cwnd"] - cwnd))
                ca["cnt"] = max(ca["cnt"], 2)
            cong_avoid_ai(st, ca["cnt"], acked)
    return (st["cwnd"] - start) / rtts


def reno_growth(w_loss, rtts):
    st = {"cwnd": max(w_loss >> 1, 2), "cnt_acc": 0}
    start = st["cwnd"]
    for _ in range(rtts):
        for _ in range(max(1, st["cwnd"] // 2)):
            cong_avoid_ai(st, st["cwnd"], 2)
    return (st["cwnd"] - start) / rtts


print("| cwnd at loss | cubic, 10 RTTs | cubic, 30 RTTs | reno, 10 RTTs |")
print("|---|---|---|---|")
for w in (8, 12, 20, 40):
    print(f"| {w} | {cubic_growth(w, 10):.2f} | {cubic_growth(w, 30):.2f} | {reno_growth(w, 10):.2f} |")
