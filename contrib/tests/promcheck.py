#!/usr/bin/env python3
"""Queries a live Prometheus for every expression of bbrkit's rules and
dashboard (contrib/tests/prometheus.sh drives it).

  promcheck.py URL PHASE TIMEOUT RULES.yml DASHBOARD.json

PHASE is `pre` (before the switch), `post` (after it) or `stale` (textfile no
longer refreshed). Each rule belongs to exactly one phase (RULE_PHASES); a
rule of the file that is not listed there fails the test, so a new rule needs
a live scenario. The dashboard's expressions (targets and annotations) are
checked in `post`, with Grafana's variables replaced by values a dashboard
would send. Every expression of the phase must return at least one series
within TIMEOUT seconds, polled once a second. Expressions over metrics that
`bbrkit metrics` does not export yet (PENDING) are reported, and checked as
soon as the metric appears in Prometheus; until then Prometheus only parses
them (a syntax error fails).
"""
import json
import sys
import time
import urllib.parse
import urllib.request

import yaml

RULE_PHASES = {
    "BbrkitDefaultNotIntended": "pre",
    "BbrkitDefaultNotPersisted": "pre",
    "instance:bbrkit_tcp_retrans_ratio:rate5m": "post",
    "instance:bbrkit_default_cc_values:6h": "post",
    "BbrkitSocketsOnOldAlgorithm": "post",
    "BbrkitRetransmitsRoseAfterSwitch": "post",
    "BbrkitBbr3NotRegistered": "post",
    "BbrkitMetricsStale": "stale",
    "BbrkitTrialGuardrailTripped": "post",
    "BbrkitTrialSampleRatioMismatch": "post",
    "BbrkitPolicyFailures": "post",
    "BbrkitPolicyForeignProgram": "post",
    "instance:bbrkit_trial_effect_weight:inverse_variance": "post",
    "trial_group:bbrkit_trial_effect_weight:sum": "post",
    "trial_group:bbrkit_trial_effect_weighted_log_ratio:sum": "post",
    "trial_group:bbrkit_trial_effect_log_ratio:pooled": "post",
    "trial_group:bbrkit_trial_hosts:count": "post",
    "trial_group:bbrkit_trial_effect_weighted_log_ratio_squared:sum": "post",
    "trial_group:bbrkit_trial_effect_weight_squared:sum": "post",
    "instance:bbrkit_trial_effect_others_weight:sum": "post",
    "instance:bbrkit_trial_effect_others_weighted_log_ratio:sum": "post",
    "instance:bbrkit_trial_effect_others_weight_squared:sum": "post",
    "instance:bbrkit_trial_effect_others_tau2:dersimonian_laird": "post",
    "BbrkitTrialHostContradictsFleet": "post",
    "BbrkitTrialStale": "post",
}
# metric -> who adds it; expressions using it are checked once it exists.
PENDING = {
    "bbrkit_bpf_registered": "the bbr3 loader (issue 11)",
    # prometheus.sh attaches no policy, so the series is absent here; the
    # rule's firing and clearing are promtool's (contrib/prometheus/tests.yml)
    "bbrkit_policy_outcomes_total": "a policy attached on the scraped host (issue 33)",
    # likewise: written only for a recorded policy (promtool checks the
    # alert fires after 10 minutes and not for a 5-minute trial)
    "bbrkit_policy_foreign_programs": "a policy recorded on the scraped host (issue 33)",
}
# `bbrkit trial --textfile` (issue 23): rendered by bbrkit-trial, written by
# the live command once it exists.
PENDING.update(
    (m, "the live `bbrkit trial --textfile` (issue 23)")
    for m in (
        "bbrkit_trial_guardrail_tripped",
        "bbrkit_trial_sample_ratio_mismatch",
        "bbrkit_trial_effect_ratio",
        "bbrkit_trial_goodput_bytes_per_second",
        "bbrkit_trial_retransmit_ratio",
        "bbrkit_trial_connections_total",
        "bbrkit_trial_verdict",
        "bbrkit_trial_trusted",
    )
)
# A fleet trial (issue 35): prometheus.sh scrapes one host and runs no trial,
# so these stay pending there; the fleet rules' firing and clearing (four
# hosts or more, a look gone old) are promtool's (contrib/prometheus/tests.yml).
PENDING.update(
    (m, "a fleet trial's hosts (issue 35; promtool tests the rules)")
    for m in (
        "bbrkit_trial_effect_log_ratio",
        "bbrkit_trial_effect_log_se",
        "bbrkit_trial_look_timestamp_seconds",
        "bbrkit_trial_running",
        "bbrkit_trial_split_weight",
        "instance:bbrkit_trial_effect_weight:inverse_variance",
        "trial_group:bbrkit_trial_effect_weight:sum",
        "trial_group:bbrkit_trial_effect_weighted_log_ratio:sum",
        "trial_group:bbrkit_trial_effect_log_ratio:pooled",
        "trial_group:bbrkit_trial_hosts:count",
        "trial_group:bbrkit_trial_effect_weighted_log_ratio_squared:sum",
        "trial_group:bbrkit_trial_effect_weight_squared:sum",
        "instance:bbrkit_trial_effect_others_weight:sum",
        "instance:bbrkit_trial_effect_others_weighted_log_ratio:sum",
        "instance:bbrkit_trial_effect_others_weight_squared:sum",
        "instance:bbrkit_trial_effect_others_tau2:dersimonian_laird",
    )
)
# Grafana's variables, as the dashboard would send them.
GRAFANA_VARS = {"$__rate_interval": "30s", "$__interval": "15s", "$instance": ".+", "$trial": ".+"}


def query(url, expr):
    q = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=10) as r:
        doc = json.load(r)
    if doc["status"] != "success":
        raise SystemExit(f"FAIL prometheus: {expr}: {doc}")
    return doc["data"]["result"]


def wait_ready(url, deadline):
    """Until Prometheus answers /-/ready (it refuses connections while it starts)."""
    while True:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=5) as r:
                if r.status == 200:
                    return
        except OSError as e:
            if time.monotonic() > deadline:
                raise SystemExit(f"FAIL prometheus: not ready at {url}: {e}")
        time.sleep(0.5)


def rule_exprs(path, phase):
    names = set()
    out = []
    for g in yaml.safe_load(open(path))["groups"]:
        for r in g["rules"]:
            name = r.get("alert") or r["record"]
            names.add(name)
            if name not in RULE_PHASES:
                raise SystemExit(f"FAIL prometheus: rule {name} has no live scenario in promcheck.py")
            if RULE_PHASES[name] == phase:
                out.append((f"rule {name}", r["expr"]))
                if "alert" in r:
                    # and Prometheus's own rule manager evaluated it (pending or firing)
                    out.append((f"ALERTS of {name}", f'ALERTS{{alertname="{name}"}} and on () {r["expr"]}'))
    missing = set(RULE_PHASES) - names
    if missing:
        raise SystemExit(f"FAIL prometheus: promcheck.py lists rules the file lacks: {sorted(missing)}")
    return out


def dashboard_exprs(path):
    doc = json.load(open(path))
    out = []
    for p in doc["panels"]:
        for t in p.get("targets", []):
            out.append((f"panel '{p['title']}' {t['refId']}", t["expr"]))
    for a in doc["annotations"]["list"]:
        out.append((f"annotation '{a['name']}'", a["expr"]))
    for v in doc["templating"]["list"]:
        if v["type"] == "query":
            # label_values(METRIC, LABEL) is Grafana's; the series behind it:
            metric = v["definition"].split("(", 1)[1].split(",", 1)[0]
            out.append((f"variable ${v['name']}", metric))
    subst = []
    for what, expr in out:
        for k, val in GRAFANA_VARS.items():
            expr = expr.replace(k, val)
        if "$" in expr.replace("$1", ""):
            raise SystemExit(f"FAIL prometheus: {what}: unknown Grafana variable in {expr}")
        subst.append((what, expr))
    return subst


def main():
    url, phase, timeout, rules, dashboard = sys.argv[1:6]
    exprs = rule_exprs(rules, phase)
    if phase == "post":
        exprs += dashboard_exprs(dashboard)
    deadline = time.monotonic() + float(timeout)
    wait_ready(url, deadline)
    pending = {}
    for what, expr in exprs:
        wait = [m for m in PENDING if m in expr and not query(url, f"count({m})")]
        if wait:
            query(url, expr)  # parsed by Prometheus all the same: an error fails here
            pending[what] = wait[0]
            continue
        while True:
            res = query(url, expr)
            if res:
                sample = res[0]
                labels = {k: v for k, v in sample["metric"].items() if k not in ("job", "instance")}
                print(f"ok   prometheus {phase}: {what}: {len(res)} series, e.g. {labels} = {sample['value'][1]}")
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"FAIL prometheus {phase}: {what} returned no data within {timeout} s: {expr}")
            time.sleep(1)
    for what, metric in pending.items():
        print(f"pending prometheus {phase}: {what}: {metric} is not exported yet ({PENDING[metric]}); checked once it is")


if __name__ == "__main__":
    main()
