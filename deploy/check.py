#!/usr/bin/env python3
"""Checks the deployment files as far as a machine without a container
engine or a cluster can: every YAML file parses, the files agree with each
other and with config/default.toml, the Dockerfile builds with the README's
command, and the systemd unit passes `systemd-analyze verify` (when
systemd-analyze is installed).

    python3 deploy/check.py [--binary target/debug/sudokud]
    python3 deploy/check.py --sync-configmap   # after changing config/default.toml

Needs PyYAML. Exit status 0 when every check passes.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
passed, failed = 0, 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
        print(f"ok    {what}")
    else:
        failed += 1
        print(f"FAIL  {what}")


def path(*parts):
    return os.path.join(ROOT, *parts)


def read(*parts):
    with open(path(*parts), encoding="utf-8") as f:
        return f.read()


def seconds(value):
    """`45s`, `1m30s` or a bare number of seconds."""
    if isinstance(value, (int, float)):
        return value
    total, text = 0, str(value).strip()
    for amount, unit in re.findall(r"(\d+)\s*(h|min|m|s)?", text):
        total += int(amount) * {"h": 3600, "min": 60, "m": 60}.get(unit, 1)
    return total


def flatten(table, prefix=""):
    """`{"amqp": {"url": ...}}` as `{"amqp.url": ...}`."""
    flat = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def load_yaml(*parts):
    with open(path(*parts), encoding="utf-8") as f:
        return [doc for doc in yaml.safe_load_all(f) if doc is not None]


CONFIGMAP = ("deploy", "k8s", "configmap.yaml")


def sync_configmap():
    """Rewrites the ConfigMap's settings file from config/default.toml,
    keeping everything around it."""
    text = read(*CONFIGMAP)
    marker = "  sudokud.toml: |\n"
    head = text[: text.index(marker) + len(marker)]
    body = "".join(("    " + line) if line.strip() else "\n"
                   for line in read("config", "default.toml").splitlines(keepends=True))
    with open(path(*CONFIGMAP), "w", encoding="utf-8") as f:
        f.write(head + body)
    print(f"wrote {os.path.join(*CONFIGMAP)} from config/default.toml")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", help="a built sudokud, for systemd-analyze verify")
    parser.add_argument("--sync-configmap", action="store_true",
                        help="copy config/default.toml into the ConfigMap and stop")
    args = parser.parse_args()
    if args.sync_configmap:
        sync_configmap()
        sys.exit(0)

    settings = tomllib.loads(read("config", "default.toml"))
    grace = settings["worker"]["shutdown_grace_secs"]
    jobs_queue = settings["amqp"]["jobs_queue"]

    # Every YAML file parses.
    yaml_files = [os.path.relpath(os.path.join(d, f), ROOT)
                  for d, _, files in os.walk(path("deploy")) for f in files
                  if f.endswith((".yaml", ".yml"))]
    docs = {}
    for name in sorted(yaml_files):
        try:
            docs[name] = load_yaml(name)
            check(True, f"{name} parses")
        except yaml.YAMLError as e:
            check(False, f"{name} parses: {e}")
    if failed:
        return

    # compose.yaml
    compose = docs["deploy/compose.yaml"][0]
    services = compose["services"]
    broker, worker = services["rabbitmq"], services["worker"]
    check(re.fullmatch(r"rabbitmq:\d+\.\d+\.\d+-management", broker["image"]) is not None,
          f"compose: RabbitMQ image pinned to a release with the management plugin ({broker['image']})")
    check("test" in broker.get("healthcheck", {}), "compose: RabbitMQ has a healthcheck")
    check(worker.get("depends_on", {}).get("rabbitmq", {}).get("condition") == "service_healthy",
          "compose: workers wait for a healthy broker")
    check("container_name" not in worker and "ports" not in worker,
          "compose: worker has no container_name or published ports, so --scale works")
    check(seconds(worker.get("stop_grace_period", "10s")) > grace,
          f"compose: stop_grace_period above shutdown_grace_secs ({grace} s)")
    check(os.path.normpath(os.path.join("deploy", worker["build"]["context"],
                                        worker["build"]["dockerfile"])) == "deploy/Dockerfile",
          "compose: worker is built from deploy/Dockerfile")
    check("health" in worker.get("healthcheck", {}).get("test", []),
          "compose: worker healthcheck runs sudokud health")

    # Kubernetes
    kustomization = docs["deploy/k8s/kustomization.yaml"][0]
    check(all(os.path.exists(path("deploy", "k8s", r)) for r in kustomization["resources"]),
          "k8s: every kustomization resource exists")
    objects = {}
    for name, documents in docs.items():
        if name.startswith("deploy/k8s/") and not name.endswith("kustomization.yaml"):
            for doc in documents:
                objects[(doc["kind"], doc["metadata"]["name"])] = doc
    deployments = [o for (kind, _), o in objects.items() if kind == "Deployment"]
    config_maps = [o for (kind, _), o in objects.items() if kind == "ConfigMap"]
    secrets = [o for (kind, _), o in objects.items() if kind == "Secret"]
    check(len(deployments) == len(config_maps) == len(secrets) == 1,
          "k8s: one Deployment, ConfigMap and Secret")
    deployment, config_map, secret = deployments[0], config_maps[0], secrets[0]
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    check(pod.get("terminationGracePeriodSeconds", 30) > grace,
          f"k8s: terminationGracePeriodSeconds ({pod.get('terminationGracePeriodSeconds')}) "
          f"above shutdown_grace_secs ({grace})")
    resources = container.get("resources", {})
    check({"cpu", "memory"} <= set(resources.get("requests", {}))
          and {"memory"} <= set(resources.get("limits", {})),
          "k8s: worker has CPU and memory requests and a memory limit")
    probes = [container.get(p, {}).get("exec", {}).get("command", [])
              for p in ("startupProbe", "readinessProbe")]
    check(all(c[:2] == ["/usr/local/bin/sudokud", "health"] for c in probes),
          "k8s: startup and readiness probes run sudokud health")
    security = pod.get("securityContext", {})
    check(security.get("runAsNonRoot") is True and security.get("runAsUser", 0) != 0,
          "k8s: pod runs as a non-root user")
    (data_key, data), = config_map["data"].items()
    # Every key the ConfigMap sets is a key of config/default.toml with the
    # same value: a renamed or removed key would stop the worker (unknown
    # keys are errors), a changed default would be silently overridden.
    # Keys added to config/default.toml since are only a note: the
    # worker's built-in defaults cover them.
    shipped = flatten(settings)
    mapped = flatten(tomllib.loads(data))
    differing = sorted(k for k in mapped if shipped.get(k, object()) != mapped[k])
    check(not differing,
          "k8s: ConfigMap sets only keys of config/default.toml, at their defaults"
          + (f" (differs: {', '.join(differing)}; python3 deploy/check.py --sync-configmap "
             "copies the file)" if differing else ""))
    if data != read("config", "default.toml"):
        print("note  k8s: ConfigMap text differs from config/default.toml "
              f"(missing keys: {', '.join(sorted(set(shipped) - set(mapped))) or 'none'}); "
              "python3 deploy/check.py --sync-configmap copies it")
    mount = next(m for m in container["volumeMounts"]
                 if any(v["name"] == m["name"] and v.get("configMap", {}).get("name")
                        == config_map["metadata"]["name"] for v in pod["volumes"]))
    config_path = f"{mount['mountPath']}/{data_key}"
    check(config_path in container["args"] and all(config_path in c for c in probes),
          f"k8s: worker and probes read the mounted ConfigMap ({config_path})")
    url_env = next(e for e in container["env"] if e["name"] == "SUDOKUD__AMQP__URL")
    secret_ref = url_env["valueFrom"]["secretKeyRef"]
    secret_data = {**secret.get("data", {}), **secret.get("stringData", {})}
    check(secret_ref["name"] == secret["metadata"]["name"] and secret_ref["key"] in secret_data,
          "k8s: SUDOKUD__AMQP__URL comes from the Secret")
    scaled = objects.get(("ScaledObject", "sudokud-worker"))
    auth = next((o for (kind, _), o in objects.items() if kind == "TriggerAuthentication"), None)
    check(scaled is not None and auth is not None
          and scaled["apiVersion"] == auth["apiVersion"] == "keda.sh/v1alpha1",
          "k8s: KEDA ScaledObject and TriggerAuthentication (keda.sh/v1alpha1)")
    check(scaled["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"],
          "k8s: ScaledObject scales the worker Deployment")
    trigger = scaled["spec"]["triggers"][0]
    meta = trigger["metadata"]
    check(trigger["type"] == "rabbitmq" and meta.get("mode") == "QueueLength"
          and isinstance(meta.get("value"), str) and meta["value"].isdigit()
          and "queueLength" not in meta,
          "k8s: RabbitMQ trigger uses mode: QueueLength and a string value (not the removed queueLength)")
    check(meta.get("queueName") == jobs_queue,
          f"k8s: trigger watches the configured jobs queue ({jobs_queue})")
    check(trigger["authenticationRef"]["name"] == auth["metadata"]["name"],
          "k8s: trigger authenticates with the TriggerAuthentication")
    target = auth["spec"]["secretTargetRef"][0]
    check(target["parameter"] == "host" and target["name"] == secret["metadata"]["name"]
          and target["key"] in secret_data,
          "k8s: TriggerAuthentication takes host from the Secret")

    # Dockerfile
    dockerfile = read("deploy", "Dockerfile")
    instructions = re.sub(r"\\\n", " ", dockerfile)
    instructions = [l.strip() for l in instructions.splitlines()
                    if l.strip() and not l.strip().startswith("#")]
    froms = [l.split()[1] for l in instructions if l.startswith("FROM ")]
    check(len(froms) >= 2, "Dockerfile: multi-stage")
    check(all(":" in image and not image.endswith(":latest") for image in froms),
          f"Dockerfile: base images carry a version tag ({', '.join(froms)})")
    users = [l.split()[1] for l in instructions if l.startswith("USER ")]
    check(bool(users) and users[-1].split(":")[0] not in ("0", "root"),
          "Dockerfile: runs as a non-root user")
    entrypoint = next((l for l in instructions if l.startswith("ENTRYPOINT ")), "")
    try:
        exec_form = isinstance(json.loads(entrypoint[len("ENTRYPOINT "):]), list)
    except ValueError:
        exec_form = False
    check(exec_form, "Dockerfile: exec-form ENTRYPOINT, so SIGTERM reaches the worker as PID 1")
    builds = re.findall(r"cargo build[^&\n]*", " ".join(instructions))
    readme = read("README.md")
    check(len(builds) == 1 and builds[0].strip() in readme,
          f"Dockerfile: builds with the README's command ({builds[0].strip() if builds else '?'})")
    copies = [l.split()[1:-1] for l in instructions
              if l.startswith("COPY ") and "--from" not in l]
    check(all(os.path.exists(path(src)) for srcs in copies for src in srcs if src != "."),
          "Dockerfile: every COPY source exists")
    check(os.path.exists(path(".cargo", "config.toml")),
          "Dockerfile: the build context carries .cargo/config.toml (x86-64-v2)")
    cmd = next((l for l in instructions if l.startswith("CMD ")), "")
    check("/etc/sudokud/sudokud.toml" in cmd
          and "COPY config/default.toml /etc/sudokud/sudokud.toml" in instructions,
          "Dockerfile: the worker reads the settings file the image ships")

    # systemd
    unit_text = read("deploy", "systemd", "sudokud.service")
    unit = {}
    for line in unit_text.splitlines():
        if "=" in line and not line.startswith(("#", ";", "[")):
            key, value = line.split("=", 1)
            unit.setdefault(key.strip(), []).append(value.strip())
    check(seconds(unit["TimeoutStopSec"][-1]) > grace,
          f"systemd: TimeoutStopSec above shutdown_grace_secs ({grace} s)")
    check(unit.get("Restart") == ["on-failure"] and unit.get("KillSignal") == ["SIGTERM"],
          "systemd: Restart=on-failure, KillSignal=SIGTERM")
    check("sudokud run" in unit["ExecStart"][0] and "sudokud health" in unit["ExecStartPost"][0],
          "systemd: runs the worker and checks it with sudokud health")
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        print("skip  systemd-analyze is not installed: unit not verified")
        return
    binary = args.binary or shutil.which("true")
    with tempfile.TemporaryDirectory() as root:
        # A root with the system's units and the binary where the unit
        # expects it, so verify checks this unit and nothing of the host.
        os.makedirs(os.path.join(root, "usr/local/bin"))
        os.makedirs(os.path.join(root, "etc/systemd/system"))
        shutil.copytree("/lib/systemd/system", os.path.join(root, "usr/lib/systemd/system"),
                        symlinks=True)
        shutil.copy(binary, os.path.join(root, "usr/local/bin/sudokud"))
        shutil.copy(path("deploy", "systemd", "sudokud.service"),
                    os.path.join(root, "etc/systemd/system/sudokud.service"))
        verify = subprocess.run([analyze, "verify", f"--root={root}", "sudokud.service"],
                                capture_output=True, text=True)
        output = (verify.stdout + verify.stderr).strip()
        check(verify.returncode == 0 and not output,
              "systemd: systemd-analyze verify passes with no warning" + (f":\n{output}" if output else ""))
        security = subprocess.run([analyze, "security", "--offline=true", f"--root={root}",
                                   # 0-100 internally; it prints tenths: 20 is 2.0
                                   "--threshold=20", "sudokud.service"],
                                  capture_output=True, text=True)
        score = re.search(r"Overall exposure level for sudokud.service: (\S+)", security.stdout)
        check(security.returncode == 0 and score is not None,
              f"systemd: systemd-analyze security exposure at most 2 "
              f"({score.group(1) if score else security.stderr.strip()})")


if __name__ == "__main__":
    try:
        main()
    except (KeyError, IndexError, StopIteration, TypeError, OSError) as e:
        check(False, f"expected structure missing: {type(e).__name__} {e}")
    print(f"deploy: {passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
