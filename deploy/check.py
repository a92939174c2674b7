#!/usr/bin/env python3
"""Checks the deployment files as far as a machine without a container
engine or a cluster can: every YAML file parses, the files agree with each
other and with config/default.toml, the Dockerfile builds with the README's
command, the systemd unit passes `systemd-analyze verify` (when
systemd-analyze is installed), the Grafana dashboard and the alert rules
name only metrics a real worker exposes (the built binary is started
against no broker and scraped), and the rules pass `promtool check rules`
and their unit tests (`promtool test rules`), or a schema check where
promtool is not installed.

    python3 deploy/check.py [--binary target/debug/sudokud]
    python3 deploy/check.py --sync-configmap   # after changing config/default.toml

Needs PyYAML. Exit status 0 when every check passes.
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.error
import urllib.request

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


def default_binary():
    """A debug build in the usual place, if there is one."""
    target = os.environ.get("CARGO_TARGET_DIR", path("target"))
    binary = os.path.join(target, "debug", "sudokud")
    return binary if os.path.exists(binary) else None


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


# Words of PromQL that are not metric names.
PROMQL_WORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on",
                "ignoring", "group_left", "group_right", "inf", "nan"}

# Metrics the alert rules may use beside the worker's own: Prometheus's
# scrape health, RabbitMQ's per-queue metrics (rabbitmq_prometheus), KEDA's
# scaler metric.
EXTERNAL_METRICS = {"up", "rabbitmq_queue_messages_ready", "rabbitmq_queue_consumers",
                    "keda_scaler_metrics_value"}


def metric_names(expr):
    """The metric names a PromQL expression selects."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)       # strings
    text = re.sub(r"\{[^}]*\}", " ", text)                  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)                # ranges
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"\$\w+", " ", text)                       # dashboard variables
    names = set()
    for match in re.finditer(r"(?<![\w.])[A-Za-z_:][A-Za-z0-9_:]*", text):
        word = match.group(0)
        if text[match.end():].lstrip().startswith("(") or word.lower() in PROMQL_WORDS:
            continue  # a function or a keyword
        names.add(word)
    return names


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    """(status, body) of a GET; None if nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, OSError):
        return None


def scrape_worker(binary):
    """Starts the worker against a broker that is not there, with its HTTP
    listener on; returns what /metrics, /livez and /readyz answer while it
    retries, then stops it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUDOKUD_")}
    env.update({
        # Port 1 refuses connections: the worker keeps retrying.
        "SUDOKUD__AMQP__URL": "amqp://guest:guest@127.0.0.1:1/%2f",
        "SUDOKUD__METRICS__LISTEN": f"127.0.0.1:{port}",
        "SUDOKUD__WORKER__THREADS": "1",
        "SUDOKUD__LOG__THROUGHPUT_SECS": "0",
    })
    with tempfile.TemporaryDirectory() as cwd:
        worker = subprocess.Popen([os.path.abspath(binary), "run"], env=env, cwd=cwd,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            answers = {}
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and worker.poll() is None:
                answers["/metrics"] = http_get(f"http://127.0.0.1:{port}/metrics")
                if answers["/metrics"] is not None:
                    break
                time.sleep(0.2)
            for path in ("/livez", "/readyz"):
                answers[path] = http_get(f"http://127.0.0.1:{port}{path}")
        finally:
            worker.send_signal(signal.SIGTERM)
            try:
                _, errors = worker.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                worker.kill()
                _, errors = worker.communicate()
    return answers, worker.returncode, errors


def exposed_metrics(text):
    """Sample names of a Prometheus text exposition, from its # TYPE lines."""
    names = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(maxsplit=3)
            if kind == "histogram":
                names.update({f"{name}_bucket", f"{name}_sum", f"{name}_count"})
            else:
                names.add(name)
    return names


DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")


def rules_schema_errors(document):
    """What the Prometheus rule file format forbids, as far as it can be
    checked without promtool."""
    errors = []
    if not isinstance(document, dict) or set(document) != {"groups"}:
        return ["the file holds exactly one key, groups"]
    names = set()
    for group in document["groups"]:
        if not isinstance(group.get("name"), str) or group["name"] in names:
            errors.append(f"group without a unique name: {group.get('name')!r}")
        names.add(group.get("name"))
        unknown = set(group) - {"name", "interval", "limit", "rules"}
        if unknown:
            errors.append(f"group {group.get('name')}: unknown keys {sorted(unknown)}")
        for rule in group.get("rules", []):
            kind = {"alert", "record"} & set(rule)
            if len(kind) != 1 or not isinstance(rule.get("expr"), str):
                errors.append(f"rule {rule}: needs one of alert or record, and an expr")
                continue
            unknown = set(rule) - {"alert", "record", "expr", "for", "keep_firing_for",
                                   "labels", "annotations"}
            if unknown:
                errors.append(f"rule {rule.get('alert')}: unknown keys {sorted(unknown)}")
            if "for" in rule and not DURATION.match(str(rule["for"])):
                errors.append(f"rule {rule.get('alert')}: bad duration {rule['for']!r}")
            for key in ("labels", "annotations"):
                if not all(isinstance(v, str) for v in rule.get(key, {}).values()):
                    errors.append(f"rule {rule.get('alert')}: {key} values must be strings")
            if expr_balance(rule["expr"]) != 0:
                errors.append(f"rule {rule.get('alert')}: unbalanced brackets in expr")
    return errors


def expr_balance(expr):
    depth = 0
    for c in re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr):
        depth += {"(": 1, "{": 1, "[": 1, ")": -1, "}": -1, "]": -1}.get(c, 0)
        if depth < 0:
            return depth
    return depth


def check_monitoring(binary, docs):
    """The dashboard, the alert rules and the metrics a real worker exposes."""
    # What a worker exposes, asked of the binary itself.
    if not binary or not os.path.exists(binary):
        check(False, "metrics: a built binary to scrape (--binary target/debug/sudokud)")
        return
    answers, status, errors = scrape_worker(binary)
    scraped = answers.get("/metrics")
    check(scraped is not None and scraped[0] == 200,
          "metrics: the worker serves GET /metrics while it retries an absent broker"
          + ("" if scraped else f" (exit {status}: {errors.strip()[-500:]})"))
    if not scraped:
        return
    exposition = scraped[1]
    exposed = exposed_metrics(exposition)
    required = {"sudokud_jobs_total", "sudokud_puzzles_total", "sudokud_job_duration_seconds_bucket",
                "sudokud_jobs_in_flight", "sudokud_broker_connected", "sudokud_broker_blocked",
                "sudokud_broker_reconnects_total", "sudokud_jobs_redelivered_total",
                "sudokud_quarantines_total", "sudokud_solver_threads", "sudokud_build_info"}
    check(required <= exposed, "metrics: the worker exposes every documented metric"
          + (f" (missing {sorted(required - exposed)})" if required - exposed else ""))
    livez, readyz = answers.get("/livez"), answers.get("/readyz")
    check(livez is not None and livez[0] == 200,
          f"metrics: /livez answers 200 while the worker retries ({livez})")
    check(readyz is not None and readyz[0] == 503 and "not connected" in readyz[1]
          and len(readyz[1].strip().splitlines()) == 1,
          f"metrics: /readyz answers 503 with one line while not connected ({readyz})")
    check(status == 0, f"metrics: the worker stopped on SIGTERM with status 0 ({status})")
    promtool = shutil.which("promtool")
    if promtool:
        linted = subprocess.run([promtool, "check", "metrics"], input=exposition,
                                capture_output=True, text=True)
        check(linted.returncode == 0,
              "metrics: promtool check metrics passes on the exposition"
              + (f": {(linted.stdout + linted.stderr).strip()}" if linted.returncode else ""))

    # The Grafana dashboard.
    try:
        dashboard = json.loads(read("deploy", "grafana", "sudokud.json"))
        check(True, "grafana: deploy/grafana/sudokud.json parses")
    except ValueError as e:
        check(False, f"grafana: deploy/grafana/sudokud.json parses: {e}")
        return
    panels = dashboard.get("panels", [])
    exprs = [(p.get("title"), t.get("expr", "")) for p in panels for t in p.get("targets", [])]
    check(bool(panels) and all(p.get("targets") for p in panels if p.get("type") != "row")
          and all(expr.strip() for _, expr in exprs),
          "grafana: every panel has queries")
    queries = list(exprs)
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable.get("type") == "query":
            query = variable.get("query")
            query = query.get("query", "") if isinstance(query, dict) else str(query)
            values = re.fullmatch(r"\s*label_values\((.*),\s*\w+\)\s*", query)
            queries.append((f"variable {variable.get('name')}", values.group(1) if values else query))
    unknown = sorted({(title, name) for title, expr in queries for name in metric_names(expr)
                      if name not in exposed})
    empty = [title for title, expr in queries if not metric_names(expr)]
    check(not unknown and not empty,
          "grafana: every query names metrics the worker exposes"
          + (f" (unknown: {unknown})" if unknown else "") + (f" (none in: {empty})" if empty else ""))
    all_exprs = " ".join(expr for _, expr in exprs)
    wanted = {
        "throughput": "rate(sudokud_jobs_total",
        "p50 latency": "histogram_quantile(0.5, sum by (le) (rate(sudokud_job_duration_seconds_bucket",
        "p99 latency": "histogram_quantile(0.99, sum by (le) (rate(sudokud_job_duration_seconds_bucket",
        "statuses": "sum by (status) (rate(sudokud_jobs_total",
        "in flight": "sudokud_jobs_in_flight",
        "connected": "sudokud_broker_connected",
        "reconnects": "sudokud_broker_reconnects_total",
    }
    missing = [what for what, text in wanted.items() if text not in all_exprs]
    check(not missing, "grafana: panels for throughput, p50 and p99 latency, statuses, in flight, "
          "connected and reconnects" + (f" (missing {missing})" if missing else ""))

    # The alert rules.
    rules_file = "deploy/prometheus/sudokud-rules.yaml"
    rules_doc = docs[rules_file][0]
    errors = rules_schema_errors(rules_doc)
    check(not errors, f"prometheus: {rules_file} follows the rule file schema"
          + (f": {errors}" if errors else ""))
    rules = [r for g in rules_doc.get("groups", []) for r in g.get("rules", [])]
    alerts = {r.get("alert") for r in rules}
    wanted_alerts = {"SudokudWorkerDown", "SudokudBacklogWithoutConsumers",
                     "SudokudBacklogWithoutWorkers", "SudokudErrorRate", "SudokudReconnectStorm"}
    check(wanted_alerts <= alerts, "prometheus: alerts for a worker down, a backlog without "
          "consumers, the error rate and a reconnect storm"
          + (f" (missing {sorted(wanted_alerts - alerts)})" if wanted_alerts - alerts else ""))
    unknown = sorted({(r.get("alert"), name) for r in rules for name in metric_names(r["expr"])
                      if name not in exposed and name not in EXTERNAL_METRICS})
    check(not unknown, "prometheus: rules name only metrics the worker exposes, up, and "
          "RabbitMQ's or KEDA's queue metrics" + (f" (unknown: {unknown})" if unknown else ""))
    if promtool:
        for args, what in ((["check", "rules", "sudokud-rules.yaml"], "promtool check rules"),
                           (["test", "rules", "sudokud-rules.test.yaml"],
                            "promtool test rules (the alerts fire, and only, when they should)"),
                           (["check", "config", "prometheus.yml"],
                            "promtool check config deploy/prometheus/prometheus.yml")):
            run = subprocess.run([promtool, *args], cwd=path("deploy", "prometheus"),
                                 capture_output=True, text=True)
            output = (run.stdout + run.stderr).strip()
            check(run.returncode == 0, f"prometheus: {what}" + (f":\n{output}" if run.returncode else ""))
    else:
        print("skip  promtool is not installed (apt-get install prometheus): "
              "rules checked against the schema only")


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
    # The longest a stop takes (docs/worker.md, Stopping): the grace period,
    # 5 s for the last acknowledgements, a 0.25 s pause, 5 s to close.
    grace = settings["worker"]["shutdown_grace_secs"] + 10.25
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
          f"compose: stop_grace_period above the longest stop ({grace} s)")
    check(os.path.normpath(os.path.join("deploy", worker["build"]["context"],
                                        worker["build"]["dockerfile"])) == "deploy/Dockerfile",
          "compose: worker is built from deploy/Dockerfile")
    listen = str(worker.get("environment", {}).get("SUDOKUD__METRICS__LISTEN", ""))
    health_test = worker.get("healthcheck", {}).get("test", [])
    check("health" in health_test and "--worker" in health_test and listen,
          "compose: worker healthcheck runs sudokud health --worker, against its own listener")
    check(listen.startswith("0.0.0.0:")
          and listen.rsplit(":", 1)[1] in [str(p) for p in worker.get("expose", [])],
          f"compose: workers serve metrics on the project network ({listen or 'not set'}), "
          "exposed, not published")
    prometheus = services.get("prometheus", {})
    check("monitoring" in prometheus.get("profiles", [])
          and any(v.split(":")[0] == "./prometheus" for v in prometheus.get("volumes", []))
          and re.fullmatch(r"prom/prometheus:v\d+\.\d+\.\d+", prometheus.get("image", "")),
          "compose: a pinned Prometheus (profile monitoring) with deploy/prometheus mounted")

    # compose-cluster.yaml
    cluster = docs["deploy/compose-cluster.yaml"][0]
    cluster_services = cluster["services"]
    nodes = {name: svc for name, svc in cluster_services.items() if name.startswith("rabbitmq-")}
    cluster_conf = cluster.get("configs", {}).get("cluster", {}).get("content", "")
    check(len(nodes) == 3 and len({n["image"] for n in nodes.values()}) == 1
          and all(n["image"] == broker["image"] for n in nodes.values()),
          "compose-cluster: three RabbitMQ nodes on compose.yaml's pinned image")
    check(all(f"rabbit@{n['hostname']}" in cluster_conf for n in nodes.values()),
          "compose-cluster: the peer discovery list names every node")
    check(all(any(v.startswith("./rabbitmq/sudokud.conf:") for v in n.get("volumes", []))
              for n in nodes.values()),
          "compose-cluster: every node reads deploy/rabbitmq/sudokud.conf")
    check(re.search(r"^cluster_partition_handling\s*=\s*pause_minority\s*$",
                    read("deploy", "rabbitmq", "sudokud.conf"), re.M) is not None,
          "rabbitmq/sudokud.conf: cluster_partition_handling = pause_minority")
    cluster_worker = cluster_services["worker"]
    cluster_env = cluster_worker.get("environment", {})
    urls = str(cluster_env.get("SUDOKUD__AMQP__URLS", ""))
    check(all(f"@{n['hostname']}:5672/" in urls for n in nodes.values()),
          "compose-cluster: the workers' amqp.urls name every node")
    check(cluster_env.get("SUDOKUD__AMQP__RESULTS_QUEUE_TYPE") == "quorum",
          "compose-cluster: results and dead-letter queues are quorum queues")
    check(all(cluster_worker.get("depends_on", {}).get(name, {}).get("condition") == "service_healthy"
              for name in nodes),
          "compose-cluster: workers wait for every node to be healthy")
    check(seconds(cluster_worker.get("stop_grace_period", "10s")) > grace,
          f"compose-cluster: stop_grace_period above the longest stop ({grace} s)")

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
          f"above the longest stop ({grace} s)")
    resources = container.get("resources", {})
    check({"cpu", "memory"} <= set(resources.get("requests", {}))
          and {"memory"} <= set(resources.get("limits", {})),
          "k8s: worker has CPU and memory requests and a memory limit")
    metrics_env = next((e.get("value", "") for e in container.get("env", [])
                        if e["name"] == "SUDOKUD__METRICS__LISTEN"), "")
    metrics_port = next((p for p in container.get("ports", []) if p.get("name") == "metrics"), {})
    check(metrics_env.startswith("0.0.0.0:")
          and metrics_env.rsplit(":", 1)[1] == str(metrics_port.get("containerPort")),
          f"k8s: the worker listens for metrics ({metrics_env or 'not set'}) on its port named metrics")
    probe_paths = {p: (container.get(p, {}).get("httpGet", {}).get("path"),
                       container.get(p, {}).get("httpGet", {}).get("port"))
                   for p in ("startupProbe", "livenessProbe", "readinessProbe")}
    check(probe_paths == {"startupProbe": ("/livez", "metrics"),
                          "livenessProbe": ("/livez", "metrics"),
                          "readinessProbe": ("/readyz", "metrics")},
          f"k8s: liveness (and startup) probe on /livez, readiness on /readyz ({probe_paths})")
    annotations = deployment["spec"]["template"]["metadata"].get("annotations", {})
    check(annotations.get("prometheus.io/scrape") == "true"
          and annotations.get("prometheus.io/port") == str(metrics_port.get("containerPort"))
          and annotations.get("prometheus.io/path") == "/metrics",
          "k8s: pods carry prometheus.io scrape annotations for the metrics port")
    monitor = objects.get(("PodMonitor", "sudokud-worker"))
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    check(monitor is not None
          and monitor["apiVersion"] == "monitoring.coreos.com/v1"
          and monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
          and [e.get("port") for e in monitor["spec"]["podMetricsEndpoints"]] == ["metrics"],
          "k8s: PodMonitor selects the worker pods and scrapes their metrics port")
    check("podmonitor.yaml" not in kustomization["resources"],
          "k8s: the PodMonitor is applied separately (clusters without the Prometheus Operator)")
    security = pod.get("securityContext", {})
    check(security.get("runAsNonRoot") is True and security.get("runAsUser", 0) != 0,
          "k8s: pod runs as a non-root user")
    (data_key, data), = config_map["data"].items()
    # The ConfigMap is config/default.toml verbatim, so it stays in step
    # with it: a key renamed or removed there would stop the worker
    # (unknown keys are errors), a changed default would be silently
    # overridden, and a key added there would be missing here.
    shipped = flatten(settings)
    mapped = flatten(tomllib.loads(data))
    differing = sorted(k for k in mapped if k in shipped and shipped[k] != mapped[k])
    missing = sorted(set(shipped) - set(mapped))
    unknown = sorted(set(mapped) - set(shipped))
    problems = [f"{what}: {', '.join(keys)}" for what, keys in
                (("differs", differing), ("missing", missing), ("not in the file", unknown)) if keys]
    if not problems and data != read("config", "default.toml"):
        problems = ["same keys and values, other text (comments)"]
    check(not problems,
          "k8s: ConfigMap is config/default.toml verbatim (every key, at its default)"
          + (f" ({'; '.join(problems)}; python3 deploy/check.py --sync-configmap "
             "copies the file)" if problems else ""))
    mount = next(m for m in container["volumeMounts"]
                 if any(v["name"] == m["name"] and v.get("configMap", {}).get("name")
                        == config_map["metadata"]["name"] for v in pod["volumes"]))
    config_path = f"{mount['mountPath']}/{data_key}"
    check(config_path in container["args"],
          f"k8s: the worker reads the mounted ConfigMap ({config_path})")
    results_type = next((e.get("value") for e in container.get("env", [])
                         if e["name"] == "SUDOKUD__AMQP__RESULTS_QUEUE_TYPE"), None)
    check(results_type == "quorum" and settings["amqp"]["queue_type"] == "quorum",
          "k8s: the jobs, results and dead-letter queues are quorum queues, which survive "
          f"the loss of a node (results_queue_type {results_type})")
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

    # The dashboard, the alert rules and the metrics they need.
    check_monitoring(args.binary or default_binary(), docs)

    # systemd
    unit_text = read("deploy", "systemd", "sudokud.service")
    unit = {}
    for line in unit_text.splitlines():
        if "=" in line and not line.startswith(("#", ";", "[")):
            key, value = line.split("=", 1)
            unit.setdefault(key.strip(), []).append(value.strip())
    check(seconds(unit["TimeoutStopSec"][-1]) > grace,
          f"systemd: TimeoutStopSec above the longest stop ({grace} s)")
    check(unit.get("Restart") == ["on-failure"] and unit.get("KillSignal") == ["SIGTERM"],
          "systemd: Restart=on-failure, KillSignal=SIGTERM")
    check("sudokud run" in unit["ExecStart"][0] and "sudokud health" in unit["ExecStartPost"][0],
          "systemd: runs the worker and checks it with sudokud health")
    check(any(re.fullmatch(r"SUDOKUD__METRICS__LISTEN=127\.0\.0\.1:\d+", e)
              for e in unit.get("Environment", [])),
          "systemd: the worker serves metrics on loopback")
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
