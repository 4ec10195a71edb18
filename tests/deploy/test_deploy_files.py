"""The deploy files, checked with standard validators and against the code they deploy.

- deploy/compose.yaml against the Compose Specification's JSON Schema (as vendored by check-jsonschema),
  and with `docker compose config` where the compose plugin is installed;
- deploy/k8s/*.yaml against the Kubernetes 1.37 JSON Schemas of kubernetes-validate (strict: unknown
  fields fail); the NATS Helm values against the permission table;
- deploy/nats/kpilot.conf: generated from shared/subjects.py (drift fails) and accepted by `nats-server -t`;
- deploy/prometheus.yml: every target a compose service that listens there; every service scraped;
- deploy/grafana/kernelpilot.json: panels well-formed, every PromQL expression parsed by promql-parser,
  every metric it names defined by shared/metrics.py, dcgm-exporter or prometheus-nats-exporter.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path

import jsonschema
import kubernetes_validate
import promql_parser
import pytest
import yaml

from services.telemetry.dcgm_scrape import FIELDS, SUMMED
from shared import metrics
from shared.natsauth import CREDS_ENV
from shared.natscluster import DEPLOY_CONF, deploy_server_conf, env_users, password_env
from shared.natsserver import find_binary
from shared.signing import SIGNING_KEY_ENV
from shared.subjects import ADMIN, SERVICE_NAMES, USERS

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
K8S_VERSION = "1.37.0"


def _load(path: Path) -> dict:  # type: ignore[type-arg]
    return yaml.safe_load(path.read_text())


def _compose_schema() -> dict:  # type: ignore[type-arg]
    return json.loads(files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json").read_text())


def test_compose_file_matches_the_compose_specification() -> None:
    compose = _load(DEPLOY / "compose.yaml")
    jsonschema.validate(compose, _compose_schema())
    services = compose["services"]
    assert {"nats-1", "nats-2", "nats-3", "prometheus", "grafana", "dcgm-exporter"} <= set(services)
    for name in SERVICE_NAMES:  # each service: its module, its own creds file, all three servers, metrics
        cmd = services[name]["command"]
        assert cmd[0] == f"services.{name}"
        urls = cmd[cmd.index("--nats") + 1].split(",")
        assert urls == ["nats://nats-1:4222", "nats://nats-2:4222", "nats://nats-3:4222"]
        assert _compose_secret_file(compose, name, CREDS_ENV) == f"./secrets/creds/{name}.json"
        assert cmd[cmd.index("--metrics-port") + 1] == "9100"
        assert (SIGNING_KEY_ENV in services[name]["environment"]) == (name == "critic")  # the critic alone
    assert _compose_secret_file(compose, "critic", SIGNING_KEY_ENV) == "./secrets/signing/critic.key"
    for i in (1, 2, 3):  # a cluster: each server names itself and routes to all three
        cmd = services[f"nats-{i}"]["command"]
        assert cmd[cmd.index("--name") + 1] == f"nats-{i}"
        assert len(cmd[cmd.index("--routes") + 1].split(",")) == 3
    provision = services["provision"]["command"]
    assert provision[provision.index("--replicas") + 1] == "3"
    assert provision[provision.index("--nats") + 1].split(",") == urls
    gpu = services["toolrunner"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert gpu["capabilities"] == ["gpu"]


def _compose_secret_file(compose: dict, service: str, env: str) -> str:  # type: ignore[type-arg]
    """The host file behind the secret that `service`'s environment variable `env` names."""
    svc = compose["services"][service]
    path = svc["environment"][env]
    assert path.startswith("/run/secrets/"), f"{service}: {env}={path} is not a mounted Compose secret"
    name = path.removeprefix("/run/secrets/")
    assert name in svc["secrets"], f"{service} does not mount the secret {name}"
    return compose["secrets"][name]["file"]


def test_a_compose_file_the_specification_forbids_fails_the_check() -> None:
    bad = _load(DEPLOY / "compose.yaml")
    bad["services"]["planner"]["restart"] = {"policy": "always"}  # restart is a string
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, _compose_schema())


def test_docker_compose_config_accepts_the_file(tmp_path: Path) -> None:
    """`docker compose config` (v2 plugin) where installed; else Debian's docker-compose 1.29 on a copy
    without the top-level `name` (a Compose-spec key v1 predates); neither needs a Docker daemon."""
    env = tmp_path / ".env"
    env.write_text("".join(f"{password_env(n)}=x\n" for n in USERS))
    docker, v1 = shutil.which("docker"), shutil.which("docker-compose")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True, check=False).returncode == 0:
        cmd = [docker, "compose", "-f", str(DEPLOY / "compose.yaml"), "--env-file", str(env), "config", "-q"]
    elif v1:
        copy = DEPLOY / ".compose-v1-check.yaml"  # beside the original: its relative paths must resolve
        copy.write_text("".join(line for line in (DEPLOY / "compose.yaml").read_text().splitlines(True)
                                if not line.startswith("name:")))
        cmd = [v1, "-f", str(copy), "--env-file", str(env), "config", "-q"]
    else:
        pytest.skip("neither `docker compose` nor docker-compose is installed (the JSON Schema check ran)")
    made_env = not (DEPLOY / ".env").exists()  # v1 opens the services' env_file; never touch a real one
    if made_env:
        (DEPLOY / ".env").write_text(env.read_text())
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    finally:
        (DEPLOY / ".compose-v1-check.yaml").unlink(missing_ok=True)
        if made_env:
            (DEPLOY / ".env").unlink()
    assert out.returncode == 0, out.stderr


def test_nats_server_config_is_generated_from_the_table_and_valid() -> None:
    assert DEPLOY_CONF.read_text() == deploy_server_conf(), (
        "deploy/nats/kpilot.conf is stale: regenerate it with "
        "`python -c 'from shared.natscluster import DEPLOY_CONF, deploy_server_conf; "
        "DEPLOY_CONF.write_text(deploy_server_conf())'`")
    env = {password_env(n): "x" for n in USERS}
    out = subprocess.run([str(find_binary()), "-t", "-c", str(DEPLOY_CONF)], capture_output=True, text=True,
                         env=env, check=False)
    assert out.returncode == 0, out.stderr + out.stdout


def _k8s_docs() -> list[dict]:  # type: ignore[type-arg]
    docs = []
    for path in sorted((DEPLOY / "k8s").glob("*.yaml")):
        if path.name != "nats-values.yaml":  # Helm values, not a manifest
            docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


def test_kubernetes_manifests_validate_against_the_schemas() -> None:
    docs = _k8s_docs()
    for doc in docs:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    by = {(d["kind"], d["metadata"]["name"]): d for d in docs}
    for name in SERVICE_NAMES:
        kind = "DaemonSet" if name == "telemetry" else "Deployment"
        pod = by[(kind, name)]["spec"]["template"]["spec"]
        (c,) = pod["containers"]
        probe = c["readinessProbe"]["exec"]["command"]
        assert probe[:5] == ["python", "-m", "services.kpilot", "probe", name]  # health.<name> of this pod
        assert _k8s_secret_file(pod, CREDS_ENV) == ("kpilot-creds", f"{name}.json")
        assert (SIGNING_KEY_ENV in {e["name"] for e in c["env"]}) == (name == "critic")  # the critic alone
        urls = c["args"][c["args"].index("--nats") + 1].split(",")
        assert urls == [f"nats://nats-{i}.nats-headless.kernelpilot.svc.cluster.local:4222" for i in range(3)]
    critic = by[("Deployment", "critic")]["spec"]["template"]["spec"]
    assert _k8s_secret_file(critic, SIGNING_KEY_ENV) == ("kpilot-signing", "critic.key")
    runner = by[("Deployment", "toolrunner")]["spec"]["template"]["spec"]
    assert runner["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1  # one runner per GPU
    telemetry = by[("DaemonSet", "telemetry")]["spec"]["template"]["spec"]
    assert telemetry["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert set(by[("Secret", "kpilot-nats")]["stringData"]) == {password_env(n) for n in USERS}
    assert set(by[("Secret", "kpilot-creds")]["stringData"]) == {f"{n}.json" for n in USERS}
    assert set(by[("Secret", "kpilot-signing")]["stringData"]) == {"critic.key", "critic.pub"}


def _k8s_secret_file(pod: dict, env: str) -> tuple[str, str]:  # type: ignore[type-arg]
    """(Secret, key) of the file that the pod's environment variable `env` names (a mounted Secret item)."""
    (c,) = pod["containers"]
    path = next(e["value"] for e in c["env"] if e["name"] == env)
    mount = next(m for m in c["volumeMounts"] if path.startswith(m["mountPath"] + "/"))
    assert mount.get("readOnly") is True
    vol = next(v for v in pod["volumes"] if v["name"] == mount["name"])["secret"]
    assert vol["defaultMode"] == 0o400, "read_creds_file and load_private_key refuse a group/other-readable file"
    item = next(i for i in vol["items"] if i["path"] == path.removeprefix(mount["mountPath"] + "/"))
    return vol["secretName"], item["key"]


def test_a_manifest_with_an_unknown_field_fails_validation() -> None:
    doc = next(d for d in _k8s_docs() if d["kind"] == "Deployment")
    doc["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}  # misspelt
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)


def test_nats_helm_values_cluster_the_servers_with_the_tables_users() -> None:
    values = _load(DEPLOY / "k8s" / "nats-values.yaml")
    cfg = values["config"]
    assert cfg["cluster"] == {"enabled": True, "replicas": 3}
    assert cfg["jetstream"]["enabled"] and cfg["jetstream"]["fileStore"]["enabled"]
    assert cfg["monitor"]["enabled"] and values["promExporter"]["enabled"]
    want = [{**u, "password": f"<< {u['password']} >>"} for u in env_users()]
    assert cfg["merge"]["authorization"]["users"] == want, "regenerate the users from shared/subjects.py"
    assert set(values["container"]["env"]) == {password_env(n) for n in USERS}


# A password in a URL (user:secret@host) or a reference to one of the servers' password variables.
_PASSWORD = re.compile(r"://[^/@\s:]+:[^/@\s]+@|KPILOT_PW_")


def _password_leaks(compose: dict, k8s: list[dict]) -> list[str]:  # type: ignore[type-arg]
    """Every command-line word and environment value of a kernelpilot container (compose and k8s) that
    holds a password; the NATS servers read theirs from env_file / the Helm values, never a command line."""
    leaks = []
    for name, svc in compose["services"].items():
        words = [*svc.get("command", []), *(svc.get("environment") or {}).values()]
        leaks += [f"compose {name}: {w}" for w in map(str, words) if _PASSWORD.search(w)]
        if name not in {"nats-1", "nats-2", "nats-3"} and svc.get("env_file"):
            leaks.append(f"compose {name}: env_file {svc['env_file']} (the servers' passwords)")
    for doc in (d for d in k8s if "template" in d.get("spec", {})):  # Deployments, DaemonSet, Job
        pod = doc["spec"]["template"]["spec"]
        for c in pod["containers"]:
            probe = c.get("readinessProbe", {}).get("exec", {}).get("command", [])
            words = [*c.get("command", []), *c.get("args", []), *probe]
            words += [str(e.get("value", "")) + str(e.get("valueFrom", "")) for e in c.get("env", [])]
            leaks += [f"k8s {doc['metadata']['name']}: {w}" for w in words if _PASSWORD.search(w)]
    return leaks


def test_no_password_on_a_command_line_or_in_a_services_environment() -> None:
    compose, k8s = _load(DEPLOY / "compose.yaml"), _k8s_docs()
    assert _password_leaks(compose, k8s) == []
    # The check catches what the deploy files did before creds files (and a k8s env var from the Secret).
    compose["services"]["planner"]["command"][-1] = "nats://planner:${KPILOT_PW_PLANNER}@nats-1:4222"
    k8s_doc = next(d for d in k8s if d["metadata"]["name"] == "verifier")
    k8s_doc["spec"]["template"]["spec"]["containers"][0]["env"].append(
        {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "kpilot-nats", "key": "KPILOT_PW_VERIFIER"}}})
    assert len(_password_leaks(compose, k8s)) == 2


def test_provisioning_connects_as_admin_and_publishes_the_critics_public_key() -> None:
    compose = _load(DEPLOY / "compose.yaml")
    cmd = compose["services"]["provision"]["command"]
    assert cmd[:2] == ["services.kpilot", "provision"]
    assert _compose_secret_file(compose, "provision", CREDS_ENV) == f"./secrets/creds/{ADMIN}.json"
    pub = cmd[cmd.index("--trust-key") + 1].removeprefix("/run/secrets/")
    assert pub in compose["services"]["provision"]["secrets"]
    assert compose["secrets"][pub]["file"] == "./secrets/signing/critic.pub"
    for name in SERVICE_NAMES:  # every service starts after provisioning (the trust key is there)
        assert compose["services"][name]["depends_on"]["provision"]["condition"] == "service_completed_successfully"
    job = next(d for d in _k8s_docs() if d["kind"] == "Job" and d["metadata"]["name"] == "provision")
    pod = job["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    assert args[:2] == ["services.kpilot", "provision"]
    assert _k8s_secret_file(pod, CREDS_ENV) == ("kpilot-creds", f"{ADMIN}.json")
    pub_path = args[args.index("--trust-key") + 1]
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if pub_path.startswith(m["mountPath"] + "/"))
    vol = next(v for v in pod["volumes"] if v["name"] == mount["name"])["secret"]
    assert vol["secretName"] == "kpilot-signing"
    assert [i["key"] for i in vol["items"]] == ["critic.pub"]  # the public key only, never critic.key


def test_prometheus_scrapes_every_service_nats_and_dcgm_where_compose_runs_them() -> None:
    prom, compose = _load(DEPLOY / "prometheus.yml"), _load(DEPLOY / "compose.yaml")
    jobs = {j["job_name"]: [t for sc in j["static_configs"] for t in sc["targets"]] for j in prom["scrape_configs"]}
    assert set(jobs) == {"kernelpilot", "nats", "dcgm"}
    assert sorted(t.split(":")[0] for t in jobs["kernelpilot"]) == sorted(SERVICE_NAMES)
    assert jobs["dcgm"] == ["dcgm-exporter:9400"]
    for target in (t for ts in jobs.values() for t in ts):
        host, port = target.split(":")
        assert host in compose["services"], target
        cmd = compose["services"][host].get("command", [])
        if "--metrics-port" in cmd:
            assert cmd[cmd.index("--metrics-port") + 1] == port
    assert not any("metric_relabel_configs" in j for j in prom["scrape_configs"])  # DCGM names kept


def _metric_names(node: object) -> set[str]:
    names: set[str] = set()
    if isinstance(node, promql_parser.VectorSelector):
        names.add(node.name)
    for attr in ("args", "expr", "lhs", "rhs", "vector_selector", "param"):
        child = getattr(node, attr, None)
        for c in child if isinstance(child, list) else [child]:
            if c is not None and not isinstance(c, (str, int, float)):
                names |= _metric_names(c)
    return names


def _ours() -> set[str]:
    names = set()
    for fam in metrics.REGISTRY.collect():
        names.add(fam.name)
        names |= {fam.name + s for s in ("_total", "_bucket", "_count", "_sum")}
    return names


def test_grafana_dashboard_panels_and_queries() -> None:
    dash = json.loads((DEPLOY / "grafana" / "kernelpilot.json").read_text())
    provisioned = _load(DEPLOY / "grafana" / "provisioning" / "datasources" / "prometheus.yaml")
    uid = provisioned["datasources"][0]["uid"]
    assert dash["uid"] and dash["schemaVersion"] >= 36
    panels = dash["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    cells: set[tuple[int, int]] = set()
    for p in panels:
        g = p["gridPos"]
        assert 0 <= g["x"] and g["x"] + g["w"] <= 24 and g["h"] > 0
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"]) for y in range(g["y"], g["y"] + g["h"])}
        assert not cells & mine, f"panel {p['title']!r} overlaps another"
        cells |= mine
    titles = " ".join(p["title"].lower() for p in panels)
    for topic in ("funnel", "verified patches", "gpu state", "service health", "bus lag"):
        assert topic in titles, topic
    known = _ours() | set(FIELDS) | {f for pair in SUMMED.values() for f, _ in pair} | {"up"}
    for p in panels:
        assert p["datasource"]["uid"] == uid and p["targets"]
        for t in p["targets"]:
            expr = t["expr"].replace("$__rate_interval", "1m")  # what Grafana substitutes
            names = _metric_names(promql_parser.parse(expr))
            assert names, expr
            unknown = {n for n in names if n not in known and not re.match(r"(gnatsd|jetstream)_", n)}
            assert not unknown, f"{p['title']}: {unknown} is not a metric anything exports"
