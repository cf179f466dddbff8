#!/usr/bin/env python3
"""Writes an OpenMetrics file of a simulated fleet's trial series (the
families `bbrkit trial --textfile` exports, docs/trial.md) for
`promtool tsdb create-blocks-from openmetrics FILE DIR`, to try
`bbrkit fleet report` without a fleet, or to load a Prometheus with many
hosts.

Each host has a true effect (ln B/A) drawn around its site's (`edge`:
lossy paths, BBR helps; `dc`: clean paths, no difference), observed with
the SE a trial of 100-300 connections per arm gives, in the groups `all`,
`198.51.100.0/24` (edge hosts: a lossy remote prefix) and `203.0.113.0/24`
(every host: a clean one). Samples every 15 s over `--minutes`, ending
`--end` (Unix seconds); `--stale N` hosts end 4 minutes earlier.

  contrib/fleet/backfill.py --edge 3 --dc 2 --end $(date -d '-10 min' +%s) > fleet.om
"""

import argparse
import math
import random
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trial", default="edge-vs-dc")
    p.add_argument("--edge", type=int, default=3)
    p.add_argument("--dc", type=int, default=2)
    p.add_argument("--stale", type=int, default=0, help="of the dc hosts")
    p.add_argument("--end", type=int, required=True)
    p.add_argument("--minutes", type=int, default=15)
    p.add_argument("--seed", type=int, default=None)
    a = p.parse_args()
    seed = a.seed if a.seed is not None else random.randrange(2**32)
    print(f"backfill.py: seed {seed}", file=sys.stderr)
    rng = random.Random(seed)
    z = 1.959963984540054
    families = {}

    def add(name, labels, value, end):
        families.setdefault(name, []).append((labels, value, end))

    hosts = [(f"edge-{i + 1}:9100", "edge") for i in range(a.edge)]
    hosts += [(f"dc-{i + 1}:9100", "dc") for i in range(a.dc)]
    for n, (instance, site) in enumerate(hosts):
        stale = site == "dc" and n >= len(hosts) - a.stale
        end = a.end - (240 if stale else 0)
        base = f'instance="{instance}",job="node",trial="{a.trial}"'
        arms = [("A", "cubic"), ("B", "bbr")]
        for arm, cc in arms:
            add("bbrkit_trial_split_weight", f'{base},arm="{arm}",cc="{cc}"', 50, end)
        groups = {"all": None, "203.0.113.0/24": rng.gauss(0.0, 0.03)}
        if site == "edge":
            groups["198.51.100.0/24"] = rng.gauss(1.3, 0.35)
        lossy = groups.get("198.51.100.0/24", 0.0)
        groups["all"] = 0.6 * lossy + 0.4 * groups["203.0.113.0/24"]
        drawn = [0, 0]
        for g, truth in groups.items():
            n_arm = rng.randint(100, 300)
            # A fair 50/50 draw: B's count off A's by binomial noise.
            counts = [n_arm, max(1, n_arm + round(rng.gauss(0, math.sqrt(n_arm / 2))))]
            drawn = [drawn[0] + counts[0], drawn[1] + counts[1]]
            se = 1.6 / math.sqrt(n_arm)  # ln-median SE of a heavy-tailed goodput
            y = rng.gauss(truth, se)
            gl = f'{base},group="{g}"'
            add("bbrkit_trial_effect_log_ratio", gl, y, end)
            add("bbrkit_trial_effect_log_se", gl, se, end)
            add("bbrkit_trial_effect_ratio", gl, math.exp(y), end)
            add("bbrkit_trial_effect_ratio_ci_low", gl, math.exp(y - z * se), end)
            add("bbrkit_trial_effect_ratio_ci_high", gl, math.exp(y + z * se), end)
            add("bbrkit_trial_trusted", gl, 1, end)
            for (arm, cc), count in zip(arms, counts):
                al = f'{gl},arm="{arm}",cc="{cc}"'
                add("bbrkit_trial_connections_total", al, count, end)
                add("bbrkit_trial_units", f'{al},unit="connection"', count, end)
        for (arm, cc), count in zip(arms, drawn):
            add("bbrkit_trial_drawn_total", f'{base},arm="{arm}",cc="{cc}"', count, end)
        add("bbrkit_trial_running", base, 1, end)
        add("bbrkit_trial_look_timestamp_seconds", base, None, end)
    out = sys.stdout
    for name, series in families.items():
        for labels, value, end in series:
            for t in range(end - 60 * a.minutes, end + 1, 15):
                v = t if value is None else value
                out.write(f"{name}{{{labels}}} {v!r} {t}\n")
    out.write("# EOF\n")


if __name__ == "__main__":
    main()
