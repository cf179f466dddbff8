#!/usr/bin/python
# -*- coding: utf-8 -*-
"""Ansible module `bbrkit`: runs one bbrkit command with --json and returns
its JSON document. Thin on purpose: bbrkit decides, the module only maps
`changed`, check mode and failure (docs/fleet.md)."""

DOCUMENTATION = r"""
module: bbrkit
short_description: Run bbrkit enable, verify or rollback and return its JSON
description:
  - Runs C(bbrkit --json COMMAND) on the managed host and returns the JSON
    document as C(bbrkit).
  - C(changed) comes from bbrkit itself, C("changed") of C(enable) and
    C("nothing_to_roll_back") of C(rollback); C(verify) never changes anything.
  - In check mode C(enable) and C(rollback) run with C(--dry-run), so the
    host is not touched and C(changed) says what would change.
  - With C(policy), C(enable --policy FILE) attaches a per-connection policy;
    in check mode the dry run reads C(policy_content) (the text the file
    will have: the task deploying it has not written it), and the diff
    between the policy attached now (bbrkit's copy) and the new one is
    returned (shown with C(--diff)).
options:
  command:
    description: The bbrkit command.
    choices: [enable, verify, rollback]
    required: true
    type: str
  cc:
    description: Algorithm for C(enable --cc) and C(verify --cc).
    type: str
  tune:
    description: C(enable --tune).
    type: bool
    default: false
  qdisc:
    description: C(enable --qdisc) (auto, fq, fq_codel, keep).
    type: str
  force:
    description: C(enable --force).
    type: bool
    default: false
  root:
    description: C(--root DIR), an alternate filesystem root (tests).
    type: path
  policy:
    description: C(enable --policy FILE), the policy file on the host.
    type: path
  policy_content:
    description:
      - The text of C(policy) as the play deploys it; in check mode the dry
        run reads it from a temporary file, and the diff shows it.
    type: str
  cgroup:
    description: C(enable --policy ... --cgroup PATH) (default the cgroup2 root).
    type: path
  ignore_checks:
    description:
      - C(verify) check names (sysctl, available, sockets, qdisc,
        default_qdisc, boot) whose failure is a warning, not a failure.
    type: list
    elements: str
    default: []
  binary:
    description: Path or name of the bbrkit binary.
    type: str
    default: bbrkit
"""

RETURN = r"""
bbrkit:
  description: The JSON document bbrkit printed (see docs/host.md).
  returned: when bbrkit ran
  type: dict
rc:
  description: bbrkit's exit code (0 ok, 1 a problem found, 2 failure to run).
  returned: when bbrkit ran
  type: int
"""

import json
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule


def command_line(module, binary, policy=None):
    p = module.params
    cmd = [binary, "--json", p["command"]]
    if policy:
        cmd += ["--policy", policy]
        if p["cgroup"]:
            cmd += ["--cgroup", p["cgroup"]]
    if p["command"] == "enable":
        if p["cc"]:
            cmd += ["--cc", p["cc"]]
        if p["qdisc"]:
            cmd += ["--qdisc", p["qdisc"]]
        if p["tune"]:
            cmd.append("--tune")
        if p["force"]:
            cmd.append("--force")
    if p["command"] == "verify" and p["cc"]:
        cmd += ["--cc", p["cc"]]
    if p["command"] in ("enable", "rollback") and module.check_mode:
        cmd.append("--dry-run")
    if p["root"]:
        cmd += ["--root", p["root"]]
    return cmd


def changed(command, doc):
    if command == "enable":
        return bool(doc["changed"])
    if command == "rollback":
        return not doc["nothing_to_roll_back"]
    return False


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except (IOError, OSError):
        return ""


def attached_copy(module, binary, policy):
    """(path, text) of bbrkit's copy of the policy attached now on the
    cgroup, from a dry run (the real run rewrites it); text "" when none."""
    cmd = command_line(module, binary, policy)
    if "--dry-run" not in cmd:
        cmd.append("--dry-run")
    rc, out, _ = module.run_command(cmd)
    try:
        copy = (json.loads(out).get("policy") or {}).get("copy") or ""
    except ValueError:
        copy = ""
    return copy, read(copy) if copy else ""


def verify_outcome(module, doc, rc, result):
    ignored = set(module.params["ignore_checks"])
    failing = [c for c in doc["checks"] if not c["ok"]]
    fatal = [c for c in failing if c["name"] not in ignored]
    for c in failing:
        if c["name"] in ignored:
            module.warn("bbrkit verify: %s=%s (%s)" % (c["key"], c["value"], c["detail"]))
    if fatal:
        lines = ["%s=%s expected=%s (%s)" % (c["key"], c["value"], c["expected"], c["detail"]) for c in fatal]
        module.fail_json(msg="bbrkit verify failed: " + "; ".join(lines), **result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            command=dict(type="str", required=True, choices=["enable", "verify", "rollback"]),
            cc=dict(type="str"),
            tune=dict(type="bool", default=False),
            qdisc=dict(type="str"),
            force=dict(type="bool", default=False),
            root=dict(type="path"),
            policy=dict(type="path"),
            policy_content=dict(type="str"),
            cgroup=dict(type="path"),
            ignore_checks=dict(type="list", elements="str", default=[]),
            binary=dict(type="str", default="bbrkit"),
        ),
        supports_check_mode=True,
    )
    command = module.params["command"]
    binary = module.get_bin_path(module.params["binary"])
    if binary is None:
        if module.check_mode:
            # The package task ahead of this one would install it.
            module.exit_json(changed=command == "enable", msg="bbrkit is not installed yet")
        module.fail_json(msg="bbrkit: %s not found on the host" % module.params["binary"])
    if command == "verify" and module.check_mode:
        module.exit_json(changed=False, skipped=True, msg="verify skipped in check mode")

    policy = module.params["policy"]
    content = module.params["policy_content"]
    scratch = None
    if policy and module.check_mode and content is not None:
        # The file is not deployed in check mode: dry-run the text it will have.
        fd, scratch = tempfile.mkstemp(prefix="bbrkit-policy-", suffix=".toml", dir=module.tmpdir)
        with os.fdopen(fd, "w") as f:
            f.write(content)
    try:
        if policy:
            before_path, before = attached_copy(module, binary, scratch or policy)
        rc, out, err = module.run_command(command_line(module, binary, scratch or policy))
    finally:
        if scratch:
            os.unlink(scratch)
    try:
        doc = json.loads(out)
    except ValueError:
        module.fail_json(msg="bbrkit %s: exit %d: %s" % (command, rc, err.strip() or out.strip()), rc=rc)
    if "error" in doc:
        # Bad input or a failure to run (exit 2): bbrkit's one line.
        module.fail_json(msg="bbrkit %s: exit %d: %s" % (command, rc, doc["error"]["message"]),
                         rc=rc, bbrkit=doc, stderr=err)
    result = dict(changed=changed(command, doc), rc=rc, bbrkit=doc, stderr=err)
    if policy and result["changed"] and rc == 0:
        after = content if content is not None else read(policy)
        result["diff"] = dict(before=before, after=after, after_header=policy,
                              before_header=before_path or "(no policy attached)")
    if command == "verify":
        verify_outcome(module, doc, rc, result)
    elif rc != 0:
        module.fail_json(msg="bbrkit %s: exit %d: %s" % (command, rc, err.strip() or "see bbrkit"), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
